/** The cost model's arithmetic (docs/COST.md): this system per million records and idle, and the Kafka trigger. */
import {
  costPerMillion,
  expectedDistinctKeys,
  idleMonthCost,
  PRICES,
  triggerCostPerMillion,
  triggerIdleMonthCost,
} from '../../../bench/cost';
import type { DrainFigures } from '../../../bench/stats';

const drain: DrainFigures = {
  records: 50_000,
  wallMs: 10_000,
  invocations: 10,
  plannerTicks: 5,
  sinkWrites: 2_500,
  sinkWriteUnits: 5_000,
  sinkIdealWriteUnits: 2_500,
  sinkReadUnits: 1_250,
  ledgerWrites: 100,
  ledgerWriteUnits: 200,
  processorSeconds: 50,
  peakRssMb: 100,
};

describe('cost model', () => {
  it("prices a drain's counts per million records", () => {
    const b = costPerMillion(drain, 1);
    expect(b.lambdaRequests).toBeCloseTo(200 * 0.2e-6, 12); // 10 invocations per 50,000 -> 200 per million
    expect(b.lambdaDuration).toBeCloseTo(1000 * PRICES.lambdaGbSecond, 12); // 50 s per 50,000 at 1 GB
    expect(b.sinkWrites).toBeCloseTo(100_000 * 0.625e-6, 12);
    expect(b.ledgerWrites).toBeCloseTo(4_000 * 0.625e-6, 12);
    expect(b.sinkReads).toBeCloseTo(25_000 * 0.125e-6, 12);
    expect(b.total).toBeCloseTo(b.lambdaRequests + b.lambdaDuration + b.sinkWrites + b.sinkReads + b.ledgerWrites, 12);
  });

  it('counts distinct keys of a uniform draw', () => {
    expect(expectedDistinctKeys(1, 10_000)).toBeCloseTo(1, 9);
    expect(expectedDistinctKeys(10_000, 10_000)).toBeCloseTo(6321.4, 1); // 1 - 1/e of the keys
    expect(expectedDistinctKeys(1e7, 10_000)).toBeCloseTo(10_000, 6);
  });

  it("prices the trigger per batch, and provisioned mode's pollers by bytes or concurrency", () => {
    const onDemand = triggerCostPerMillion({ batchRecords: 10_000, accounts: 10_000, gbSecondsPerMillion: 0, unitsPerWrite: 1 });
    expect(onDemand.lambdaRequests).toBeCloseTo(100 * 0.2e-6, 12);
    expect(onDemand.sinkWrites).toBeCloseTo(100 * 6321.39 * 0.625e-6, 6);
    expect(onDemand.pollers).toBe(0);
    // 5,000 records/s of 512 B is 2.4 MB/s: one poller; 1e6 records take 200 s = 1/18 h.
    const provisioned = triggerCostPerMillion({
      batchRecords: 10_000,
      accounts: 10_000,
      gbSecondsPerMillion: 0,
      unitsPerWrite: 1,
      provisioned: { ratePerSec: 5_000, recordBytes: 512, concurrency: 1, minPollers: 1 },
    });
    expect(provisioned.pollers).toBeCloseTo(0.185 / 18, 9);
    const byConcurrency = triggerCostPerMillion({
      batchRecords: 10_000,
      accounts: 10_000,
      gbSecondsPerMillion: 0,
      unitsPerWrite: 1,
      provisioned: { ratePerSec: 5_000, recordBytes: 512, concurrency: 12, minPollers: 1 },
    });
    expect(byConcurrency.pollers).toBeCloseTo((3 * 0.185) / 18, 9);
  });

  it('prices an idle month: the schedule within its free tier, the planner runs, their ledger requests', () => {
    const idle = idleMonthCost({ scheduleMs: 60_000, plannerMemoryGb: 0.5, idleTickMs: 1000, writeUnitsPerTick: 2, readUnitsPerTick: 2 });
    const ticks = 730 * 60; // 43,800
    expect(idle.scheduler).toBe(0);
    expect(idle.lambda).toBeCloseTo(ticks * (0.2e-6 + 0.5 * 0.0000133334), 9);
    expect(idle.dynamo).toBeCloseTo(ticks * (2 * 0.625e-6 + 2 * 0.125e-6), 9);
    const shared = idleMonthCost({
      scheduleMs: 60_000,
      plannerMemoryGb: 0.5,
      idleTickMs: 0,
      writeUnitsPerTick: 0,
      readUnitsPerTick: 0,
      otherSchedulerInvocations: 14e6,
    });
    expect(shared.scheduler).toBeCloseTo(ticks * 1e-6, 9);
    expect(triggerIdleMonthCost(1)).toBeCloseTo(730 * 0.185, 9);
  });
});
