/** The planner's clamp: Spark Direct's rate limits, Structured Streaming's maxOffsetsPerTrigger and the time budget. */
import fc from 'fast-check';
import { ValidationError } from '../../../lib/errors';
import { clampRanges, splitRateByLag, type ClampLimits, type OffsetRange, type PartitionClampInput } from '../../../lib/offsets';

/** Partitions t/0, t/1, ... from offset 0 with the given lags. */
function fromLags(lags: number[]): PartitionClampInput[] {
  return lags.map((lag, i) => ({ key: `t/${i}`, from: 0, latest: lag }));
}

/** Offsets planned per partition, in input order. */
function budgets(partitions: PartitionClampInput[], ranges: Map<string, OffsetRange>): number[] {
  return partitions.map((p) => {
    const r = ranges.get(p.key);
    return r === undefined ? Number.NaN : r.until - r.from;
  });
}

type Row = {
  name: string;
  limits: ClampLimits;
  lags: number[];
  /** Stream-wide backpressure rate, split by lag as Spark's Direct stream does. */
  backpressureRatePerSec?: number;
  extra?: Array<Partial<PartitionClampInput>>;
  expected: number[];
};

describe('clampRanges: worked examples', () => {
  it.each<Row>([
    {
      name: 'maxRatePerPartition 100/s x 2 s, lag 1000 -> 200',
      limits: { intervalMs: 2000, maxRatePerPartition: 100, minRatePerPartition: 1 },
      lags: [1000],
      expected: [200],
    },
    {
      name: 'backpressure off, maxRate 100/s x 100 ms, lags 50/50 -> 10/10 (DirectKafkaStreamSuite)',
      limits: { intervalMs: 100, maxRatePerPartition: 100, minRatePerPartition: 1 },
      lags: [50, 50],
      expected: [10, 10],
    },
    {
      name: 'backpressure 1000/s over lags 3000/1000, 1 s -> 750/250',
      limits: { intervalMs: 1000, minRatePerPartition: 1 },
      lags: [3000, 1000],
      backpressureRatePerSec: 1000,
      expected: [750, 250],
    },
    {
      name: 'backpressure 1000/s over lags 1000/1000 capped by maxRate 100/s x 100 ms -> 10/10',
      limits: { intervalMs: 100, maxRatePerPartition: 100, minRatePerPartition: 1 },
      lags: [1000, 1000],
      backpressureRatePerSec: 1000,
      expected: [10, 10],
    },
    {
      name: 'backpressure 1000/s over lags 1000/1000 capped by maxRate 50/s x 100 ms -> 5/5',
      limits: { intervalMs: 100, maxRatePerPartition: 50, minRatePerPartition: 1 },
      lags: [1000, 1000],
      backpressureRatePerSec: 1000,
      expected: [5, 5],
    },
    {
      name: 'initialRate 500/s under maxRate 1000/s x 500 ms, lag 1000 -> 250',
      limits: { intervalMs: 500, maxRatePerPartition: 1000, minRatePerPartition: 1 },
      lags: [1000],
      backpressureRatePerSec: 500,
      expected: [250],
    },
    {
      name: 'initialRate 1000/s over maxRate 300/s x 500 ms, lag 1000 -> 150',
      limits: { intervalMs: 500, maxRatePerPartition: 300, minRatePerPartition: 1 },
      lags: [1000],
      backpressureRatePerSec: 1000,
      expected: [150],
    },
    {
      name: 'rate controller 100/s x 500 ms, lag 5000 -> 50',
      limits: { intervalMs: 500, maxRatePerPartition: 100, minRatePerPartition: 1 },
      lags: [5000],
      backpressureRatePerSec: 100,
      expected: [50],
    },
    {
      name: 'rate controller 50/s x 500 ms, lag 5000 -> 25',
      limits: { intervalMs: 500, maxRatePerPartition: 100, minRatePerPartition: 1 },
      lags: [5000],
      backpressureRatePerSec: 50,
      expected: [25],
    },
    {
      name: 'rate controller 20/s x 500 ms, lag 5000 -> 10',
      limits: { intervalMs: 500, maxRatePerPartition: 100, minRatePerPartition: 1 },
      lags: [5000],
      backpressureRatePerSec: 20,
      expected: [10],
    },
    {
      name: 'rate 1/s over lags 0/100/200/300, minRate 5/s x 1 s -> 0/5/5/5 (Spark agrees at 1 s)',
      limits: { intervalMs: 1000, maxRatePerPartition: 100, minRatePerPartition: 5 },
      lags: [0, 100, 200, 300],
      backpressureRatePerSec: 1,
      expected: [0, 5, 5, 5],
    },
    {
      // Spark's DirectKafkaStreamSuite expects 5/10/20/30 here: it floors with minRatePerPartition
      // as a raw count (5) whatever the batch length. As a rate, 5/s over 60 s allows 300.
      name: 'rate 1/s over lags 0/100/200/300, minRate 5/s x 60 s -> 0/100/200/300 (Spark: 5/10/20/30, min rate as a count)',
      limits: { intervalMs: 60_000, maxRatePerPartition: 100, minRatePerPartition: 5 },
      lags: [0, 100, 200, 300],
      backpressureRatePerSec: 1,
      expected: [0, 100, 200, 300],
    },
    {
      name: 'minRate 1/s x 200 ms rounds up: rate 3/s x 0.2 s = 0.6 -> 1',
      limits: { intervalMs: 200, maxRatePerPartition: 3, minRatePerPartition: 1 },
      lags: [100],
      expected: [1],
    },
    {
      name: 'fractional rate 2.5/s x 1 s -> 2',
      limits: { intervalMs: 1000, minRatePerPartition: 1 },
      lags: [100],
      extra: [{ pidRatePerSec: 2.5 }],
      expected: [2],
    },
    {
      name: 'maxRatePerPartition 0 means unlimited -> whole lag 1234',
      limits: { intervalMs: 1000, maxRatePerPartition: 0, minRatePerPartition: 1 },
      lags: [1234],
      expected: [1234],
    },
    { name: 'no limits -> whole lags 0/1234', limits: { intervalMs: 1000, minRatePerPartition: 1 }, lags: [0, 1234], expected: [0, 1234] },
    {
      name: 'maxOffsetsPerTrigger 10 over lags 101/11/1 -> 8/1/1',
      limits: { intervalMs: 1000, minRatePerPartition: 1, maxOffsetsPerTrigger: 10 },
      lags: [101, 11, 1],
      expected: [8, 1, 1],
    },
    {
      name: 'time budget 60 under maxRate 100/s x 1 s -> 60',
      limits: { intervalMs: 1000, maxRatePerPartition: 100, minRatePerPartition: 1 },
      lags: [1000],
      extra: [{ timeBudget: 60 }],
      expected: [60],
    },
    {
      name: 'tightest wins: rate 100, shares of 150 over 300/300 = 75/75, time budget 60 on t/0 -> 60/75',
      limits: { intervalMs: 1000, maxRatePerPartition: 100, minRatePerPartition: 1, maxOffsetsPerTrigger: 150 },
      lags: [300, 300],
      extra: [{ timeBudget: 60 }],
      expected: [60, 75],
    },
    {
      name: 'time budget alone: 7 -> 7',
      limits: { intervalMs: 1000, minRatePerPartition: 1 },
      lags: [100],
      extra: [{ timeBudget: 7 }],
      expected: [7],
    },
    {
      name: 'every budget 0 (rate 0/s, minRate 0, time budget 0) still moves 1',
      limits: { intervalMs: 1000, minRatePerPartition: 0 },
      lags: [100],
      extra: [{ pidRatePerSec: 0, timeBudget: 0 }],
      expected: [1],
    },
    {
      name: 'budget above the lag stops at latest: rate 100/s x 10 s, lag 7 -> 7',
      limits: { intervalMs: 10_000, maxRatePerPartition: 100, minRatePerPartition: 1 },
      lags: [7],
      expected: [7],
    },
  ])('$name', ({ limits, lags, backpressureRatePerSec, extra, expected }) => {
    let partitions = fromLags(lags).map((p, i) => ({ ...p, ...extra?.[i] }));
    if (backpressureRatePerSec !== undefined) {
      const rates = splitRateByLag(partitions, backpressureRatePerSec);
      partitions = partitions.map((p) => ({ ...p, pidRatePerSec: rates.get(p.key) }));
    }
    expect(budgets(partitions, clampRanges(partitions, limits))).toEqual(expected);
  });

  it('leaves until = from when the end offset is behind the next offset (truncated log)', () => {
    const ranges = clampRanges([{ key: 't/0', from: 500, latest: 400 }], { intervalMs: 1000, minRatePerPartition: 1 });
    expect(ranges.get('t/0')).toEqual({ from: 500, until: 500 });
  });

  it('handles offsets near 2^53 without overflowing past latest', () => {
    const latest = Number.MAX_SAFE_INTEGER;
    const ranges = clampRanges([{ key: 't/0', from: latest - 10, latest }], {
      intervalMs: 1000,
      minRatePerPartition: 1,
      maxRatePerPartition: 1e300,
    });
    expect(ranges.get('t/0')).toEqual({ from: latest - 10, until: latest });
  });

  it('plans KafkaMicroBatchSourceSuite "maxOffsetsPerTrigger" batch by batch: values 100..200 / 10..20 / 1, limit 10', () => {
    // Partition p holds the values base[p] + offset; Spark's test checks the values of each batch.
    const base = [100, 10, 1];
    const state: PartitionClampInput[] = [
      { key: 't/0', from: 0, latest: 101 },
      { key: 't/1', from: 0, latest: 11 },
      { key: 't/2', from: 0, latest: 1 },
    ];
    const batches: number[][] = [];
    for (let batch = 0; batch < 4; batch++) {
      const ranges = clampRanges(state, { intervalMs: 100, minRatePerPartition: 1, maxOffsetsPerTrigger: 10 });
      const values: number[] = [];
      state.forEach((p, i) => {
        const r = ranges.get(p.key) ?? { from: p.from, until: p.from };
        for (let offset = r.from; offset < r.until; offset++) values.push((base[i] ?? 0) + offset);
        p.from = r.until;
      });
      batches.push(values.sort((a, b) => a - b));
    }
    const span = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    expect(batches).toEqual([
      [1, 10, ...span(100, 107)], // 1 from smallest, 1 from middle, 8 from biggest
      [11, ...span(108, 116)], // smallest now empty, 1 more from middle, 9 more from biggest
      [12, ...span(117, 125)],
      [13, ...span(126, 134)],
    ]);
  });

  it.each<[string, ClampLimits]>([
    ['intervalMs 0', { intervalMs: 0, minRatePerPartition: 1 }],
    ['negative minRatePerPartition', { intervalMs: 1000, minRatePerPartition: -1 }],
    ['negative maxRatePerPartition', { intervalMs: 1000, minRatePerPartition: 1, maxRatePerPartition: -1 }],
    ['maxOffsetsPerTrigger 0', { intervalMs: 1000, minRatePerPartition: 1, maxOffsetsPerTrigger: 0 }],
  ])('rejects %s', (_name, limits) => {
    expect(() => clampRanges(fromLags([10]), limits)).toThrow(ValidationError);
  });

  it.each<[string, PartitionClampInput[]]>([
    ['a fractional offset', [{ key: 't/0', from: 0.5, latest: 10 }]],
    ['a negative offset', [{ key: 't/0', from: -1, latest: 10 }]],
    ['a NaN rate', [{ key: 't/0', from: 0, latest: 10, pidRatePerSec: Number.NaN }]],
    ['a fractional time budget', [{ key: 't/0', from: 0, latest: 10, timeBudget: 2.5 }]],
    [
      'a duplicate key',
      [
        { key: 't/0', from: 0, latest: 10 },
        { key: 't/0', from: 10, latest: 20 },
      ],
    ],
  ])('rejects %s', (_name, partitions) => {
    expect(() => clampRanges(partitions, { intervalMs: 1000, minRatePerPartition: 1 })).toThrow(ValidationError);
  });
});

