/**
 * The cost model of docs/COST.md as arithmetic: the AWS bill per million records and per idle month
 * of this system, from a drain's measured counts, next to Lambda's Kafka trigger (event source
 * mapping) in on-demand and provisioned mode with the same batch sizes. Prices are list prices in
 * US dollars (us-east-1), as read on `PRICES.readOn`.
 */
import type { DrainFigures } from './stats';

export const PRICES = {
  readOn: '2026-12-01',
  /** Lambda, arm64: per GB-second of duration, and per request. */
  lambdaGbSecond: 0.0000133334,
  lambdaRequest: 0.2 / 1e6,
  /** DynamoDB on-demand (since November 2024): per write and per read request unit. */
  dynamoWriteUnit: 0.625 / 1e6,
  dynamoReadUnit: 0.125 / 1e6,
  /** EventBridge Scheduler: per invocation after the monthly free ones. */
  schedulerInvocation: 1 / 1e6,
  schedulerFreePerMonth: 14e6,
  /** Lambda event source mapping, provisioned mode: per event poller unit (EPU) hour. */
  epuHour: 0.185,
  /** What one Kafka event poller handles (Lambda's documentation). */
  epuBytesPerSec: 5 * 1024 * 1024,
  epuConcurrentInvokes: 5,
} as const;

/** Hours in the month the cost model uses (730 = 8,760 / 12, AWS's own convention). */
export const HOURS_PER_MONTH = 730;

export type Bill = {
  lambdaRequests: number;
  lambdaDuration: number;
  sinkWrites: number;
  ledgerWrites: number;
  pollers: number;
  total: number;
};

const bill = (parts: Omit<Bill, 'total'>): Bill => ({
  ...parts,
  total: parts.lambdaRequests + parts.lambdaDuration + parts.sinkWrites + parts.ledgerWrites + parts.pollers,
});

/** This system's bill per million records, from one drain's counts at `processorMemoryGb`. */
export function costPerMillion(d: DrainFigures, processorMemoryGb: number): Bill {
  const perMillion = 1e6 / d.records;
  return bill({
    lambdaRequests: d.invocations * perMillion * PRICES.lambdaRequest,
    lambdaDuration: d.processorSeconds * perMillion * processorMemoryGb * PRICES.lambdaGbSecond,
    sinkWrites: d.sinkWriteUnits * perMillion * PRICES.dynamoWriteUnit,
    ledgerWrites: d.ledgerWriteUnits * perMillion * PRICES.dynamoWriteUnit,
    pollers: 0,
  });
}

/** Expected distinct keys among `records` drawn uniformly from `keys`. */
export function expectedDistinctKeys(records: number, keys: number): number {
  return keys * (1 - (1 - 1 / keys) ** records);
}

export type TriggerInput = {
  /** Records per invocation (the trigger's BatchSize, at most 10,000 and 6 MB of payload). */
  batchRecords: number;
  /** The accounts a batch draws from: all of them if batches mix partitions, one partition's share if not. */
  accounts: number;
  /** The handler's duration per million records (taken equal to this system's: the same work). */
  gbSecondsPerMillion: number;
  /** Units per sink write: 1 for an idempotent conditional write of an item under 1 KB, 2 in a transaction. */
  unitsPerWrite: number;
  /** Provisioned mode: the sustained rate and record size that size the pollers, and their minimum. */
  provisioned?: { ratePerSec: number; recordBytes: number; concurrency: number; minPollers: number };
};

/**
 * Lambda's Kafka trigger per million records: one invocation per batch, the batch's records folded
 * per account and written once per distinct account; provisioned mode adds its pollers' hours.
 */
export function triggerCostPerMillion(t: TriggerInput): Bill {
  const batches = 1e6 / t.batchRecords;
  let pollers = 0;
  if (t.provisioned) {
    const p = t.provisioned;
    const byBytes = Math.ceil((p.ratePerSec * p.recordBytes) / PRICES.epuBytesPerSec);
    const byInvokes = Math.ceil(p.concurrency / PRICES.epuConcurrentInvokes);
    const epus = Math.max(p.minPollers, byBytes, byInvokes);
    const hoursPerMillion = 1e6 / p.ratePerSec / 3600;
    pollers = epus * hoursPerMillion * PRICES.epuHour;
  }
  return bill({
    lambdaRequests: batches * PRICES.lambdaRequest,
    lambdaDuration: t.gbSecondsPerMillion * PRICES.lambdaGbSecond,
    sinkWrites: batches * expectedDistinctKeys(t.batchRecords, t.accounts) * t.unitsPerWrite * PRICES.dynamoWriteUnit,
    ledgerWrites: 0,
    pollers,
  });
}

export type IdleInput = {
  /** The planner schedule's period. */
  scheduleMs: number;
  plannerMemoryGb: number;
  /** One idle planner run's duration. */
  idleTickMs: number;
  /** DynamoDB units of one idle run (docs/architecture.md: 2 writes, lease and release, and its reads). */
  writeUnitsPerTick: number;
  readUnitsPerTick: number;
  /** Scheduler invocations already used elsewhere in the account this month (the free ones are shared). */
  otherSchedulerInvocations?: number;
};

/** This system's bill for a month with no records: the planner's schedule, runs and ledger requests. */
export function idleMonthCost(i: IdleInput): { scheduler: number; lambda: number; dynamo: number; total: number } {
  const ticks = (HOURS_PER_MONTH * 3600_000) / i.scheduleMs;
  const billedInvocations = Math.max(0, ticks + (i.otherSchedulerInvocations ?? 0) - PRICES.schedulerFreePerMonth);
  const scheduler = Math.min(ticks, billedInvocations) * PRICES.schedulerInvocation;
  const lambda = ticks * (PRICES.lambdaRequest + (i.idleTickMs / 1000) * i.plannerMemoryGb * PRICES.lambdaGbSecond);
  const dynamo = ticks * (i.writeUnitsPerTick * PRICES.dynamoWriteUnit + i.readUnitsPerTick * PRICES.dynamoReadUnit);
  return { scheduler, lambda, dynamo, total: scheduler + lambda + dynamo };
}

/** The trigger's idle month: nothing in on-demand mode; the minimum pollers' hours in provisioned mode. */
export function triggerIdleMonthCost(minPollers: number): number {
  return minPollers * HOURS_PER_MONTH * PRICES.epuHour;
}
