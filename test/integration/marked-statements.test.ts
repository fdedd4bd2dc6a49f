/**
 * A marked write sent as a PartiQL statement leaves the item as its UpdateItem would have: random
 * updates of the statement subset (and some outside it) on random items, applied by the ledger on one
 * table and as the plain conditional UpdateItem on another, must give the same items and outcomes.
 * The UpdateItem side is DynamoDB's own evaluation of the expression (the emulator's), the oracle.
 */
import fc from 'fast-check';
import { ConditionalCheckFailedException, GetItemCommand, PutItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { markedSinkAction } from '../../lib/ledger/sink.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import type { SinkMark, SinkWrite } from '../../lib/ports/sink-write';
import { createSinkTable, testDynamo, uniqueName } from '../support/env';

const client = testDynamo();
const doc = DynamoDBDocumentClient.from(client);
afterAll(() => client.destroy());

const NAMES = { '#a': 'a', '#b': 'b', '#c': 'c', '#l': 'l' };
const TEMPLATES = [
  'ADD #a :n',
  'ADD #a :n SET #b = :s',
  'SET #a = if_not_exists(#a, :z) + :n',
  'SET #b = :s REMOVE #c',
  'SET #a = #c',
  'SET #l = list_append(if_not_exists(#l, :e), :lv)',
  'SET #a = #a - :n',
  'SET #a.#b = :s', // outside the subset: always UpdateItem
] as const;
const VALUES_OF: Record<(typeof TEMPLATES)[number], string[]> = {
  'ADD #a :n': [':n'],
  'ADD #a :n SET #b = :s': [':n', ':s'],
  'SET #a = if_not_exists(#a, :z) + :n': [':z', ':n'],
  'SET #b = :s REMOVE #c': [':s'],
  'SET #a = #c': [],
  'SET #l = list_append(if_not_exists(#l, :e), :lv)': [':e', ':lv'],
  'SET #a = #a - :n': [':n'],
  'SET #a.#b = :s': [':s'],
};

const number = fc.oneof(
  { arbitrary: fc.integer({ min: -1000, max: 1000 }).map(String), weight: 8 },
  { arbitrary: fc.constantFrom('1.5', '12345678901234567890123'), weight: 1 },
);
const scalar: fc.Arbitrary<AttributeValue> = fc.oneof(
  { arbitrary: number.map((n): AttributeValue => ({ N: n })), weight: 4 },
  { arbitrary: fc.string({ minLength: 1, maxLength: 4 }).map((s): AttributeValue => ({ S: s })), weight: 1 },
);
const image = fc.option(
  fc.record(
    {
      a: scalar,
      b: fc.string({ minLength: 1, maxLength: 4 }).map((s): AttributeValue => ({ S: s })),
      c: scalar,
      l: fc.array(scalar, { maxLength: 2 }).map((l): AttributeValue => ({ L: l })),
      mark: fc.constantFrom(50, 100, 150).map((n): AttributeValue => ({ N: String(n) })),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);
const write = fc.record({
  template: fc.constantFrom(...TEMPLATES),
  image,
  n: number,
  s: fc.string({ minLength: 1, maxLength: 4 }),
  z: number,
});

describe('marked writes as statements (oracle: the same write as an UpdateItem)', () => {
  let ledgerTable: string;
  let viaLedger: string;
  let viaUpdateItem: string;
  beforeAll(async () => {
    ledgerTable = uniqueName('ledger');
    await ensureLedgerTable(client, ledgerTable);
    viaLedger = await createSinkTable(client, 'stmt-ledger');
    viaUpdateItem = await createSinkTable(client, 'stmt-oracle');
  });

  it('gives the same items and outcomes for random updates on random items', async () => {
    const statements = { sent: 0 };
    const ledgerClient = testDynamo();
    ledgerClient.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'BatchExecuteStatementCommand')
          statements.sent += (args.input as { Statements: unknown[] }).Statements.length;
        return next(args);
      },
      { step: 'initialize', name: 'countStatements' },
    );
    const ledger = createDynamoLedger({ client: ledgerClient, tableName: ledgerTable });
    const mark: SinkMark = { stream: 's', topic: 't', partition: 0, until: 100 };
    const markName = '_applied:s:t:0';
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(write, { minLength: 1, maxLength: 6 }), async (ws) => {
          run++;
          const writesFor = (table: string) =>
            ws.map((w, i): SinkWrite => {
              const values: Record<string, unknown> = { ':n': Number(w.n), ':s': w.s, ':z': Number(w.z), ':e': [], ':lv': ['x'] };
              const expression = w.template;
              return {
                update: {
                  table,
                  key: { pk: `r${run}-${i}` },
                  expression,
                  names: Object.fromEntries(Object.entries(NAMES).filter(([k]) => expression.includes(k))),
                  values: Object.fromEntries(VALUES_OF[w.template].map((k) => [k, values[k]])),
                },
              };
            });
          for (const table of [viaLedger, viaUpdateItem]) {
            for (const [i, w] of ws.entries()) {
              if (!w.image) continue;
              const { mark: m, ...rest } = w.image;
              const item = { pk: { S: `r${run}-${i}` }, ...rest, ...(m ? { [markName]: m } : {}) };
              await client.send(new PutItemCommand({ TableName: table, Item: item }));
            }
          }
          // The oracle: each write as the plain conditional UpdateItem.
          const expected: string[] = [];
          for (const w of writesFor(viaUpdateItem)) {
            try {
              await doc.send(new UpdateCommand(markedSinkAction(w, mark).Update as ConstructorParameters<typeof UpdateCommand>[0]));
              expected.push('applied');
            } catch (err) {
              expected.push(err instanceof ConditionalCheckFailedException ? 'skipped' : 'refused');
            }
          }
          // A batch DynamoDB refuses part of is refused: compare only when the oracle refused nothing.
          if (expected.includes('refused')) {
            await expect(ledger.applyMarkedSinkWrites({ mark, writes: writesFor(viaLedger) })).rejects.toThrow();
            return;
          }
          const outcome = await ledger.applyMarkedSinkWrites({ mark, writes: writesFor(viaLedger) });
          expect(outcome).toEqual({
            applied: expected.filter((e) => e === 'applied').length,
            skipped: expected.filter((e) => e === 'skipped').length,
          });
          for (const i of ws.keys()) {
            const read = (table: string) =>
              client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: `r${run}-${i}` } }, ConsistentRead: true }));
            const [mine, theirs] = await Promise.all([read(viaLedger), read(viaUpdateItem)]);
            expect([ws[i]!.template, mine.Item]).toEqual([ws[i]!.template, theirs.Item]);
          }
        }),
        { numRuns: 150 },
      );
      // The property exercised the statement path, not only UpdateItem.
      expect(statements.sent).toBeGreaterThan(75);
    } finally {
      ledgerClient.destroy();
    }
  });
});
