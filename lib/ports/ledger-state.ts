/**
 * The ledger's state types: the stream's META, partitions, ranges, closed incarnations, data-loss
 * entries and dead letters, as every adapter reads and writes them (ports/ledger.ts).
 */
import type { PidState } from '../offsets/pid';
import type { PlannerLoopState, TickChainState } from './planner-loop';
import type { TimestampType } from './range-reader';

export type StreamMeta = {
  stream: string;
  /** Incremented by every planner run that takes the lease; planner writes check it. */
  epoch: number;
  ownerToken: string;
  leaseExpiresAtMs: number;
  /**
   * Set once the stream's initial partitions are registered: later partitions start at earliest (or
   * their group's offset), those of topics with no partition registered at `newTopics`.
   */
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
  /**
   * Who waits for the planner lease a loop keeps between ticks (an operator); cleared by the next
   * take that is not a loop's take-over of its kept lease.
   */
  leaseWanted?: string;
  /** The planner loop: which scheduled invocation ticks the stream (see ports/planner-loop.ts). */
  loop?: PlannerLoopState;
  /** The tick chain, for a stream ticked by queue messages (see ports/planner-loop.ts). */
  tickChain?: TickChainState;
};

/** Partitions of one topic (and its topic id when the broker gave one) awaiting their start (`StreamMeta.pendingStart`). */
export type PendingStart = { topic: string; partitions: number[]; topicId?: string };

/** Who changed a stream by hand, when, and what they did (kept on the stream's META item). */
export type OperatorChange = { by: string; atMs: number; what: string };

export type PartitionStatus = 'active' | 'retired' | 'failed';

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
  /** When the partition was retired or failed. */
  statusChangedAtMs?: number;
  /** EWMA of processor throughput on this partition, records/s (time budget). */
  observedRecordsPerSec?: number;
  /** EWMA of the bytes (key, value, headers) of this partition's records: what sharing an invocation weighs. */
  observedBytesPerRecord?: number;
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
  /** Where the store keeps the partition's ranges (`RangeState.shard`, set by the store's adapter); its new ranges carry it. */
  shard?: string;
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
  /** When done: how long the processor took, and how long the range waited for its first lease (`lastRange`). */
  processingMs?: number;
  schedulingDelayMs?: number;
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
  /** Open segment ranges (continuous mode): when its holder last committed (each commit also moves the partition's committed offset). */
  lastCommitAtMs?: number;
  /**
   * Where the store keeps the range, as the store's adapter names it (opaque to everyone else):
   * ranges of one shard are leased and completed in one write. Carried in the processor's payload
   * so the processor finds the range without a look-up.
   */
  shard?: string;
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

/** A record header as a dead letter stores it: its value as base64, null kept as null. */
export type DeadLetterHeader = { key: string; valueBase64: string | null };

/** What a dead letter holds: a copy of the record, or only its coordinates and error (personal data). */
export const DEAD_LETTER_CONTENTS = ['record', 'coordinates'] as const;
export type DeadLetterContents = (typeof DEAD_LETTER_CONTENTS)[number];

/** Why a record was dead-lettered. */
export const DEAD_LETTER_CAUSES = ['handler', 'undecodable', 'expired'] as const;
export type DeadLetterCause = (typeof DEAD_LETTER_CAUSES)[number];

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
  /**
   * Why it was dead-lettered: the handler kept rejecting it (absent on older items), it could not be
   * decoded with the stream's schema settings, or it was older than `maxRecordAgeMs`.
   */
  cause?: DeadLetterCause;
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
  /**
   * The stream's failure destinations when it was dead-lettered (`onFailure`): each is owed a
   * delivery, pending in the ledger until made (`PendingDelivery`). Absent: none configured.
   */
  deliveries?: DestinationKind[];
};

/** Where a dead letter is: its partition incarnation's topic, partition and offset. */
export type DeadLetterRef = { topic: string; partition: number; offset: number; incarnation?: number };

/**
 * Failure destinations, in the order a dead letter is delivered to them: S3 first, so a message
 * too large for SQS or SNS can name the object that holds the whole record.
 */
export const DESTINATION_KINDS = ['s3', 'kafka', 'sqs', 'sns'] as const;
export type DestinationKind = (typeof DESTINATION_KINDS)[number];

/**
 * A delivery of a dead letter to one failure destination not made yet (the ledger's outbox):
 * written with the dead letter in one commit, removed once the destination has the message.
 */
export type PendingDelivery = DeadLetterRef & {
  stream: string;
  destination: DestinationKind;
  /** Failed attempts so far. */
  attempts: number;
  /** Not retried before this (backoff after a failure). */
  nextAttemptAtMs: number;
  lastError?: string;
  createdAtMs: number;
  /** Expires with its dead letter (DynamoDB TTL). */
  expiresAtMs?: number;
};

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
  /** Where the store keeps it (`RangeState.shard`), when known. */
  shard?: string;
};

/** A range's identity: topic, partition, incarnation (absent = 0) and start offset; where the store keeps it, when known. */
export type RangeRef = Pick<RangeState, 'topic' | 'partition' | 'from' | 'incarnation' | 'shard'>;
