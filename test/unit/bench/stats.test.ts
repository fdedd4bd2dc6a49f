/** The pure parts of bench:e2e and bench:latency: percentiles, medians, latencies and the result object. */
import {
  mean,
  consumerPerfRps,
  createLatencyObserver,
  e2eResult,
  latencySummary,
  maxCommitGapMs,
  median,
  percentile,
  totalsMismatches,
  type DrainFigures,
} from '../../../bench/stats';

describe('percentile and median', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted on purpose

  it('takes the nearest rank', () => {
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 100)).toBe(100);
    expect(percentile([7], 1)).toBe(7);
    expect(percentile([1, 2, 3], 50)).toBe(2);
    expect(percentile([], 50)).toBeNaN();
  });

  it('refuses a percentile outside (0, 100]', () => {
    expect(() => percentile([1], 0)).toThrow('percentile must be in (0, 100], not 0');
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });

  it('medians odd and even counts', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('means a list, NaN when empty', () => {
    expect(mean([1, 2, 6])).toBe(3);
    expect(mean([])).toBeNaN();
  });
});

describe('the latency observer', () => {
  it('measures each record once, from its produce timestamp to the first commit covering it', () => {
    let now = 10_000;
    const obs = createLatencyObserver(() => now);
    obs.onRecords([
      { partition: 0, offset: 0, timestampMs: 9_000 },
      { partition: 0, offset: 1, timestampMs: 9_500 },
      { partition: 1, offset: 0, timestampMs: 9_800 },
    ]);
    obs.onRecords([{ partition: 0, offset: 0, timestampMs: 1 }]); // a handler re-run: the first timestamp stays
    obs.onCommitted(0, 0, 2);
    now = 12_000;
    obs.onCommitted(0, 0, 2); // a replayed commit adds nothing
    obs.onCommitted(1, 0, 1);
    obs.onCommitted(2, 0, 5); // never handed to a handler: nothing to measure
    expect(obs.latenciesMs).toEqual([1000, 500, 2200]);
    expect(latencySummary(obs.latenciesMs)).toEqual({ observed: 3, p50Ms: 1000, p99Ms: 2200, maxMs: 2200 });
  });
});

describe('the e2e result object', () => {
  const drain = (over: Partial<DrainFigures>): DrainFigures => ({
    records: 1000,
    wallMs: 1000,
    invocations: 10,
    plannerTicks: 3,
    sinkWrites: 0,
    sinkWriteUnits: 0,
    sinkIdealWriteUnits: 0,
    sinkReadUnits: 0,
    ledgerWrites: 40,
    ledgerWriteUnits: 80,
    processorSeconds: 5,
    peakRssMb: 100,
    ...over,
  });

  it('has exactly the fields the issue fixes, medians over runs and per-run ratios', () => {
    const runs = [
      {
        consumerPerfRps: 10_000,
        consumerPerfFetchRps: 20_000,
        exactlyOnce: drain({ wallMs: 2000, sinkWrites: 50, sinkWriteUnits: 100, sinkIdealWriteUnits: 50, sinkReadUnits: 25, exact: true }),
        atLeastOnce: drain({ wallMs: 500, peakRssMb: 300 }),
      },
      {
        consumerPerfRps: 5_000,
        consumerPerfFetchRps: 4_000,
        exactlyOnce: drain({ wallMs: 1000, sinkWrites: 70, sinkWriteUnits: 77, sinkIdealWriteUnits: 70, exact: true }),
        atLeastOnce: drain({ wallMs: 250 }),
      },
      {
        consumerPerfRps: 20_000,
        consumerPerfFetchRps: 40_000,
        exactlyOnce: drain({ wallMs: 4000, sinkWrites: 60, sinkWriteUnits: 66, sinkIdealWriteUnits: 66, exact: true, invocations: 12 }),
        atLeastOnce: drain({ wallMs: 1000 }),
      },
    ];
    const r = e2eResult(1000, runs);
    expect(JSON.parse(JSON.stringify(r))).toEqual({
      records: 1000,
      consumerPerfRps: 10_000,
      consumerPerfFetchRps: 20_000,
      // rps 500, 1000, 250 -> 500; ratios 0.05, 0.2, 0.0125 -> 0.05
      exactlyOnce: {
        rps: 500,
        ratio: 0.05,
        wallMs: 2000,
        invocations: 10,
        sinkWrites: 60,
        // units 100, 77, 66 per 1,000 records -> 77; per write 2, 1.1, 1.1 -> 1.1; ideal 1, 1, 1.1 -> 1
        writeUnitsPer1000: 77,
        writeUnitsPerItem: 1.1,
        idealWriteUnitsPerItem: 1,
        idealWriteUnitsPer1000: 66,
        // read units 25, 0, 0 per 1,000 records -> 0
        readUnitsPer1000: 0,
        exact: true,
      },
      // no-op rps 2000, 4000, 1000 against fetch-only 20,000, 4,000, 40,000: 0.1, 1, 0.025 -> 0.1
      atLeastOnce: { rps: 2000, ratio: 0.2, fetchRatio: 0.1, wallMs: 500, invocations: 10 },
      peakRssMb: 300,
    });
  });

  it('is exact only if every run was', () => {
    const run = (exact: boolean) => ({
      consumerPerfRps: 1,
      consumerPerfFetchRps: 1,
      exactlyOnce: drain({ exact }),
      atLeastOnce: drain({}),
    });
    expect(e2eResult(1000, [run(true), run(false)]).exactlyOnce.exact).toBe(false);
    expect(() => e2eResult(1000, [])).toThrow('no runs');
  });
});

