/**
 * Port: the ledger, the only state of the system (DynamoDB in production, a Map in unit tests).
 *
 * Every mutation is conditional on the value it replaces (invariant I2); planner writes are also
 * fenced by the planner epoch (I5). A lost condition is reported as a value (`'condition-failed'`,
 * `'fenced'`), never thrown: the caller re-reads and decides, like the KCL's lease table.
 * The `nowMs` of every lease decision (taking, renewing) is a `StoreClock` reading.
 */
import { AppError } from '../errors';
import type { PidState } from '../offsets/pid';
import type { PlannerLoopLease, PlannerLoopState } from './planner-loop';
import type { TimestampType } from './range-reader';

export type StreamMeta = {
  stream: string;
  /** Incremented by every planner run that takes the lease; planner writes check it. */
  epoch: number;
  ownerToken: string;
  leaseExpiresAtMs: number;
  /** Set once the stream's initial partitions are registered; later partitions start at earliest. */
  startedAtMs?: number;
  /**
   * Partitions the stream's first run found but could not register (their offsets could not be
   * read: a leader down), written with `startedAtMs`. They existed when the stream started, so a
   * later run registers them at `startingOffsets`, not at earliest. Never rewritten: an entry is
   * only looked at while its partition is not registered.
   */
  pendingStart?: PendingStart[];
  /** Operator changes (rewind) leave who/when here. */
  lastChange?: { by: string; atMs: number; what: string };
  /** Set once a bounded stream (a replay) has committed every partition up to its stop offset. */
  finishedAtMs?: number;
  /**
   * The last planner epoch that recorded the outcome of all its dispatches. Ranges are persisted as
   * dispatched before the dispatcher is called (one write per range, not two); ranges still
   * `planned` from a later epoch that did not confirm may never have been sent, so the next run
   * sends them again (a duplicate invocation is harmless: the range lease admits one processor).
   */
  confirmedEpoch?: number;
  /** When the last planner run took the lease (a loop's last tick, or an ad hoc run). */
  lastRunAtMs?: number;
  /** The planner loop: which scheduled invocation ticks the stream (see ports/planner-loop.ts). */
  loop?: PlannerLoopState;
};

/** Partitions of one topic (and its topic id when the broker gave one) awaiting their start (`StreamMeta.pendingStart`). */
export type PendingStart = { topic: string; partitions: number[]; topicId?: string };

/**
 * The store's current time (epoch ms) as this process estimates it. Every lease (planner and range)
 * is judged and written on it, never on a process's own clock, so two processes whose clocks
 * disagree cannot both hold one lease. May cost a request the first time (DynamoDB: a probe whose
 * response `Date` header calibrates the local clock). See docs/architecture.md, "Clocks".
 */
export type StoreClock = () => Promise<number>;

/** Who changed a stream by hand, when, and what they did (kept on the stream's META item). */
export type OperatorChange = { by: string; atMs: number; what: string };

export const PARTITION_STATUSES = ['active', 'retired', 'failed'] as const;
export type PartitionStatus = (typeof PARTITION_STATUSES)[number];

/** Statistics of the last range the processor finished on a partition (inputs to the rate limits). */
export type RangeStats = { records: number; processingMs: number; schedulingDelayMs: number; finishedAtMs: number };

