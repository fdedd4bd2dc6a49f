/**
 * The emulator serves a TransactWriteItems of updates itself (infra/local/dynamodb/patches/speed.py,
 * serve_transactions_directly): the exactly-once sink's batches, simple `ADD`/`SET` updates per key
 * beside the ledger's nested group-item update. It must store what moto stores, all or nothing, and
 * leave every refusal and every other shape to moto's stack, which words it. Answers served directly
 * carry an `x-emulator-path: direct` header, which these tests read. (The suite runs the emulator
 * with MOTO_VERIFY_FAST=1, which also serves a sample of direct transactions through moto's stack
 * from the same items and compares answers and stored items.)
 */
import {
  GetItemCommand,
  PutItemCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type AttributeValue,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { recordEmulatorPaths } from '../support/emulator-paths';
import { createSinkTable, testDynamo } from '../support/env';

const client = testDynamo();
const paths = recordEmulatorPaths(client);
const lastPath = () => paths[paths.length - 1];
let sink: string;
let ledger: string;
beforeAll(async () => {
  sink = await createSinkTable(client, 'fasttx-sink');
  ledger = await createSinkTable(client, 'fasttx-ledger');
});
afterAll(() => client.destroy());

const N = (n: number): AttributeValue => ({ N: String(n) });
const S = (s: string): AttributeValue => ({ S: s });
const read = async (table: string, pk: string) =>
  (await client.send(new GetItemCommand({ TableName: table, Key: { pk: S(pk) }, ConsistentRead: true }))).Item;
const transact = (...items: TransactWriteItem[]) => client.send(new TransactWriteItemsCommand({ TransactItems: items }));

/** A sink update as the running-totals handler writes it. */
const total = (pk: string, amount: number, offset: number): TransactWriteItem => ({
  Update: {
    TableName: sink,
    Key: { pk: S(pk) },
    UpdateExpression: 'ADD #total :total, #count :count SET lastOffset = :last',
    ExpressionAttributeNames: { '#total': 'total', '#count': 'count' },
    ExpressionAttributeValues: { ':total': N(amount), ':count': N(1), ':last': N(offset) },
  },
});

/** A group-item commit as the ledger writes it: nested paths, a REMOVE, a condition on the range's progress. */
const commit = (group: string, from: number, to: number): TransactWriteItem => ({
  Update: {
    TableName: ledger,
    Key: { pk: S(group) },
    UpdateExpression: 'SET #r.#p.#progress = :to REMOVE #r.#p.#pending',
    ConditionExpression: 'attribute_exists(#r.#p) AND #r.#p.#progress = :from',
    ExpressionAttributeNames: { '#r': 'r', '#p': 'p0', '#progress': 'progress', '#pending': 'pending' },
    ExpressionAttributeValues: { ':from': N(from), ':to': N(to) },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  },
});

const seedGroup = (group: string, progress: number) =>
  client.send(
    new PutItemCommand({
      TableName: ledger,
      Item: { pk: S(group), r: { M: { p0: { M: { progress: N(progress), pending: S('batch') } } } } },
    }),
  );
const progressOf = async (group: string) => (await read(ledger, group))?.r?.M?.p0?.M;

describe('emulator: transactions of updates applied directly', () => {
  it('applies a batch of sink updates and its ledger commit directly, all of them', async () => {
    await seedGroup('g1', 0);
    await transact(commit('g1', 0, 3), total('a1', 5, 0), total('a2', 7, 1), total('a1-other', 1, 2));
    expect(lastPath()).toBe('direct');
    await transact(total('a1', 10, 3), commit('g1', 3, 4));
    expect(lastPath()).toBe('direct');
    expect(await read(sink, 'a1')).toEqual({ pk: S('a1'), total: N(15), count: N(2), lastOffset: N(3) });
    expect(await read(sink, 'a2')).toEqual({ pk: S('a2'), total: N(7), count: N(1), lastOffset: N(1) });
    expect(await progressOf('g1')).toEqual({ progress: N(4) });
  });

  it('leaves a commit whose condition fails to moto, which cancels it with its reasons, and writes nothing', async () => {
    await seedGroup('g2', 10);
    await transact(total('b1', 1, 0), commit('g2', 10, 11));
    const before = await read(sink, 'b1');
    const refused = await transact(total('b1', 100, 11), total('b2', 100, 12), commit('g2', 10, 13)).catch((e: unknown) => e);
    expect(lastPath()).toBeUndefined();
    expect(refused).toBeInstanceOf(TransactionCanceledException);
    const reasons = (refused as TransactionCanceledException).CancellationReasons?.map((r) => r.Code);
    expect(reasons).toEqual(['None', 'None', 'ConditionalCheckFailed']);
    expect((refused as TransactionCanceledException).CancellationReasons?.[2]?.Item?.r?.M?.p0?.M).toEqual({ progress: N(11) });
    // The two sink updates before the failed action were put back.
    expect(await read(sink, 'b1')).toEqual(before);
    expect(await read(sink, 'b2')).toBeUndefined();
    expect(await progressOf('g2')).toEqual({ progress: N(11) });
  });

  it('puts back a nested update applied before a later action fails', async () => {
    await seedGroup('g3', 20);
    const guarded: TransactWriteItem = {
      Update: { ...total('c1', 1, 21).Update!, ConditionExpression: 'attribute_exists(pk)' },
    };
    const refused = await transact(commit('g3', 20, 21), guarded).catch((e: unknown) => e);
    expect(lastPath()).toBeUndefined();
    expect((refused as TransactionCanceledException).CancellationReasons?.map((r) => r.Code)).toEqual(['None', 'ConditionalCheckFailed']);
    expect(await progressOf('g3')).toEqual({ progress: N(20), pending: S('batch') });
    expect(await read(sink, 'c1')).toBeUndefined();
  });

  it('leaves an ADD to a string to moto, which refuses the transaction, writing nothing', async () => {
    await client.send(new PutItemCommand({ TableName: sink, Item: { pk: S('d1'), total: S('not a number') } }));
    await seedGroup('g4', 30);
    const refused = await transact(commit('g4', 30, 31), total('d2', 1, 31), total('d1', 1, 32)).catch((e: unknown) => e);
    expect(lastPath()).toBeUndefined();
    expect(refused).toMatchObject({ name: expect.stringMatching(/TransactionCanceledException|ValidationException/) });
    expect(await read(sink, 'd1')).toEqual({ pk: S('d1'), total: S('not a number') });
    expect(await read(sink, 'd2')).toBeUndefined();
    expect(await progressOf('g4')).toEqual({ progress: N(30), pending: S('batch') });
  });

  it('leaves two actions on one item to moto, which refuses them as DynamoDB does', async () => {
    await expect(transact(total('e1', 1, 0), total('e1', 2, 1))).rejects.toMatchObject({ name: 'ValidationException' });
    expect(lastPath()).toBeUndefined();
    expect(await read(sink, 'e1')).toBeUndefined();
  });

  it.each<[string, () => TransactWriteItem[]]>([
    ['a Put among the updates', () => [total('f1', 1, 0), { Put: { TableName: sink, Item: { pk: S('f2'), total: N(2) } } }]],
    [
      'a condition check',
      () => [total('f3', 1, 0), { ConditionCheck: { TableName: sink, Key: { pk: S('f1') }, ConditionExpression: 'attribute_exists(pk)' } }],
    ],
  ])('leaves %s to moto, which applies it', async (_what, items) => {
    await transact(...items());
    expect(lastPath()).toBeUndefined();
  });

  it('leaves an unused placeholder to moto, which refuses it, writing nothing', async () => {
    const unused: TransactWriteItem = {
      Update: { ...total('h1', 1, 0).Update!, ExpressionAttributeNames: { '#total': 'total', '#count': 'count', '#x': 'x' } },
    };
    await expect(transact(total('h2', 1, 0), unused)).rejects.toMatchObject({ name: 'ValidationException' });
    expect(lastPath()).toBeUndefined();
    expect(await read(sink, 'h2')).toBeUndefined();
  });

  it('leaves a transaction asking for consumed capacity to moto', async () => {
    await client.send(new TransactWriteItemsCommand({ TransactItems: [total('i1', 1, 0)], ReturnConsumedCapacity: 'TOTAL' }));
    expect(lastPath()).toBeUndefined();
    expect(await read(sink, 'i1')).toMatchObject({ total: N(1) });
  });
});