describe('ConsumerPerformance output', () => {
  it('reads the whole-run nMsg.sec by default, and the fetch-only column when asked', () => {
    const out = [
      'start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec',
      '2026-12-01 12:00:00:000, 2026-12-01 12:00:08:000, 976.5625, 122.0703, 2000000, 250000.0000, 3000, 5000, 195.3125, 400000.0000',
    ].join('\n');
    expect(consumerPerfRps(out)).toBe(250_000);
    expect(consumerPerfRps(out, 'fetch.nMsg.sec')).toBe(400_000);
    expect(() => consumerPerfRps('WARN nothing here')).toThrow('no nMsg.sec');
    expect(() => consumerPerfRps(out.split('\n')[0] as string, 'fetch.nMsg.sec')).toThrow('no fetch.nMsg.sec');
  });
});

describe('totalsMismatches', () => {
  it('names every account whose total or count differs, or that only one side has', () => {
    expect(totalsMismatches({ a: [10, 2] }, { a: { total: 10, count: 2 } })).toEqual([]);
    expect(totalsMismatches({ a: [10, 2], b: [1, 1] }, { a: { total: 10, count: 3 }, c: { total: 1, count: 1 } })).toEqual([
      'a: produced 10/2, sink 10/3',
      'b: produced 1/1, sink nothing',
      'c: produced nothing, sink 1/1',
    ]);
  });
});

describe('maxCommitGapMs', () => {
  const looks = (rows: Array<[number, number[]]>) =>
    rows.map(([atMs, offsets]) => ({ atMs, committed: new Map(offsets.map((o, p) => [p, o])) }));

  it.each<[string, Array<[number, number[]]>, number[], number]>([
    [
      'the largest gap between commits, across partitions',
      [
        [0, [0, 0]],
        [100, [5, 2]],
        [200, [9, 2]],
        [700, [12, 8]],
        [800, [20, 9]],
      ],
      [20, 20],
      600,
    ],
    [
      'not the wait for the first commit',
      [
        [0, [0]],
        [5_000, [3]],
        [5_100, [6]],
      ],
      [10],
      100,
    ],
    [
      'not the time after the partition reached its end',
      [
        [0, [0]],
        [100, [4]],
        [200, [10]],
        [9_000, [10]],
      ],
      [10],
      100,
    ],
    [
      'a stall at the end counts until the last commit',
      [
        [0, [0]],
        [100, [4]],
        [2_100, [10]],
      ],
      [10],
      2_000,
    ],
    [
      'a partition the looks never show',
      [
        [0, []],
        [100, []],
      ],
      [10],
      0,
    ],
  ])('%s', (_what, rows, ends, expected) => {
    expect(maxCommitGapMs(looks(rows), ends)).toBe(expected);
  });
});