export type PartitionState = {
  stream: string;
  topic: string;
  partition: number;
  status: PartitionStatus;
  /** Where the stream started reading this partition. */
  startOffset: number;
  /** All offsets below are processed (advanced by processors over finished ranges). */
  committed: number;
  /** The planning cursor: the `until` of the last planned range. `committed < nextFrom` = in flight. */
  nextFrom: number;
  firstSeenAtMs: number;
  lastPlannedAtMs?: number;
  /** Why the partition was retired or failed (e.g. `TOPIC_DELETED`, `DATA_LOSS ...`). */
  reason?: string;
  /** EWMA of processor throughput on this partition, records/s (time budget). */
  observedRecordsPerSec?: number;
  /** Backpressure estimator state (when the stream enables backpressure). */
  pid?: PidState;
  /** The last rate the estimator published (Spark's RateController.getLatestRate). */
  backpressureRatePerSec?: number;
  lastRange?: RangeStats;
  /**
   * Bounded streams (replays): nothing at or past this offset is planned, and the partition is
   * finished once `committed` reaches it (Flink's bounded KafkaSource stopping offset).
   */
  stopOffset?: number;
  /**
   * The topic id (KIP-516) of the incarnation of the topic this partition reads; absent when the
   * broker gives no ids, and on ledgers written before ids were recorded (the next run records it).
   */
  topicId?: string;
  /**
   * Counts re-creations of the topic under the same name (absent = 0). Each incarnation is a new log
   * whose offsets restart at 0, so its ranges, data-loss entries and dead letters are kept apart by it.
   */
  incarnation?: number;
  /**
   * Operator rewinds of this incarnation (absent = 0). Offsets processed again after a rewind must
   * apply again, so folded sink writes mark items per rewind (see `SinkMark`).
   */
  rewinds?: number;
};

/**
 * The record of a closed incarnation of a partition: the topic was deleted and re-created under
 * the same name (topic id changed, or offsets regressed where there are no ids), so the planner
 * closed the old log and registered the new one. It keeps what the old incarnation had reached.
 */
export type ClosedIncarnation = {
  stream: string;
  topic: string;
  partition: number;
  /** The incarnation closed (the partition continues with `incarnation + 1`). */
  incarnation: number;
  /** Topic id of the closed incarnation, and of the new one (absent where the broker gives none). */
  topicId?: string;
  newTopicId?: string;
  /** The closed incarnation's status (`active`, `retired`, `failed`) and cursor when it was closed. */
  status: PartitionStatus;
  startOffset: number;
  committed: number;
  nextFrom: number;
  /** Ranges still open (not done) when it was closed; they were removed, none of them is read. */
  openRanges: Array<{ from: number; until: number; status: RangeStatus; progress: number }>;
  /** Where the new incarnation starts reading. */
  newStartOffset: number;
  detectedAtMs: number;
  /** How the re-creation was detected, in words. */
  reason: string;
};

export const RANGE_STATUSES = ['planned', 'leased', 'done', 'failed', 'parked'] as const;
export type RangeStatus = (typeof RANGE_STATUSES)[number];

export type RangeState = {
  stream: string;
  topic: string;
  partition: number;
  from: number;
  until: number;
  status: RangeStatus;
  /** Planner epoch that planned the range. */
  epoch: number;
  plannedAtMs: number;
  /**
   * When the range was last sent to a processor. A new range is persisted with it set (dispatch
   * intent); unset means "send it at the next run" (the dispatcher refused it, or a processor gave it
   * back before its deadline).
   */
  dispatchedAtMs?: number;
  /** Dispatches recorded, the intent of a new range included. */
  dispatches: number;
  /**
   * `attempts` when the planner last sent the range again. A failed or expired range that still has
   * as many attempts has not been taken since: that dispatch is waited for (as a new range's is, the
   * lease time) instead of sending the range again every run.
   */
  redispatchedAtAttempts?: number;
  /** Lease takes by processors (KCL's leaseCounter); bounded by the stream's maxAttempts. */
  attempts: number;
  leaseToken?: string;
  leaseExpiresAtMs?: number;
  /** Next offset to process inside the range (from <= progress <= until). */
  progress: number;
  lastError?: string;
  /** When the first lease was taken (scheduling delay = this - plannedAtMs). */
  firstLeasedAtMs?: number;
  finishedAtMs?: number;
  /** Records delivered to the handler when done (excludes gaps, markers, aborted records). */
  records?: number;
  deadLetters?: number;
  /** The partition incarnation the range belongs to (absent = 0); part of the range's identity. */
  incarnation?: number;
  /** The topic id the range was planned against: the processor reads it only from that topic. */
  topicId?: string;
  /** The partition's rewinds when the range was planned (absent = 0): part of its sink marks. */
  rewinds?: number;
  /**
   * A folded batch `[progress, pendingUntil)` is being written to the sink in several writes
   * (`beginBatch`); whoever holds the lease next must finish exactly that batch before any other.
   */
  pendingUntil?: number;
};

