/** The pure parts of `bench:latency -- --deployed`: tick gaps, the result over runs, and read units. */
import { readUnitsFor } from '../../../bench/request-counts';
import { deployedResult, maxGapMs, type DeployedPhase } from '../../../bench/stats';

const phase = (p: Partial<DeployedPhase>): DeployedPhase => ({
  records: 100,
  observed: 100,
  p50Ms: 500,
  p99Ms: 900,
  maxMs: 1000,
  handovers: 3,
  ticksPerInvocation: [20, 20, 20, 27],
  maxTickGapMs: 1000,
  maxHandoverGapMs: 1000,
  ...p,
});

describe('maxGapMs', () => {
  it('takes the largest gap between consecutive times, whatever their order', () => {
    expect(maxGapMs([3000, 1000, 2000, 4500])).toBe(1500);
    expect(maxGapMs([5])).toBe(0);
    expect(maxGapMs([])).toBe(0);
  });
});

describe('deployedResult', () => {
  it('takes medians over the runs: the fewer hand-overs and the larger hand-over gap of each run, each phase its own percentiles', () => {
    const result = deployedResult({ triggerIntervalMs: 1000, schedulePeriodMs: 20000 }, [
      { noop: phase({ p50Ms: 700, handovers: 3 }), exactlyOnce: phase({ p50Ms: 1100, handovers: 2, maxHandoverGapMs: 1200, exact: true }) },
      { noop: phase({ p50Ms: 800, maxHandoverGapMs: 2100, maxTickGapMs: 3000 }), exactlyOnce: phase({ p50Ms: 1000, exact: true }) },
      { noop: phase({ p50Ms: 750 }), exactlyOnce: phase({ p50Ms: 1300, maxHandoverGapMs: 1100, maxTickGapMs: 5000, exact: true }) },
    ]);
    expect(result).toEqual({
      triggerIntervalMs: 1000,
      schedulePeriodMs: 20000,
      handovers: 3,
      maxTickGapMs: 1200,
      noop: { p50Ms: 750, p99Ms: 900, maxMs: 1000 },
      exactlyOnce: { p50Ms: 1100, p99Ms: 900, maxMs: 1000, exact: true },
    });
  });

  it('is exact only if every run was', () => {
    const runs = [
      { noop: phase({}), exactlyOnce: phase({ exact: true }) },
      { noop: phase({}), exactlyOnce: phase({ exact: false }) },
    ];
    expect(deployedResult({ triggerIntervalMs: 1000, schedulePeriodMs: 5000 }, runs).exactlyOnce.exact).toBe(false);
    expect(() => deployedResult({ triggerIntervalMs: 1000, schedulePeriodMs: 5000 }, [])).toThrow(RangeError);
  });
});

describe('readUnitsFor', () => {
  const item = (bytes: number) => ({ pk: { S: 'x'.repeat(bytes - 2) } }); // "pk" is 2 bytes

  it('bills 4 KB per unit over the items a read returned, at least 1, half when eventually consistent', () => {
    expect(readUnitsFor([], true)).toBe(1);
    expect(readUnitsFor([item(100)], true)).toBe(1);
    expect(readUnitsFor([item(4096)], true)).toBe(1);
    expect(readUnitsFor([item(4097)], true)).toBe(2);
    expect(readUnitsFor([item(3000), item(3000)], true)).toBe(2);
    expect(readUnitsFor([item(3000), item(3000)], false)).toBe(1);
  });
});
