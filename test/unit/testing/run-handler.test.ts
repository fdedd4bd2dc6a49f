/**
 * The handler test kit: a handler run over records through the real planner and processor path on
 * the in-memory adapters. The README's own example ("Your first stream") runs in
 * test/e2e/stream-project.test.ts, as a user runs it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runningTotals } from '../../../lib/handlers/running-totals';
import type { ExactlyOnceHandler, FoldingHandler, SinkItemRef } from '../../../lib/processor/handler-api';
import { applySinkWrites, runHandler } from '../../../lib/testing';

const clickCounts: ExactlyOnceHandler = {
  mode: 'dynamodb-exactly-once',
  handle(records) {
    const perUser = new Map<string, number>();
    for (const r of records) {
      const user = r.key?.toString('utf8');
      if (!user) throw new Error(`record ${r.idempotencyKey} has no user in its key`);
      perUser.set(user, (perUser.get(user) ?? 0) + 1);
    }
    return [...perUser].map(([userId, n]) => ({
      update: { key: { userId }, expression: 'ADD clicks :n', values: { ':n': n } },
    }));
  },
};

describe('runHandler', () => {
  it('counts clicks per user exactly once, and dead-letters a click without a user', async () => {
    const clicks = [
      { key: 'ann', value: { page: '/' } },
      { key: 'bob', value: { page: '/a' }, partition: 1 },
      { key: 'ann', value: { page: '/b' } },
      { key: null, value: { page: '/c' } },
    ];
    const { sinkItems, deadLetters, progress } = await runHandler(clickCounts, clicks, { stream: { maxAttempts: 1 } });
    expect(sinkItems).toEqual(
      expect.arrayContaining([
        { userId: 'ann', clicks: 2 },
        { userId: 'bob', clicks: 1 },
      ]),
    );
    expect(sinkItems).toHaveLength(2);
    expect(deadLetters.map((d) => d.offset)).toEqual([2]);
    expect(progress).toEqual([
      { topic: 'test-topic', partition: 0, committed: 3, latest: 3 },
      { topic: 'test-topic', partition: 1, committed: 1, latest: 1 },
    ]);
  });

  it('goes through the processor: chunks, several ranges per partition, and the built-in running totals', async () => {
    const records = Array.from({ length: 50 }, (_, i) => ({ key: `acct-${i % 4}`, value: { amount: i } }));
    const res = await runHandler(runningTotals, records, { maxChunkRecords: 7, stream: { maxOffsetsPerTrigger: 20 }, sinkKey: ['pk'] });
    expect(res.invocations).toBe(3);
    const byKey = Object.fromEntries(res.sinkItems.map((i) => [i.pk, i.total]));
    const expected: Record<string, number> = {};
    for (const r of records) expected[r.key] = (expected[r.key] ?? 0) + r.value.amount;
    expect(byKey).toEqual(expected);
    expect(res.sinkWrites.length).toBeGreaterThanOrEqual(Math.ceil(50 / 7));
  });

  it('loads a handler module by path, and runs at-least-once handlers (no sink items)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kit-'));
    writeFileSync(
      join(dir, 'seen.js'),
      // The kit compiles the file as the Lambda bundle would (its own module instance): it reports through a global.
      `const seen = (globalThis.kitSeen = []); exports.handler = { mode: 'at-least-once', handle(rs) { seen.push(...rs.map((r) => r.idempotencyKey)); } };\n`,
    );
    const res = await runHandler(join(dir, 'seen.js'), [{ value: 'a' }, { value: 'b' }]);
    expect(res.sinkItems).toEqual([]);
    expect(res.progress).toEqual([{ topic: 'test-topic', partition: 0, committed: 2, latest: 2 }]);
    expect((globalThis as { kitSeen?: string[] }).kitSeen).toEqual(['test-topic/0/0', 'test-topic/0/1']);
  });
});

describe('the in-memory sink', () => {
  it('applies SET (with + and if_not_exists), ADD and REMOVE, and put and delete', () => {
    const items = applySinkWrites([
      { put: { item: { id: 'a', n: 1, gone: true } } },
      {
        update: {
          key: { id: 'a' },
          expression: 'SET n = n + :one, #f = if_not_exists(#f, :now) REMOVE gone',
          names: { '#f': 'first' },
          values: { ':one': 1, ':now': 5 },
        },
      },
      { update: { key: { id: 'b' }, expression: 'ADD n :two SET first = :now', values: { ':two': 2, ':now': 7 } } },
      { update: { key: { id: 'c' }, expression: 'ADD n :two', values: { ':two': 2 } } },
      { delete: { key: { id: 'c' } } },
    ]);
    expect(items).toEqual([
      { id: 'a', n: 2, first: 5 },
      { id: 'b', n: 2, first: 7 },
    ]);
  });

  it('refuses what it cannot evaluate, pointing to sinkWrites', () => {
    expect(() => applySinkWrites([{ update: { key: { id: 'a' }, expression: 'SET a.b = :v', values: { ':v': 1 } } }])).toThrow(
      'the in-memory sink cannot apply update expression "SET a.b = :v": attribute path a.b (only top-level attributes); compare sinkWrites instead',
    );
  });
});

describe('runHandler checks a fold as it runs', () => {
  const records = [{ key: 'u11', value: { page: '/p3' } }];
  const fold = (write: (item: SinkItemRef, n: number) => unknown, key = (k: string) => ({ pk: `${k}#/p3` })): FoldingHandler<number> => ({
    mode: 'dynamodb-exactly-once',
    fold: { map: (r) => ({ key: key(String(r.key)), value: 1 }), combine: (a, b) => a + b, write: write as never },
  });

  it('fails at the first write of another key, naming both keys (not after the range parks)', async () => {
    const wrongKey = fold((item, n) => ({ update: { key: { userId: String(item.key.pk) }, expression: 'ADD n :n', values: { ':n': n } } }));
    await expect(runHandler(wrongKey, records, { stream: { maxAttempts: 3 } })).rejects.toThrow(
      `the handler's fold.write returned an update of key {"userId":"u11#/p3"}, but was given the item {"pk":"u11#/p3"} in table test-sink`,
    );
  });

  it('fails on a write with a condition, saying why it is not allowed', async () => {
    const conditional = fold((item) => ({
      update: { ...item, expression: 'ADD n :one', condition: { expression: 'attribute_exists(pk)' } },
    }));
    await expect(runHandler(conditional, records)).rejects.toThrow(/with a condition .*: remove it/);
  });

  it("checks fold.map keys against the sink table's key attributes when the test names them", async () => {
    const byUser = fold((item, n) => ({ update: { ...item, expression: 'ADD n :n', values: { ':n': n } } }));
    await expect(runHandler(byUser, records, { sinkKey: ['userId'] })).rejects.toThrow(
      `the handler's fold.map returned the item key {"pk":"u11#/p3"} for record test-topic/0/0, but the sink table's key is userId`,
    );
    await expect(runHandler(byUser, records, { sinkKey: ['pk'] })).resolves.toMatchObject({ sinkItems: [{ pk: 'u11#/p3', n: 1 }] });
  });
});
