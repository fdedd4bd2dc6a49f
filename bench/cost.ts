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
  /** Lambda, x86_64: per GB-second of duration. */
  lambdaGbSecondX86: 0.0000166667,
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
  /** CloudWatch Logs, standard class: per GB ingested (Lambda logs' first tier). */
  logsIngestedGb: 0.5,
  /** SQS standard queue: per request (64 KB chunk) after the monthly free million. */
  sqsRequest: 0.4 / 1e6,
} as const;

/** Hours in the month the cost model uses (730 = 8,760 / 12, AWS's own convention). */
export const HOURS_PER_MONTH = 730;

export type Bill = {
  lambdaRequests: number;
  lambdaDuration: number;
  sinkWrites: number;
  /** Reads of sink items (a folded batch reads its items before it writes them). */
  sinkReads: number;
  ledgerWrites: number;
  pollers: number;
  total: number;
};

const bill = (parts: Omit<Bill, 'total'>): Bill => ({
  ...parts,
  total: parts.lambdaRequests + parts.lambdaDuration + parts.sinkWrites + parts.sinkReads + parts.ledgerWrites + parts.pollers,
});

/** This system's bill per million records, from one drain's counts at `processorMemoryGb`. */
export function costPerMillion(d: DrainFigures, processorMemoryGb: number): Bill {
  const perMillion = 1e6 / d.records;
  return bill({
    lambdaRequests: d.invocations * perMillion * PRICES.lambdaRequest,
    lambdaDuration: d.processorSeconds * perMillion * processorMemoryGb * PRICES.lambdaGbSecond,
    sinkWrites: d.sinkWriteUnits * perMillion * PRICES.dynamoWriteUnit,
    sinkReads: d.sinkReadUnits * perMillion * PRICES.dynamoReadUnit,
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
    sinkReads: 0,
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

/**
 * Bytes of the lines Lambda itself writes to a function's log for one invocation (text format):
 * `START RequestId: <id> Version: $LATEST`, `END RequestId: <id>` and `REPORT RequestId: <id>` with
 * its tab-separated duration, billed duration, memory size and memory used, each ending in a newline.
 */
export function lambdaOwnLogBytes(i: { durationMs: number; memoryMb: number; maxMemoryUsedMb: number }): number {
  const id = '8f5ebbb3-bd7f-4ef6-8c4a-8a5c1d5b1c9e';
  const lines = [
    `START RequestId: ${id} Version: $LATEST\n`,
    `END RequestId: ${id}\n`,
    `REPORT RequestId: ${id}\tDuration: ${i.durationMs.toFixed(2)} ms\tBilled Duration: ${Math.ceil(i.durationMs)} ms\t` +
      `Memory Size: ${i.memoryMb} MB\tMax Memory Used: ${i.maxMemoryUsedMb} MB\t\n`,
  ];
  return lines.reduce((s, l) => s + Buffer.byteLength(l, 'utf8'), 0);
}

/** Seconds in the cost model's month. */
export const SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600;
/** Bytes per GB as CloudWatch Logs bills ingestion (decimal). */
const GB = 1e9;

/**
 * A month of the planner loop with records flowing (docs/COST.md, "Freshness against cost"): one
 * planner invocation at a time, plus the overlap of each hand-over (or, with an interval not shorter
 * than the schedule period, one run per invocation); a tick every interval; its ranges (one per
 * partition with records) in processor invocations, several small ones to an invocation.
 */
export type LoopMonthInput = {
  triggerIntervalMs: number;
  schedulePeriodMs: number;
  /** Two invocations run at once at each hand-over for about this long (the successor waiting for the holder's next tick). */
  overlapMs: number;
  /**
   * With an interval not shorter than the schedule period the planner ticks once per invocation
   * (lib/planner/loop-timing.ts `oneTickPerInvocation`) and is billed for that run only, this long.
   */
  plannerRunMs?: number;
  plannerMemoryGb: number;
  processorMemoryGb: number;
  /** Per GB-second of the functions' architecture (PRICES.lambdaGbSecond or lambdaGbSecondX86). */
  gbSecond: number;
  /** Ranges planned per tick: the partitions with records since the last tick. */
  rangesPerTick: number;
  /** Processor invocations per tick (small ranges share one); the ranges per tick when each has its own. */
  invocationsPerTick?: number;
  /** The planner's ledger requests per tick (its lease, its reads) and per range it plans. */
  tick: { writeUnits: number; readUnits: number; logBytes: number };
  plannedRange: { writeUnits: number };
  /** One processor invocation: its duration, ledger units and log bytes (Lambda's own lines included). */
  invocation: { durationMs: number; writeUnits: number; readUnits: number; logBytes: number };
  /**
   * Ticked by the tick chain (an interval from tickChainFromMs up to the schedule period): each tick
   * an invocation of this duration (its run and its wait for the due time), its SQS requests (send,
   * receive, delete), and the event source mapping's polls of the queue a month; the schedule's
   * invocations (the watchdog) are billed `plannerRunMs` each.
   */
  chain?: { tickMs: number; sqsRequestsPerTick: number; pollRequestsPerMonth: number };
};

/**
 * What Lambda's SQS pollers cost a month on an idle queue: AWS documents five pollers long-polling
 * at the start, each request waiting up to 20 s, so about 15 requests a minute.
 */
export const SQS_IDLE_POLL_REQUESTS_PER_MONTH = 5 * 3 * 60 * HOURS_PER_MONTH;

export type LoopMonthCost = {
  ticks: number;
  invocations: number;
  plannerGbSeconds: number;
  planner: number;
  processorRequests: number;
  processorDuration: number;
  dynamo: number;
  logs: number;
  /** The tick chain's queue (SQS requests); 0 for a resident loop. */
  queue: number;
  total: number;
};

/** This system's month at one trigger interval (the processors' handler work and sink writes not included). */
export function loopMonthCost(i: LoopMonthInput): LoopMonthCost {
  const ticks = (SECONDS_PER_MONTH * 1000) / i.triggerIntervalMs;
  const invocations = ticks * (i.invocationsPerTick ?? i.rangesPerTick);
  const scheduled = (SECONDS_PER_MONTH * 1000) / i.schedulePeriodMs;
  const oneTick = i.triggerIntervalMs >= i.schedulePeriodMs;
  const chained = !oneTick && i.chain !== undefined;
  const runSeconds = scheduled * ((i.plannerRunMs ?? 0) / 1000);
  const plannerSeconds = chained
    ? ticks * ((i.chain?.tickMs ?? 0) / 1000) + runSeconds
    : oneTick
      ? runSeconds
      : SECONDS_PER_MONTH * (1 + i.overlapMs / i.schedulePeriodMs);
  const plannerGbSeconds = plannerSeconds * i.plannerMemoryGb;
  const planner = plannerGbSeconds * i.gbSecond + (scheduled + (chained ? ticks : 0)) * PRICES.lambdaRequest;
  const queue = chained && i.chain ? (ticks * i.chain.sqsRequestsPerTick + i.chain.pollRequestsPerMonth) * PRICES.sqsRequest : 0;
  const processorRequests = invocations * PRICES.lambdaRequest;
  const processorDuration = invocations * (i.invocation.durationMs / 1000) * i.processorMemoryGb * i.gbSecond;
  const writeUnits = ticks * (i.tick.writeUnits + i.rangesPerTick * i.plannedRange.writeUnits) + invocations * i.invocation.writeUnits;
  const readUnits = ticks * i.tick.readUnits + invocations * i.invocation.readUnits;
  const dynamo = writeUnits * PRICES.dynamoWriteUnit + readUnits * PRICES.dynamoReadUnit;
  const logs = ((ticks * i.tick.logBytes + invocations * i.invocation.logBytes) / GB) * PRICES.logsIngestedGb;
  const total = planner + processorRequests + processorDuration + dynamo + logs + queue;
  return { ticks, invocations, plannerGbSeconds, planner, processorRequests, processorDuration, dynamo, logs, queue, total };
}

/** Lambda's Kafka trigger for the same flow: a batch per batching window (or per full batch), no ledger. */
export type TriggerMonthInput = {
  ratePerSec: number;
  /** MaximumBatchingWindowInSeconds, in ms (500 ms is the Kafka default). */
  batchWindowMs: number;
  /** BatchSize (at most 10,000). */
  batchSize: number;
  memoryGb: number;
  gbSecond: number;
  /** One invocation: its duration and log bytes (Lambda's own lines included). */
  invocation: { durationMs: number; logBytes: number };
  /** Provisioned mode: its minimum event pollers, billed every hour. */
  provisionedPollers?: number;
};

export function triggerMonthCost(t: TriggerMonthInput): {
  invocations: number;
  lambda: number;
  logs: number;
  pollers: number;
  total: number;
} {
  const batchRecords = Math.min(t.batchSize, (t.ratePerSec * t.batchWindowMs) / 1000);
  const invocations = (SECONDS_PER_MONTH * t.ratePerSec) / batchRecords;
  const lambda = invocations * (PRICES.lambdaRequest + (t.invocation.durationMs / 1000) * t.memoryGb * t.gbSecond);
  const logs = ((invocations * t.invocation.logBytes) / GB) * PRICES.logsIngestedGb;
  const pollers = (t.provisionedPollers ?? 0) * HOURS_PER_MONTH * PRICES.epuHour;
  return { invocations, lambda, logs, pollers, total: lambda + logs + pollers };
}

/**
 * A month of sink writes for running totals over `keys` keys at `ratePerSec`: each write unit of
 * `unitsPerWrite` per distinct key of a batch of `batchRecords` records drawn from `batchKeys` keys
 * (this system: a range, one partition's records and keys; the trigger: a batch mixing partitions).
 */
export function sinkMonthCost(s: { ratePerSec: number; batchRecords: number; batchKeys: number; unitsPerWrite: number }): number {
  const batches = (SECONDS_PER_MONTH * s.ratePerSec) / s.batchRecords;
  return batches * expectedDistinctKeys(s.batchRecords, s.batchKeys) * s.unitsPerWrite * PRICES.dynamoWriteUnit;
}

/**
 * A month of a continuous stream (docs/COST.md, "Continuous mode"): its resident segments (one per
 * group of up to 7 partitions, each a processor invocation running all month, plus the successor's
 * wait at each hand-over), their hand-over invocations, the ledger writes of their commits and
 * heartbeats, and their logs. The planner (which only watches: new partitions, dead segments) is
 * priced apart, as `loopMonthCost` of its interval with no ranges.
 */
export type ContinuousMonthInput = {
  /** Segments running at once: the stream's partitions in groups of `partitionsPerSegment` within ledger group items. */
  segments: number;
  segmentMs: number;
  /** How long before its end a segment invokes its successor, which waits (and is billed) meanwhile. */
  handoverLeadMs: number;
  memoryGb: number;
  gbSecond: number;
  /** The segments' ledger write units a second (commits and heartbeats, as DynamoDB bills them), measured. */
  writeUnitsPerSec: number;
  /** Bytes one segment invocation logs (its metrics line, Lambda's own lines). */
  logBytesPerInvocation: number;
};

export type ContinuousMonthCost = {
  invocations: number;
  gbSeconds: number;
  duration: number;
  requests: number;
  dynamo: number;
  logs: number;
  total: number;
};

/** The segments' month at one commit rate (the handler's work and sink writes not included). */
export function continuousMonthCost(c: ContinuousMonthInput): ContinuousMonthCost {
  const invocations = c.segments * ((SECONDS_PER_MONTH * 1000) / c.segmentMs);
  const gbSeconds = c.segments * SECONDS_PER_MONTH * (1 + c.handoverLeadMs / c.segmentMs) * c.memoryGb;
  const duration = gbSeconds * c.gbSecond;
  const requests = invocations * PRICES.lambdaRequest;
  const dynamo = c.writeUnitsPerSec * SECONDS_PER_MONTH * PRICES.dynamoWriteUnit;
  const logs = ((invocations * c.logBytesPerInvocation) / GB) * PRICES.logsIngestedGb;
  return { invocations, gbSeconds, duration, requests, dynamo, logs, total: duration + requests + dynamo + logs };
}
