/** The cost model of the resident planner loop against the Kafka trigger (docs/COST.md, "Freshness against cost"). */
import {
  HOURS_PER_MONTH,
  lambdaOwnLogBytes,
  loopMonthCost,
  PRICES,
  SECONDS_PER_MONTH,
  sinkMonthCost,
  SQS_IDLE_POLL_REQUESTS_PER_MONTH,
  triggerMonthCost,
} from '../../../bench/cost';

const month = HOURS_PER_MONTH * 3600;

describe('loopMonthCost', () => {
  const input = {
    triggerIntervalMs: 1000,
    schedulePeriodMs: 60_000,
    overlapMs: 0,
    plannerMemoryGb: 0.5,
    processorMemoryGb: 1,
    gbSecond: PRICES.lambdaGbSecond,
    rangesPerTick: 10,
    tick: { writeUnits: 2, readUnits: 3, logBytes: 1000 },
    plannedRange: { writeUnits: 4 },
    invocation: { durationMs: 100, writeUnits: 7, readUnits: 1, logBytes: 1000 },
  };

  it('bills the planner for the whole month at its memory, and more by the overlap of each hand-over', () => {
    expect(SECONDS_PER_MONTH).toBe(month);
    const resident = loopMonthCost(input);
    expect(resident.plannerGbSeconds).toBe(month * 0.5);
    expect(resident.planner).toBeCloseTo(month * 0.5 * 0.0000133334 + (month / 60) * 0.2e-6, 9);
    const overlapping = loopMonthCost({ ...input, overlapMs: 30_000 });
    expect(overlapping.plannerGbSeconds).toBe(month * 1.5 * 0.5);
  });

  it('bills one run per invocation when the interval is not shorter than the schedule period', () => {
    const once = loopMonthCost({ ...input, triggerIntervalMs: 60_000, plannerRunMs: 300, overlapMs: 30_000 });
    expect(once.ticks).toBe(month / 60);
    expect(once.plannerGbSeconds).toBeCloseTo((month / 60) * 0.3 * 0.5, 6);
  });

  it('counts a tick per interval and a processor invocation per range, with their ledger units and logs', () => {
    const c = loopMonthCost(input);
    expect(c.ticks).toBe(month);
    expect(c.invocations).toBe(10 * month);
    expect(c.processorRequests).toBeCloseTo(10 * month * 0.2e-6, 6);
    expect(c.processorDuration).toBeCloseTo(10 * month * 0.1 * 0.0000133334, 6);
    const writes = month * 2 + 10 * month * (4 + 7);
    const reads = month * 3 + 10 * month * 1;
    expect(c.dynamo).toBeCloseTo(writes * 0.625e-6 + reads * 0.125e-6, 6);
    expect(c.logs).toBeCloseTo(((month * 1000 + 10 * month * 1000) / 1e9) * 0.5, 6);
    expect(c.total).toBeCloseTo(c.planner + c.processorRequests + c.processorDuration + c.dynamo + c.logs, 9);
    // Ten times the interval: a tenth of the ticks and invocations; the resident planner costs the same.
    const slow = loopMonthCost({ ...input, triggerIntervalMs: 10_000 });
    expect(slow.invocations).toBe(month);
    expect(slow.planner).toBe(c.planner);
  });

  it('bills a chained tick as an invocation of its own with its queue requests, and the schedule as runs (the watchdog)', () => {
    const chain = { tickMs: 200, sqsRequestsPerTick: 3, pollRequestsPerMonth: SQS_IDLE_POLL_REQUESTS_PER_MONTH };
    const c = loopMonthCost({ ...input, triggerIntervalMs: 10_000, plannerRunMs: 100, chain });
    const ticks = month / 10;
    expect(c.ticks).toBe(ticks);
    expect(c.plannerGbSeconds).toBeCloseTo((ticks * 0.2 + (month / 60) * 0.1) * 0.5, 6);
    expect(c.planner).toBeCloseTo(c.plannerGbSeconds * 0.0000133334 + (ticks + month / 60) * 0.2e-6, 9);
    expect(SQS_IDLE_POLL_REQUESTS_PER_MONTH).toBe(657_000);
    expect(c.queue).toBeCloseTo((ticks * 3 + 657_000) * 0.4e-6, 9);
    expect(c.total).toBeCloseTo(c.planner + c.processorRequests + c.processorDuration + c.dynamo + c.logs + c.queue, 9);
    // Far below the resident planner at the same interval.
    expect(c.planner).toBeLessThan(loopMonthCost({ ...input, triggerIntervalMs: 10_000 }).planner / 10);
    // An interval of the schedule period or more is one run per invocation, chain or not; the resident loop has no queue.
    expect(loopMonthCost({ ...input, triggerIntervalMs: 60_000, plannerRunMs: 300, chain }).queue).toBe(0);
    expect(loopMonthCost(input).queue).toBe(0);
  });

  it('bills shared invocations per invocation and planned ranges per range', () => {
    const shared = loopMonthCost({ ...input, invocationsPerTick: 0.5, plannedRange: { writeUnits: 0.3 } });
    expect(shared.invocations).toBe(0.5 * month);
    expect(shared.processorRequests).toBeCloseTo(0.5 * month * 0.2e-6, 6);
    const writes = month * (2 + 10 * 0.3) + 0.5 * month * 7;
    const reads = month * 3 + 0.5 * month * 1;
    expect(shared.dynamo).toBeCloseTo(writes * 0.625e-6 + reads * 0.125e-6, 6);
  });
});

