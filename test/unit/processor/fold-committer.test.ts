/**
 * Folded exactly-once batches on the in-memory ledger and reader: one write per item per batch,
 * marked writes in groups, and exactly-once totals through kills at every step, duplicate and
 * zombie processors.
 */
import fc from 'fast-check';
import type { StreamConfigInput } from '../../../lib/config/schema';
import type { FoldBudget } from '../../../lib/processor/fold-committer';
import type { ProcessResult } from '../../../lib/processor/process-range';
import { processorFixture } from '../../support/processor-fixture';

type Setup = { records: number; keys: number; stream?: Partial<StreamConfigInput>; poisonEvery?: number };

async function setup(opts: Setup) {
  const poison = (i: number) => opts.poisonEvery !== undefined && i % opts.poisonEvery === opts.poisonEvery - 1;
  const t = await processorFixture({
    records: Array.from({ length: opts.records }, (_, i) => ({
      key: `acct-${i % opts.keys}`,
      value: poison(i) ? 'not json' : JSON.stringify({ amount: i + 1 }),
    })),
    stream: { maxAttempts: 50, ...opts.stream },
    deps: { retryBaseMs: 1 },
  });
  const { ledger } = t;
  /** What the sink holds per key after every applied write: total and count. */
  const sink = () => {
    const out: Record<string, { total: number; count: number }> = {};
    for (const w of ledger.store('s').sinkWrites) {
      if (!('update' in w)) continue;
      const acc = (out[String(w.update.key.pk)] ??= { total: 0, count: 0 });
      acc.total += Number(w.update.values?.[':total']);
      acc.count += Number(w.update.values?.[':count']);
    }
    return out;
  };
  const expected = () => {
    const out: Record<string, { total: number; count: number }> = {};
    for (let i = 0; i < opts.records; i++) {
      if (poison(i)) continue;
      const acc = (out[`acct-${i % opts.keys}`] ??= { total: 0, count: 0 });
      acc.total += i + 1;
      acc.count += 1;
    }
    return out;
  };
  return { ...t, sink, expected };
}

const marked = (extra: Partial<FoldBudget> = {}): Partial<FoldBudget> => ({ atomicMaxWrites: 0, writeGroupSize: 2, ...extra });

