import { continuousMonthCost, PRICES, SECONDS_PER_MONTH } from '../../../bench/cost';

const base = {
  segments: 2,
  segmentMs: 600_000,
  handoverLeadMs: 2_000,
  memoryGb: 0.25,
  gbSecond: PRICES.lambdaGbSecond,
  writeUnitsPerSec: 20,
  logBytesPerInvocation: 500,
};

describe('continuousMonthCost', () => {
  it('bills the resident segments all month, with the successor waiting at each hand-over', () => {
    const c = continuousMonthCost(base);
    expect(c.invocations).toBe(2 * (SECONDS_PER_MONTH / 600));
    expect(c.gbSeconds).toBeCloseTo(2 * SECONDS_PER_MONTH * (1 + 2 / 600) * 0.25, 6);
    expect(c.duration).toBeCloseTo(c.gbSeconds * PRICES.lambdaGbSecond, 9);
    // 2 segments of 256 MB on arm64: about $17.6 a month.
    expect(c.duration).toBeGreaterThan(17.5);
    expect(c.duration).toBeLessThan(17.7);
  });

  it('bills each ledger write unit a second as a month of them', () => {
    const c = continuousMonthCost(base);
    expect(c.dynamo).toBeCloseTo(20 * SECONDS_PER_MONTH * PRICES.dynamoWriteUnit, 9);
    expect(c.dynamo).toBeCloseTo(32.85, 2);
    expect(c.total).toBeCloseTo(c.duration + c.requests + c.dynamo + c.logs, 9);
  });

  it.each([
    ['longer segments: fewer invocations, less overlap', { segmentMs: 900_000 }, (a: number, b: number) => b < a],
    ['more memory costs more', { memoryGb: 0.5 }, (a: number, b: number) => b > a],
    ['fewer write units cost less', { writeUnitsPerSec: 10 }, (a: number, b: number) => b < a],
  ] as const)('%s', (_, over, holds) => {
    expect(holds(continuousMonthCost(base).total, continuousMonthCost({ ...base, ...over }).total)).toBe(true);
  });
});