const arbLimits: fc.Arbitrary<ClampLimits> = fc.record({
  intervalMs: fc.integer({ min: 1, max: 120_000 }),
  maxRatePerPartition: fc.option(fc.oneof(fc.constant(0), fc.double({ min: 0.01, max: 10_000, noNaN: true })), { nil: undefined }),
  minRatePerPartition: fc.oneof(fc.constant(1), fc.double({ min: 0, max: 10, noNaN: true })),
  maxOffsetsPerTrigger: fc.option(fc.integer({ min: 1, max: 5_000 }), { nil: undefined }),
});

/** A partition description; `lag` may be negative (end behind start). */
function arbPartition(maxLag: number) {
  return fc.record({
    start: fc.integer({ min: 0, max: 1e12 }),
    lag: fc.integer({ min: -20, max: maxLag }),
    pidRatePerSec: fc.option(fc.double({ min: 0, max: 10_000, noNaN: true }), { nil: undefined }),
    timeBudget: fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }),
  });
}

describe('clampRanges: properties', () => {
  it('keeps from <= until <= latest and moves every partition with lag', () => {
    fc.assert(
      fc.property(fc.array(arbPartition(100_000), { minLength: 1, maxLength: 8 }), arbLimits, (specs, limits) => {
        const partitions = specs.map((s, i) => ({
          key: `t/${i}`,
          from: s.start,
          latest: Math.max(s.start + s.lag, 0),
          pidRatePerSec: s.pidRatePerSec,
          timeBudget: s.timeBudget,
        }));
        const ranges = clampRanges(partitions, limits);
        expect(ranges.size).toBe(partitions.length);
        for (const p of partitions) {
          const r = ranges.get(p.key);
          expect(r?.from).toBe(p.from);
          const until = r?.until ?? Number.NaN;
          if (p.latest > p.from) {
            expect(until).toBeGreaterThan(p.from);
            expect(until).toBeLessThanOrEqual(p.latest);
          } else {
            expect(until).toBe(p.from);
          }
        }
      }),
    );
  });

  it('plans at most maxOffsetsPerTrigger plus one per partition whose share was rounded up', () => {
    fc.assert(
      fc.property(
        fc.array(arbPartition(100_000), { minLength: 1, maxLength: 8 }),
        arbLimits,
        fc.integer({ min: 1, max: 5_000 }),
        (specs, limits, limit) => {
          const partitions = specs.map((s, i) => ({
            key: `t/${i}`,
            from: s.start,
            latest: Math.max(s.start + s.lag, 0),
            pidRatePerSec: s.pidRatePerSec,
            timeBudget: s.timeBudget,
          }));
          const ranges = clampRanges(partitions, { ...limits, maxOffsetsPerTrigger: limit });
          const lags = partitions.map((p) => Math.max(p.latest - p.from, 0));
          const total = lags.reduce((a, b) => a + b, 0);
          const roundedUp = total > limit ? lags.filter((lag) => lag > 0 && lag * limit < total).length : 0;
          const planned = budgets(partitions, ranges).reduce((a, b) => a + b, 0);
          expect(planned).toBeLessThanOrEqual(limit + roundedUp);
        },
      ),
    );
  });

  it('over repeated runs, ranges tile each partition from its start to latest and every run moves every lagging partition', () => {
    const arbCase = fc.record({
      specs: fc.array(arbPartition(120), { minLength: 1, maxLength: 5 }),
      limits: arbLimits,
      backpressureRatePerSec: fc.option(fc.double({ min: 0, max: 500, noNaN: true }), { nil: undefined }),
      // Records appended before each of the first runs, per partition.
      appends: fc.array(fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 5, maxLength: 5 }), { maxLength: 3 }),
    });
    fc.assert(
      fc.property(arbCase, ({ specs, limits, backpressureRatePerSec, appends }) => {
        const state = specs.map((s, i) => ({
          key: `t/${i}`,
          from: s.start,
          latest: Math.max(s.start + s.lag, 0),
          timeBudget: s.timeBudget,
          pidRatePerSec: s.pidRatePerSec,
        }));
        const planned = new Map<string, OffsetRange[]>(state.map((p) => [p.key, []]));
        const appended = appends.reduce((sum, row) => sum + row.reduce((a, b) => a + b, 0), 0);
        // Each run moves every lagging partition by at least one offset.
        const maxRuns = appends.length + Math.max(...state.map((p) => Math.max(p.latest - p.from, 0))) + appended + 1;

        for (let run = 0; ; run++) {
          const arriving = appends[run];
          if (arriving !== undefined) state.forEach((p, i) => (p.latest += arriving[i] ?? 0));
          if (run >= appends.length && state.every((p) => p.latest <= p.from)) break;
          if (run >= maxRuns) throw new Error(`not caught up after ${run} runs`);
          const rates = backpressureRatePerSec === undefined ? undefined : splitRateByLag(state, backpressureRatePerSec);
          const inputs = state.map((p) => (rates === undefined ? p : { ...p, pidRatePerSec: rates.get(p.key) }));
          const ranges = clampRanges(inputs, limits);
          for (const p of state) {
            const r = ranges.get(p.key) ?? { from: p.from, until: p.from };
            // Plain checks, not expect(): this loop runs thousands of times per property.
            if (p.latest > p.from && !(r.until > r.from)) throw new Error(`${p.key} starved at ${p.from}`);
            if (r.until > r.from) planned.get(p.key)?.push(r);
            p.from = r.until;
          }
        }

        specs.forEach((s, i) => {
          const p = state[i];
          const ranges = planned.get(`t/${i}`) ?? [];
          let next = s.start;
          for (const r of ranges) {
            expect(r.from).toBe(next);
            next = r.until;
          }
          // Partitions whose end was behind their start never plan anything.
          expect(next).toBe(Math.max(s.start, p?.latest ?? Number.NaN));
        });
      }),
      { numRuns: 60 },
    );
  });
});
