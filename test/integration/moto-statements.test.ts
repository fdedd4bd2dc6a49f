/**
 * The emulator serves the ledger's two PartiQL statement shapes itself (infra/local/dynamodb/
 * patches/correctness.py, serve_ledger_statements): each must answer per statement as DynamoDB documents it (DuplicateItem
 * for an INSERT of an existing item, ConditionalCheckFailed for an UPDATE whose WHERE is false or
 * whose item is missing) and change nothing when it fails; any other statement goes to moto's own
 * PartiQL. Answers served directly carry an `x-emulator-path: direct` header, which these tests read.
 * (The suite runs the emulator with MOTO_VERIFY_FAST=1, which also replays statements as PutItem and
 * UpdateItem through moto's generic code and compares.)
 */
import { BatchExecuteStatementCommand, GetItemCommand, type AttributeValue, type BatchStatementRequest } from '@aws-sdk/client-dynamodb';
import { recordEmulatorPaths } from '../support/emulator-paths';
import { createSinkTable, testDynamo } from '../support/env';

const client = testDynamo();
const paths = recordEmulatorPaths(client);
let table: string;
beforeAll(async () => {
  table = await createSinkTable(client, 'stmts');
});
afterAll(() => client.destroy());

const N = (n: number): AttributeValue => ({ N: String(n) });
const S = (s: string): AttributeValue => ({ S: s });
const run = async (...statements: BatchStatementRequest[]) =>
  (await client.send(new BatchExecuteStatementCommand({ Statements: statements }))).Responses?.map((r) => r.Error?.Code ?? 'ok');
const read = async (pk: string) =>
  (await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }))).Item;
const insert = (pk: string, total: number): BatchStatementRequest => ({
  Statement: `INSERT INTO "${table}" VALUE {'pk' : ?, 'total' : ?, '_applied:s:t:0' : ?}`,
  Parameters: [S(pk), N(total), N(10)],
});

describe('emulator: the ledger statements applied directly', () => {
  it('inserts new items and answers DuplicateItem for an existing one, leaving it as it was', async () => {
    paths.length = 0;
    expect(await run(insert('a', 1), insert('b', 2))).toEqual(['ok', 'ok']);
    expect(await run(insert('a', 99), insert('c', 3))).toEqual(['DuplicateItem', 'ok']);
    expect(await read('a')).toEqual({ pk: S('a'), total: N(1), '_applied:s:t:0': N(10) });
    expect(await read('c')).toEqual({ pk: S('c'), total: N(3), '_applied:s:t:0': N(10) });
    expect(paths).toEqual(['direct', 'direct', undefined, undefined]);
  });

  it('updates only when every condition holds, and never creates an item', async () => {
    await run(insert('u', 5));
    paths.length = 0;
    const update = (pk: string, seen: number, until: number): BatchStatementRequest => ({
      Statement: `UPDATE "${table}" SET "total" = ? SET "_applied:s:t:0" = ? REMOVE "gone" WHERE "pk" = ? AND "total" = ? AND "note" IS MISSING AND "_applied:s:t:0" < ?`,
      Parameters: [N(seen + 1), N(until), S(pk), N(seen), N(until)],
    });
    expect(await run(update('u', 4, 20))).toEqual(['ConditionalCheckFailed']); // total is 5, not 4
    expect(await run(update('u', 5, 10))).toEqual(['ConditionalCheckFailed']); // the mark is 10, not below
    expect(await run(update('nobody', 5, 20))).toEqual(['ConditionalCheckFailed']); // no such item
    expect(await read('u')).toEqual({ pk: S('u'), total: N(5), '_applied:s:t:0': N(10) });
    expect(await read('nobody')).toBeUndefined();
    expect(await run(update('u', 5, 20))).toEqual(['ok']);
    expect(await read('u')).toEqual({ pk: S('u'), total: N(6), '_applied:s:t:0': N(20) });
    expect(paths).toEqual(['direct', 'direct', 'direct', undefined, undefined, 'direct', undefined]);
  });

  it('leaves any other statement to moto', async () => {
    await run(insert('m', 7));
    paths.length = 0;
    // A bare attribute name (not quoted) is not the ledger's shape either.
    expect(await run({ Statement: `UPDATE "${table}" SET total = ? WHERE pk = ?`, Parameters: [N(8), S('m')] })).toEqual(['ok']);
    expect((await read('m'))?.total).toEqual(N(8));
    expect(paths.filter((p) => p === 'direct')).toEqual([]);
  });
});