describe('triggerMonthCost', () => {
  const base = {
    ratePerSec: 1000,
    batchSize: 10_000,
    memoryGb: 1,
    gbSecond: PRICES.lambdaGbSecond,
    invocation: { durationMs: 10, logBytes: 300 },
  };

  it('invokes once per batching window, or per full batch, and adds provisioned pollers by the hour', () => {
    const halfSecond = triggerMonthCost({ ...base, batchWindowMs: 500 });
    expect(halfSecond.invocations).toBe(2 * month);
    expect(halfSecond.lambda).toBeCloseTo(2 * month * (0.2e-6 + 0.01 * 0.0000133334), 9);
    expect(halfSecond.logs).toBeCloseTo(((2 * month * 300) / 1e9) * 0.5, 9);
    expect(halfSecond.pollers).toBe(0);
    // A minute's window holds more than a full batch: a batch every 10 s.
    expect(triggerMonthCost({ ...base, batchWindowMs: 60_000 }).invocations).toBe(month / 10);
    expect(triggerMonthCost({ ...base, batchWindowMs: 500, provisionedPollers: 1 }).pollers).toBeCloseTo(730 * 0.185, 9);
  });
});

describe('sinkMonthCost', () => {
  it('writes each distinct key of a batch once', () => {
    // 10 s ranges of one partition: 1,000 records over its 100 keys touch all of them.
    const tenSeconds = sinkMonthCost({ ratePerSec: 1000, batchRecords: 1000, batchKeys: 100, unitsPerWrite: 2 });
    expect(tenSeconds / (month * 100 * 2 * 0.625e-6)).toBeCloseTo(1, 4);
    expect(sinkMonthCost({ ratePerSec: 1000, batchRecords: 1, batchKeys: 100, unitsPerWrite: 1 })).toBeCloseTo(month * 1000 * 0.625e-6, 3);
  });
});

describe('lambdaOwnLogBytes', () => {
  it("counts Lambda's START, END and REPORT lines of an invocation", () => {
    // 71 + 52 + 145 bytes with a 36-character request id, 100 ms, 1,024 MB, 150 MB used.
    expect(lambdaOwnLogBytes({ durationMs: 100, memoryMb: 1024, maxMemoryUsedMb: 150 })).toBe(71 + 52 + 145);
    expect(lambdaOwnLogBytes({ durationMs: 1000.5, memoryMb: 1024, maxMemoryUsedMb: 150 })).toBe(71 + 52 + 147);
  });
});