export type DataLossEntry = {
  stream: string;
  topic: string;
  partition: number;
  /** The exact lost span `[from, until)`. */
  from: number;
  until: number;
  detectedAtMs: number;
  reason: string;
  /** The partition incarnation the span belongs to (absent = 0). */
  incarnation?: number;
};

/** An update of one sink item (in `table`, else the stream's sink table). */
export type SinkUpdate = {
  table?: string;
  key: Record<string, unknown>;
  /** A DynamoDB UpdateExpression, e.g. `ADD #total :n`. */
  expression: string;
  names?: Record<string, string>;
  values?: Record<string, unknown>;
  condition?: SinkCondition;
};

/** A write to the exactly-once sink, applied in the same transaction as the progress it belongs to. */
export type SinkWrite =
  | { put: { table?: string; item: Record<string, unknown>; condition?: SinkCondition } }
  | { update: SinkUpdate }
  | { delete: { table?: string; key: Record<string, unknown>; condition?: SinkCondition } };

export type SinkCondition = { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };

/** A sink write that `applyMarkedSinkWrites` takes: an update without a condition of its own (its mark is its condition). */
export function isMarkableWrite(w: SinkWrite): w is Extract<SinkWrite, { update: unknown }> {
  return 'update' in w && !w.update.condition;
}

/**
 * What one commit may carry, as the store publishes it (`Ledger.limits`): the processor splits a chunk
 * whose sink writes do not fit, and sizes dead letters to fit one item. Both adapters refuse a commit
 * over them (CommitTooLargeError) before writing anything.
 */
export type LedgerLimits = {
  /** Sink writes in one `commitChunk` (beside the progress update and the chunk's dead letters). */
  maxSinkWrites: number;
  /** Their serialized size, in bytes of JSON. */
  maxSinkBytes: number;
  /** Sink writes in one `applyMarkedSinkWrites` call (one write per item). */
  maxMarkedWrites: number;
  /** Largest parts of a dead letter, raw bytes (before base64), so that one fits one stored item. */
  deadLetter: { maxValueBytes: number; maxKeyBytes: number; maxHeaderBytes: number; maxErrorChars: number };
};

/**
 * Why a range's lease cannot be taken now, as the contract of `takeRangeLease` orders the reasons
 * (missing, wrong `until`, done, parked, held, attempts used up); undefined when it can be taken.
 * Both ledgers judge the same way.
 */
export function leaseRefusal(
  range: RangeState | undefined,
  asked: { until: number; nowMs: number; maxAttempts: number },
): Exclude<LeaseOutcome, { kind: 'taken' }> | undefined {
  if (!range) return { kind: 'missing' };
  if (range.until !== asked.until) return { kind: 'mismatch', range };
  if (range.status === 'done') return { kind: 'done', range };
  if (range.status === 'parked') return { kind: 'parked', range };
  if (range.status === 'leased' && (range.leaseExpiresAtMs ?? 0) >= asked.nowMs) return { kind: 'held', range };
  if (range.attempts >= asked.maxAttempts) return { kind: 'exhausted', range };
  return undefined;
}

/** Whether `writes` fit one commit: at most `limits`' count and bytes, and one write per item (puts excepted). */
export function fitsOneCommit(writes: SinkWrite[], limits: LedgerLimits): boolean {
  if (writes.length > limits.maxSinkWrites) return false;
  const items = new Set<string>();
  let bytes = 0;
  for (const w of writes) {
    const spec = 'put' in w ? w.put : 'delete' in w ? w.delete : w.update;
    const key = 'put' in w ? w.put.item : 'key' in spec ? spec.key : {};
    const id = `${spec.table ?? ''}|${JSON.stringify(key)}`;
    if (items.has(id) && !('put' in w)) return false;
    items.add(id);
    bytes += JSON.stringify(w).length;
  }
  return bytes <= limits.maxSinkBytes;
}