describe('folded exactly-once batches', () => {
  it('write-behind (continuous segments): a batch ends before the item that would take it past one transaction', async () => {
    const t = await setup({ records: 90, keys: 30 });
    const steps: string[] = [];
    // Ten items to a batch at most: each batch one commit with its writes, never the marked path.
    const res = await t.run({ fold: { writeBehind: true, atomicMaxWrites: 10, maxRecords: 1 }, afterStep: (s) => void steps.push(s) });
    expect(res).toMatchObject({ progress: 90, records: 90 });
    // No batch recorded and written in marked groups; only the range's last, which its completion commits (a bounded range's end).
    expect(steps.filter((s) => s === 'batch-begun')).toEqual([]);
    expect(steps.filter((s) => s === 'sink-written').length).toBeLessThanOrEqual(1);
    const writes = t.ledger.store('s').sinkWrites;
    // 30 keys over 90 records, at most 10 items a batch: at least 9 batches of distinct items each.
    expect(writes.length).toBeGreaterThanOrEqual(90 / 10);
    expect(t.sink()).toEqual(t.expected());
  });

  it('writes each item once for the whole range, atomically with its progress when the writes fit one commit', async () => {
    const t = await setup({ records: 60, keys: 3 });
    const res = await t.run();
    expect(res).toMatchObject({ status: 'done', records: 60, progress: 60 });
    expect(t.ledger.store('s').sinkWrites).toHaveLength(3);
    expect(t.sink()).toEqual(t.expected());
  });

  it('writes a batch that ends the range in marked groups without recording it, and the completion advances progress', async () => {
    const t = await setup({ records: 60, keys: 7 });
    const steps: string[] = [];
    const res = await t.run({ fold: marked(), afterStep: (s) => void steps.push(s) });
    expect(res).toMatchObject({ status: 'done', records: 60 });
    expect(t.ledger.store('s').sinkWrites).toHaveLength(7);
    // No batch ends past the range's end: nothing to record before writing, nothing to commit after.
    expect(steps.filter((s) => s === 'batch-begun' || s === 'committed')).toEqual([]);
    expect(steps.filter((s) => s === 'sink-written')).toHaveLength(4); // 7 writes in groups of 2
    expect(t.sink()).toEqual(t.expected());
    expect(t.rangeItem()).toMatchObject({ status: 'done', progress: 60 });
    expect(t.rangeItem().pendingUntil).toBeUndefined();
  });

  it('after a kill between the writes of the batch that ends the range, the next holder counts every record once, whatever its budget', async () => {
    const t = await setup({ records: 60, keys: 9 });
    let groups = 0;
    const kill = {
      fold: marked({ writeConcurrency: 1 }),
      afterStep: (s: string) => {
        if (s === 'sink-written' && ++groups === 2) throw new Error('killed between two writes of the last batch');
      },
    };
    await expect(t.run(kill)).rejects.toThrow('killed between two writes');
    expect(t.rangeItem()).toMatchObject({ progress: 0, status: 'failed' });
    expect(t.ledger.store('s').sinkWrites).toHaveLength(4);
    // Small batches that could be written atomically without marks: a second holder marks them all.
    t.advance(1000);
    const res = await t.run({ fold: { atomicMaxWrites: 98, maxRecords: 5, writeGroupSize: 3 } });
    expect(res).toMatchObject({ status: 'done' });
    expect(t.sink()).toEqual(t.expected());
  });

  it('ends a batch at the item budget and at the record budget', async () => {
    const byItems = await setup({ records: 40, keys: 10 });
    await byItems.run({ fold: marked({ maxItems: 4 }) });
    expect(byItems.sink()).toEqual(byItems.expected());
    expect(byItems.ledger.store('s').sinkWrites.length).toBeGreaterThan(10);
    const byRecords = await setup({ records: 40, keys: 2 });
    const steps: string[] = [];
    await byRecords.run({ fold: marked({ maxRecords: 8 }), afterStep: (s) => void steps.push(s) });
    // Batches of 8 records: the first four are recorded, the last ends the range.
    expect(steps.filter((s) => s === 'batch-begun')).toHaveLength(4);
    expect(byRecords.sink()).toEqual(byRecords.expected());
  });

  it('finishes exactly the pending batch after a kill between its writes, skipping the items that had it', async () => {
    const t = await setup({ records: 60, keys: 9 });
    let groups = 0;
    // Batches of 30 records, ended at a chunk's end (chunks of 4): the first, [0, 32), is recorded before its writes.
    const kill = {
      fold: marked({ writeConcurrency: 1, maxRecords: 30 }),
      afterStep: (s: string) => {
        if (s === 'sink-written' && ++groups === 2) throw new Error('killed between two writes of one batch');
      },
    };
    await expect(t.run(kill)).rejects.toThrow('killed between two writes');
    expect(t.rangeItem()).toMatchObject({ progress: 0, pendingUntil: 32, status: 'failed' });
    expect(t.ledger.store('s').sinkWrites).toHaveLength(4);
    // The next holder uses a smaller budget: it must still finish the pending batch as it was.
    t.advance(1000);
    const steps: Array<{ step: string; to: number }> = [];
    const res = await t.run({
      fold: marked({ maxRecords: 5, writeGroupSize: 3 }),
      afterStep: (step, d) => void steps.push({ step, ...d }),
    });
    expect(res).toMatchObject({ status: 'done' });
    expect(steps.find((s) => s.step === 'committed')).toMatchObject({ to: 32 });
    expect(t.sink()).toEqual(t.expected());
  });

  it('lets a zombie that lost its lease mid-batch change nothing: its remaining writes skip and its commit is refused', async () => {
    const t = await setup({ records: 60, keys: 9 });
    let release!: () => void;
    const parked = new Promise<void>((r) => (release = r));
    let groups = 0;
    const zombie = t.run({
      leaseToken: 'zombie',
      fold: marked(),
      afterStep: async (s) => {
        if (s === 'sink-written' && ++groups === 1) await parked;
      },
    });
    await new Promise((r) => setImmediate(r));
    t.advance(t.stream.processor.leaseMs + 1);
    const owner = await t.run({ leaseToken: 'owner', fold: marked({ writeGroupSize: 4 }) });
    expect(owner.status).toBe('done');
    release();
    expect((await zombie).status).toBe('lease-lost');
    expect(t.sink()).toEqual(t.expected());
  });

  it('dead-letters a rejected record: the batch ends before it, and the records after it count once', async () => {
    const t = await setup({ records: 30, keys: 5, poisonEvery: 10, stream: { maxAttempts: 2 } });
    const res = await t.run({ fold: marked() });
    expect(res).toMatchObject({ status: 'done', deadLetters: 3, records: 27 });
    expect(t.ledger.store('s').deadLetters.map((d) => d.offset)).toEqual([9, 19, 29]);
    expect(t.sink()).toEqual(t.expected());
  });

  it('commits folds chunk by chunk on a stream that splits partitions into parallel ranges', async () => {
    const t = await setup({ records: 12, keys: 3, stream: { split: { orderInsensitive: true, maxRangeSize: 100 } } });
    const steps: string[] = [];
    await t.run({ fold: marked(), afterStep: (s) => void steps.push(s) });
    expect(steps).not.toContain('batch-begun');
    expect(steps.filter((s) => s === 'committed')).toHaveLength(3);
    expect(t.sink()).toEqual(t.expected());
  });

  it('counts every record once through any sequence of kills, duplicates and budgets (property)', async () => {
    const steps = ['leased', 'handled', 'batch-begun', 'sink-written', 'committed', 'completed'] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          records: fc.integer({ min: 1, max: 70 }),
          keys: fc.integer({ min: 1, max: 12 }),
          poisonEvery: fc.option(fc.integer({ min: 3, max: 20 }), { nil: undefined }),
          kills: fc.array(fc.record({ step: fc.constantFrom(...steps), nth: fc.integer({ min: 1, max: 4 }) }), { maxLength: 6 }),
          budgets: fc.array(
            fc.record({
              maxItems: fc.integer({ min: 1, max: 15 }),
              maxRecords: fc.integer({ min: 1, max: 80 }),
              atomicMaxWrites: fc.constantFrom(0, 2, 98),
              writeGroupSize: fc.integer({ min: 1, max: 4 }),
              writeConcurrency: fc.integer({ min: 1, max: 3 }),
            }),
            { minLength: 1, maxLength: 4 },
          ),
          duplicate: fc.boolean(),
        }),
        async (p) => {
          const t = await setup({ records: p.records, keys: p.keys, poisonEvery: p.poisonEvery });
          let last: ProcessResult | undefined;
          for (let i = 0; i < 40 && t.rangeItem().status !== 'done'; i++) {
            const kill = p.kills[i];
            let seen = 0;
            const budget = p.budgets[i % p.budgets.length];
            const attempt = t.run({
              leaseToken: `p${i}`,
              fold: budget,
              afterStep: (s) => {
                if (kill && s === kill.step && ++seen === kill.nth) throw new Error(`killed at ${s}`);
              },
            });
            const twin = p.duplicate && i === 0 ? t.run({ leaseToken: 'twin', fold: budget }) : undefined;
            last = await attempt.catch(() => undefined);
            await twin?.catch(() => undefined);
            t.advance(t.stream.processor.leaseMs + 1);
          }
          expect(t.rangeItem().status).toBe('done');
          expect(t.sink()).toEqual(t.expected());
          void last;
        },
      ),
      {
        numRuns: 150,
        // Found by this property: the first holder commits a batch, gives its attempt back when it is
        // killed after writing the final batch's items, and the next must still mark its writes.
        examples: [
          [
            {
              records: 11,
              keys: 1,
              poisonEvery: 6,
              kills: [{ step: 'sink-written', nth: 1 }],
              budgets: [
                { maxItems: 2, maxRecords: 3, atomicMaxWrites: 98, writeGroupSize: 1, writeConcurrency: 1 },
                { maxItems: 1, maxRecords: 1, atomicMaxWrites: 98, writeGroupSize: 1, writeConcurrency: 1 },
                { maxItems: 1, maxRecords: 1, atomicMaxWrites: 0, writeGroupSize: 1, writeConcurrency: 1 },
              ],
              duplicate: false,
            },
          ],
        ],
      },
    );
  });
});