/**
 * The applied-offset mark a folded batch leaves on every sink item it writes: the item has applied
 * the records of `stream`'s partition (this incarnation, after this many rewinds) below `until`. A
 * write carrying a mark is skipped when its item already holds the same mark at `until` or beyond,
 * so a batch written again (retry, duplicate, lease lost) never applies twice to an item.
 */
export type SinkMark = {
  stream: string;
  topic: string;
  partition: number;
  incarnation?: number;
  rewinds?: number;
  /** The batch's end offset (exclusive). */
  until: number;
};

/** What one `applyMarkedSinkWrites` call did: writes applied now, and writes whose item already had the mark. */
export type MarkedWritesOutcome = { applied: number; skipped: number };

/** A sink write's own condition failed: the handler asked for something the sink refuses; nothing was written. */
export class SinkConditionError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SINK_CONDITION', message, options);
  }
}

/** A commit over the store's published `limits`; nothing was written (the caller splits it). */
export class CommitTooLargeError extends AppError {
  constructor(writes: number, limits: LedgerLimits) {
    super(
      'COMMIT_TOO_LARGE',
      `${writes} sink writes do not fit one commit (at most ${limits.maxSinkWrites}, ${limits.maxSinkBytes} bytes, ` +
        'one write per item); nothing was written',
    );
  }
}

/** A record header as a dead letter stores it: its value as base64, null kept as null. */
export type DeadLetterHeader = { key: string; valueBase64: string | null };

/** What a dead letter holds: a copy of the record, or only its coordinates and error (personal data). */
export const DEAD_LETTER_CONTENTS = ['record', 'coordinates'] as const;
export type DeadLetterContents = (typeof DEAD_LETTER_CONTENTS)[number];

/** A record the handler kept rejecting, stored with its error instead of stalling the partition. */
export type DeadLetter = {
  stream: string;
  topic: string;
  partition: number;
  offset: number;
  timestampMs: number;
  /** Absent on dead letters stored before it was recorded (read them as CreateTime). */
  timestampType?: TimestampType;
  /** Base64 of key and value; values over the item limit are cut and flagged. */
  keyBase64: string | null;
  valueBase64: string | null;
  valueBytes: number;
  /** Key, value or headers were cut to fit the item limit (the full record is in Kafka while retention keeps it). */
  truncated: boolean;
  /** The record's headers in write order (repeated names, null values kept), or the leading ones that fit. */
  headers: DeadLetterHeader[];
  /** How many trailing headers were left out to fit the item limit (absent when none). */
  headersDropped?: number;
  error: string;
  attempts: number;
  rangeFrom: number;
  createdAtMs: number;
  /** Set when an operator re-drove it. */
  redrivenAtMs?: number;
  /** `coordinates`: key, value and headers were not stored (`null`/empty); Kafka holds the record. */
  kept: DeadLetterContents;
  /** When the store deletes it (DynamoDB TTL, which may lag by a few days); unset: kept until removed. */
  expiresAtMs?: number;
  /** The partition incarnation of the record (absent = 0). */
  incarnation?: number;
};

/** The result of trying to take a range's lease (KCL-style: conditional on what was seen). */
export type LeaseOutcome =
  | { kind: 'taken'; range: RangeState }
  /** Finished earlier: the caller returns its summary. */
  | { kind: 'done'; range: RangeState }
  /** Another processor holds an unexpired lease. */
  | { kind: 'held'; range: RangeState }
  | { kind: 'parked'; range: RangeState }
  /** The attempt limit is reached; the planner parks it. */
  | { kind: 'exhausted'; range: RangeState }
  /**
   * The range starting at `from` ends at `range.until`, not at the `until` asked for: the request
   * does not name a planned range (forged or stale payload). Nothing was written.
   */
  | { kind: 'mismatch'; range: RangeState }
  | { kind: 'missing' };

/** Range identity plus the lease token a processor holds. */
export type LeasedRange = {
  stream: string;
  topic: string;
  partition: number;
  from: number;
  until: number;
  leaseToken: string;
  /** The partition incarnation (absent = 0). */
  incarnation?: number;
};

/** A range's identity: topic, partition, incarnation (absent = 0) and start offset. */
export type RangeRef = Pick<RangeState, 'topic' | 'partition' | 'from' | 'incarnation'>;

export type ProcessorWriteOutcome = 'applied' | 'lease-lost';

export type PlannerLease =
  { acquired: true; epoch: number; meta: StreamMeta } | { acquired: false; holder: string; leaseExpiresAtMs: number };

/** One atomic, conditional change made by a planner run. */
export type PlanWrite =
  /** Persist a newly discovered partition (only if absent). */
  | { kind: 'register-partition'; partition: PartitionState }
  /** Persist a range and move the partition's cursor from `range.from` to `range.until`. */
  | {
      kind: 'plan-range';
      range: RangeState;
      partitionUpdate: { lastPlannedAtMs: number; pid?: PidState; backpressureRatePerSec?: number };
    }
  /**
   * The dispatcher accepted the range (first dispatch or a re-dispatch after expiry/failure). The
   * status is left alone: a processor that already took a fresh lease must keep it.
   */
  | {
      kind: 'mark-dispatched';
      range: RangeRef;
      expect: { dispatches: number };
      nowMs: number;
      /** The range's attempts as read, recorded as `redispatchedAtAttempts`. */
      attempts?: number;
    }
  /**
   * The dispatcher refused a new range this run had recorded as dispatched: clear the record so the
   * next run sends it at once.
   */
  | {
      kind: 'unmark-dispatch';
      range: RangeRef;
      expect: { dispatches: number };
    }
  /** Give up on a range after the attempt limit; it stays visible with its last error. */
  | {
      kind: 'park-range';
      range: RangeRef;
      expect: { status: RangeStatus; attempts: number };
      error: string;
    }
  | { kind: 'retire-partition'; topic: string; partition: number; reason: string; nowMs: number }
  | { kind: 'fail-partition'; topic: string; partition: number; reason: string; nowMs: number }
  /**
   * Retention deleted unprocessed offsets: record the exact span and continue from `loss.until`.
   * Only valid when nothing is in flight (`committed == nextFrom == expectFrom`).
   */
  | { kind: 'record-data-loss'; loss: DataLossEntry; expectFrom: number }
  /** Advance the committed offset over finished ranges (split ranges finishing out of order). */
  | { kind: 'advance-committed'; topic: string; partition: number; expect: number; to: number }
  /**
   * The topic was re-created under its name: record `closed`, remove the old incarnation's open
   * ranges (`closed.openRanges`, at most CLOSE_MAX_OPEN_RANGES) and replace the partition with `next`
   * (incarnation + 1), in one atomic write. Conditional on the partition as read: status,
   * incarnation, topic id, committed and nextFrom.
   */
  | { kind: 'close-incarnation'; closed: ClosedIncarnation; next: PartitionState }
  /** A ledger written before topic ids: record the id the partition has now (only if it has none). */
  | { kind: 'record-topic-id'; topic: string; partition: number; topicId: string; incarnation?: number };

export type WriteOutcome = 'applied' | 'condition-failed' | 'fenced';

/** Most open ranges a `close-incarnation` removes in its one atomic write (DynamoDB: 100 actions). */
export const CLOSE_MAX_OPEN_RANGES = 90;

/** One partition of an operator rewind: the cursor it expects to replace and where it moves. */
export type RewindPartition = {
  topic: string;
  partition: number;
  /** The partition's `committed` and `nextFrom` as read (I2: the write names what it replaces). */
  expect: { committed: number; nextFrom: number };
  /** New committed offset and planning cursor. */
  to: number;
  /** The partition's incarnation as read (absent = 0): its range items and dead letters are the ones removed. */
  incarnation?: number;
};

/** What a rewind removed besides moving cursors (reported to the operator). */
export type RewindOutcome =
  | { outcome: 'applied'; removedRanges: number; abandonedParkedRanges: number; removedDeadLetters: number }
  | { outcome: 'condition-failed'; reason: string }
  | { outcome: 'fenced' };

export type Ledger = PlannerLoopLease & {
  /** What one commit may carry (see LedgerLimits); the same for every adapter of one store. */
  readonly limits: LedgerLimits;
  readMeta(stream: string): Promise<StreamMeta | undefined>;
  /**
   * Takes the stream's planner lease if it is free or expired, bumping the epoch. Losing is a value:
   * another planner holds it (I5).
   */
  acquirePlannerLease(input: { stream: string; ownerToken: string; nowMs: number; leaseMs: number }): Promise<PlannerLease>;
  /**
   * Marks the stream started (once), fenced like planner writes, with the partitions its first run
   * could not register (`StreamMeta.pendingStart`; an empty or absent list records none).
   */
  markStreamStarted(input: {
    stream: string;
    epoch: number;
    ownerToken: string;
    nowMs: number;
    pendingStart?: PendingStart[];
  }): Promise<WriteOutcome>;
  /**
   * Frees the lease early (conditional on still holding `epoch`). `confirmDispatches` records that
   * this run recorded the outcome of every dispatch it made (`StreamMeta.confirmedEpoch`).
   */
  releasePlannerLease(input: { stream: string; epoch: number; ownerToken: string; confirmDispatches?: boolean }): Promise<WriteOutcome>;
  /** All partitions of a stream (strongly consistent). */
  readPartitions(stream: string): Promise<PartitionState[]>;
  /** Ranges not yet done (planned, leased, failed, parked). */
  readOpenRanges(stream: string): Promise<RangeState[]>;
  readRange(stream: string, r: RangeRef): Promise<RangeState | undefined>;
  readDataLoss(stream: string): Promise<DataLossEntry[]>;
  /** Closed incarnations of the stream's partitions (topics re-created under their name), oldest first per partition. */
  readClosedIncarnations(stream: string): Promise<ClosedIncarnation[]>;
  /**
   * Applies planner writes fenced by `epoch`, batching as the store allows. Each write is atomic on
   * its own; outcomes are returned in input order. Once one write reports `'fenced'`, every write
   * after it is `'fenced'` too and nothing more is written.
   */
  applyPlan(input: { stream: string; epoch: number; ownerToken: string; writes: PlanWrite[] }): Promise<WriteOutcome[]>;

  // Processor side. Every write is conditional on the lease token (I3) and the progress it replaces (I2).

  readPartition(stream: string, topic: string, partition: number): Promise<PartitionState | undefined>;
  /**
   * Takes the range's lease if it is planned, failed, or leased with an expired lease, and fewer than
   * `maxAttempts` leases were taken; counts the attempt. The range must end at `until` (checked by
   * the same conditional write): otherwise the outcome is `mismatch` and nothing changes, so a forged
   * or stale request neither counts an attempt nor holds a lease.
   */
  takeRangeLease(input: {
    stream: string;
    topic: string;
    partition: number;
    from: number;
    until: number;
    /** The partition incarnation of the range (absent = 0). */
    incarnation?: number;
    leaseToken: string;
    nowMs: number;
    leaseMs: number;
    maxAttempts: number;
  }): Promise<LeaseOutcome>;
  /**
   * Moves progress from `expectProgress` to `to` and renews the lease, together with the chunk's sink
   * writes and dead letters, in one transaction (I4). Clears `pendingUntil`; while one is set, `to`
   * must equal it (otherwise `lease-lost`: the caller's view of the range is stale). Sink writes over `limits` throw CommitTooLargeError,
   * a sink write's own failed condition throws SinkConditionError; either way nothing was written.
   */
  commitChunk(input: {
    range: LeasedRange;
    expectProgress: number;
    to: number;
    nowMs: number;
    leaseMs: number;
    sinkWrites?: SinkWrite[];
    deadLetters?: DeadLetter[];
    /** Retention removed `[expectProgress, to)` before it was read: record the span (failOnDataLoss=false). */
    dataLoss?: DataLossEntry;
  }): Promise<ProcessorWriteOutcome>;
  /**
   * Records that the folded batch `[expectProgress, until)` is being written (`pendingUntil`) and
   * renews the lease, conditional on the lease and progress (and on no other batch pending).
   */
  beginBatch(input: {
    range: LeasedRange;
    expectProgress: number;
    until: number;
    nowMs: number;
    leaseMs: number;
  }): Promise<ProcessorWriteOutcome>;
  /**
   * Applies `update` sink writes to distinct items, each guarded by `mark`: an item whose mark is
   * already at or past `mark.until` is skipped, any other gets its update and the mark, atomically
   * per item. Not conditional on the lease: a write of a batch that was finished elsewhere finds its
   * mark and changes nothing. At most `limits.maxMarkedWrites` writes; over it, CommitTooLargeError.
   */
  applyMarkedSinkWrites(input: { mark: SinkMark; writes: SinkWrite[] }): Promise<MarkedWritesOutcome>;
  /**
   * Marks the range done at `until` (from `expectProgress`), and advances the partition's committed
   * offset from `range.from` when `advancePartition` (one range in flight per partition).
   */
  completeRange(input: {
    range: LeasedRange;
    expectProgress: number;
    nowMs: number;
    stats: RangeStats;
    observedRecordsPerSec?: number;
    advancePartition: boolean;
  }): Promise<ProcessorWriteOutcome>;
  /** Records a failure: `failed` (the planner re-dispatches) or `parked` (needs an operator). */
  failRange(input: { range: LeasedRange; status: 'failed' | 'parked'; error: string; nowMs: number }): Promise<ProcessorWriteOutcome>;
  /** Gives the range back before the deadline, keeping its progress; the planner dispatches it again. */
  releaseRange(input: { range: LeasedRange; nowMs: number; progressed: boolean }): Promise<ProcessorWriteOutcome>;
  listDeadLetters(stream: string): Promise<DeadLetter[]>;

  // Operator side (CLI). Fenced like planner writes: the caller holds the stream's planner lease.

  /**
   * Moves partitions' cursors to `to` (committed = nextFrom = to) for an operator rewind, fenced by
   * the planner epoch, and records `change` on the META item. Refused (`condition-failed`, nothing
   * changed) unless each partition still has the expected cursor, is not retired, and every range at
   * or after its committed offset is parked (nothing in flight). A failed partition becomes active
   * again. Parked ranges there are abandoned, and range items and dead letters at or after the new
   * cursor are removed, since those offsets will be planned (with the same range keys) and processed again.
   */
  rewindPartitions(input: {
    stream: string;
    epoch: number;
    ownerToken: string;
    partitions: RewindPartition[];
    change: OperatorChange;
  }): Promise<RewindOutcome>;
  /** Records an operator change (replay creation, ...) on the META item, fenced by the planner epoch. */
  recordChange(input: { stream: string; epoch: number; ownerToken: string; change: OperatorChange }): Promise<WriteOutcome>;
  /** Marks a bounded stream finished (once), fenced like planner writes; `condition-failed` if already marked. */
  markStreamFinished(input: { stream: string; epoch: number; ownerToken: string; nowMs: number }): Promise<WriteOutcome>;
  /**
   * Marks a dead letter re-driven (`redrivenAtMs`), together with the handler's sink writes for it
   * in one transaction (exactly-once re-drive). `condition-failed` when it is missing or was already
   * re-driven: then nothing was written. A sink write's own failed condition throws SinkConditionError.
   */
  redriveDeadLetter(input: {
    stream: string;
    topic: string;
    partition: number;
    offset: number;
    /** The dead letter's partition incarnation (absent = 0). */
    incarnation?: number;
    nowMs: number;
    sinkWrites?: SinkWrite[];
  }): Promise<'applied' | 'condition-failed'>;
};
