/**
 * Port: the ledger, the only state of the system (DynamoDB in production, a Map in unit tests).
 *
 * Every mutation is conditional on the value it replaces (invariant I2); planner writes are also
 * fenced by the planner epoch (I5). A lost condition is reported as a value (`'condition-failed'`,
 * `'fenced'`), never thrown: the caller re-reads and decides, like the KCL's lease table.
 * The `nowMs` of every lease decision (taking, renewing) is a `StoreClock` reading.
 */
import type { RangeCompletion } from './ledger-rules/range-write';
import type { PidState } from '../offsets/pid';
import type { LedgerLimits } from './commit-limits';
import type {
  ClosedIncarnation,
  DataLossEntry,
  DeadLetter,
  DeadLetterRef,
  DestinationKind,
  LeasedRange,
  OperatorChange,
  PartitionState,
  PendingDelivery,
  PendingStart,
  RangeRef,
  RangeState,
  RangeStatus,
  StreamMeta,
} from './ledger-state';
import type { PlannerLoopLease, PlannerTickChain } from './planner-loop';
import type { MarkedWritesOutcome, SinkMark, SinkWrite } from './sink-write';

/**
 * The store's current time (epoch ms) as this process estimates it. Every lease (planner and range)
 * is judged and written on it, never on a process's own clock, so two processes whose clocks
 * disagree cannot both hold one lease. May cost a request the first time (DynamoDB: a probe whose
 * response `Date` header calibrates the local clock). See docs/architecture.md, "Clocks".
 */
export type StoreClock = () => Promise<number>;

/** The result of trying to take a range's lease (KCL-style: conditional on what was seen). */
export type LeaseOutcome =
  /** Taken: the range as it is now, and its partition's observed rates (the inputs of the completion's). */
  | { kind: 'taken'; range: RangeState; observed?: ObservedRates }
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

export type ProcessorWriteOutcome = 'applied' | 'lease-lost';

/** A partition's processing rates as observed by its processors (EWMA): the planner's time budget and invocation sharing. */
export type ObservedRates = { observedRecordsPerSec?: number; observedBytesPerRecord?: number };

/** One range a processor asks the lease of (`takeRangeLeases`). */
export type LeaseRequest = {
  topic: string;
  partition: number;
  from: number;
  until: number;
  /** The partition incarnation of the range (absent = 0). */
  incarnation?: number;
  /** Where the store keeps it (`RangeState.shard`), when the payload said. */
  shard?: string;
};

/** A range's completion (`completeRange`, `completeRanges`): the rules' completion, and whether it advances the partition. */
export type RangeCompletionInput = RangeCompletion & { advancePartition: boolean };

export type PlannerLease =
  { acquired: true; epoch: number; meta: StreamMeta } | { acquired: false; holder: string; leaseExpiresAtMs: number };

/**
 * A planner lease a loop's tick kept instead of releasing it: the next tick of the same loop takes it
 * over in the write that takes its own (one write a tick, not two), recording whether the kept tick
 * confirmed its dispatches.
 */
export type KeptPlannerLease = { epoch: number; ownerToken: string; confirmDispatches: boolean };

/** One atomic, conditional change made by a planner run. */
export type PlanWrite =
  /** Persist a newly discovered partition (only if absent). */
  | { kind: 'register-partition'; partition: PartitionState }
  /**
   * Persist a range and move the partition's cursor from `range.from` to `range.until`, with the
   * partition's backpressure state, and move the partition's finished ranges `archive` into the history.
   */
  | {
      kind: 'plan-range';
      range: RangeState;
      partitionUpdate?: { pid?: PidState; backpressureRatePerSec?: number };
      archive?: RangeState[];
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
  | { kind: 'close-incarnation'; closed: ClosedIncarnation; next: PartitionState; archive?: RangeState[] }
  /** A ledger written before topic ids: record the id the partition has now (only if it has none). */
  | { kind: 'record-topic-id'; topic: string; partition: number; topicId: string; incarnation?: number }
  /**
   * A stream switched from continuous mode back to micro-batches: remove an open segment range and
   * move its partition's planning cursor from OPEN_UNTIL to the range's progress, where micro-batches
   * go on. Conditional on the range as read (open, at `expect.progress`, no folded batch pending)
   * and on the partition (active, of the range's incarnation, cursor open, committed at that progress).
   */
  | { kind: 'end-segment'; range: RangeRef; expect: { progress: number } };

export type WriteOutcome = 'applied' | 'condition-failed' | 'fenced';

/**
 * How long after a dead letter is written its pending deliveries wait before the planner may retry
 * them: the processor that wrote it tries them itself right after the commit.
 */
export const DELIVERY_GRACE_MS = 60_000;

/** How long the ledger keeps archived ranges (`readRangeHistory`). */
export const RANGE_HISTORY_DAYS = 7;

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

export type Ledger = PlannerLoopLease &
  PlannerTickChain & {
    /** What one commit may carry (see LedgerLimits); the same for every adapter of one store. */
    readonly limits: LedgerLimits;
    readMeta(stream: string): Promise<StreamMeta | undefined>;
    /**
     * Takes the stream's planner lease if it is free or expired, bumping the epoch. Losing is a value:
     * another planner holds it (I5).
     */
    acquirePlannerLease(input: {
      stream: string;
      ownerToken: string;
      nowMs: number;
      leaseMs: number;
      /** The lease the previous tick of this loop kept: taken over however long it still runs (its confirmation recorded). */
      previous?: KeptPlannerLease;
      /**
       * A loop holder this caller took the loop from after its loop lease expired (it died): a lease
       * one of its ticks kept (owner token `<loopOwner>:...`) is taken over too, not waited out.
       */
      deadLoopOwner?: string;
    }): Promise<PlannerLease>;
    /**
     * Asks for a planner lease held by a loop between its ticks (an operator): recorded on the stream
     * (`StreamMeta.leaseWanted`), the loop releases its lease after its current tick instead of keeping it.
     */
    requestPlannerLease(input: { stream: string; ownerToken: string }): Promise<void>;
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
    /** All partitions of a stream and the ranges in their live state (`readRanges`), read together (strongly consistent). */
    readPartitionsAndRanges(stream: string): Promise<{ partitions: PartitionState[]; ranges: RangeState[] }>;
    /** Ranges not yet done (planned, leased, failed, parked). */
    readOpenRanges(stream: string): Promise<RangeState[]>;
    /**
     * The ranges in the partitions' live state (strongly consistent): the open ones and the finished
     * ones the planner has not archived yet (a partition's newest finished range stays until its next
     * range is planned).
     */
    readRanges(stream: string): Promise<RangeState[]>;
    /**
     * Archived ranges (finished, moved out of their partition's live state by the planner), oldest
     * first, kept for `RANGE_HISTORY_DAYS`; with `sinceMs`, those archived since. A range may appear
     * twice (an archive write repeated after a crash): callers take each identity once.
     */
    readRangeHistory(stream: string, opts?: { sinceMs?: number }): Promise<RangeState[]>;
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
     * A dead letter naming `deliveries` is written with one pending delivery per destination, due
     * `DELIVERY_GRACE_MS` after it was dead-lettered (the processor tries them itself first).
     * `to` may equal `expectProgress`: the lease is renewed, nothing moves.
     *
     * An open segment range (`isOpenRange`, continuous mode) is never completed: each of its commits
     * also moves its partition's committed offset from `expectProgress` to `to` (conditional on it
     * standing there and on the range's incarnation; `lease-lost` otherwise, nothing written) and
     * records `RangeState.lastCommitAtMs`.
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
    completeRange(input: RangeCompletionInput): Promise<ProcessorWriteOutcome>;
    /**
     * `takeRangeLease` for several ranges with one token, in as few writes as the store allows (one per
     * shard): each range's outcome as its own take would have had it, in input order.
     */
    takeRangeLeases(input: {
      stream: string;
      ranges: LeaseRequest[];
      leaseToken: string;
      nowMs: number;
      leaseMs: number;
      maxAttempts: number;
    }): Promise<LeaseOutcome[]>;
    /** `completeRange` for several ranges, in as few writes as the store allows (one per shard): outcomes in input order. */
    completeRanges(input: RangeCompletionInput[]): Promise<ProcessorWriteOutcome[]>;
    /**
     * `commitChunk` of progress alone (no sink writes, dead letters or data loss: those take
     * `commitChunk`) for several ranges of one stream, in as few writes as the store allows (one per
     * shard: DynamoDB, one UpdateItem per group item), not atomic across ranges: each outcome is the
     * one its own `commitChunk` would have had, in input order, and a lost lease leaves the others
     * applied. A commit may keep progress where it is (`to === expectProgress`): it renews the lease
     * only (a heartbeat of an idle open range; an open range's `lastCommitAtMs` is set by it too).
     * Two commits of one range in one call, or ranges of several streams, are refused
     * (ValidationError, nothing written).
     */
    commitChunks(
      inputs: Array<{ range: LeasedRange; expectProgress: number; to: number; nowMs: number; leaseMs: number }>,
    ): Promise<ProcessorWriteOutcome[]>;
    /**
     * Records a failure: `failed` (the planner re-dispatches) or `parked` (needs an operator). A
     * `failed` attempt that committed progress first (`progressed`) gives its attempt back, as a
     * release does: the attempt limit stops a range that cannot move, not one that moves between
     * transient failures (a resident segment meets several over a long run).
     */
    failRange(input: {
      range: LeasedRange;
      status: 'failed' | 'parked';
      error: string;
      nowMs: number;
      progressed?: boolean;
    }): Promise<ProcessorWriteOutcome>;
    /**
     * Gives the range back before the deadline, keeping its progress; the planner dispatches it again
     * at its next run (the dispatch record is removed). Not a failed attempt when it `progressed`.
     *
     * `handover`: the holder has already dispatched its successor itself (continuous mode, at the end
     * of its time budget). The range is `planned`, its lease dropped, and recorded as dispatched now
     * (`dispatchedAtMs = nowMs`, `dispatches` unchanged): the planner treats it as dispatched and not
     * yet started, sending it again only if no processor takes it within the lease time. The attempt
     * is given back whether or not it progressed. Another processor may take the lease at once.
     */
    releaseRange(input: { range: LeasedRange; nowMs: number; progressed: boolean; handover?: boolean }): Promise<ProcessorWriteOutcome>;
    listDeadLetters(stream: string): Promise<DeadLetter[]>;
    /** One dead letter (strongly consistent), or undefined when it is gone (expired, rewound). */
    readDeadLetter(stream: string, ref: DeadLetterRef): Promise<DeadLetter | undefined>;

    // The outbox: deliveries of dead letters to failure destinations. `commitChunk` writes one
    // pending delivery per destination a dead letter names (`DeadLetter.deliveries`), in its transaction.

    /**
     * Pending deliveries of the stream in key order: all of them, or with `dueAtMs` only those whose
     * `nextAttemptAtMs` has come, at most `limit`. Cheap when there are none (DynamoDB: one Query).
     */
    readPendingDeliveries(input: { stream: string; dueAtMs?: number; limit?: number }): Promise<PendingDelivery[]>;
    /** The destination has the dead letter: removes its pending delivery (`condition-failed` when already removed). */
    completeDelivery(input: { stream: string; ref: DeadLetterRef; destination: DestinationKind }): Promise<'applied' | 'condition-failed'>;
    /**
     * A delivery attempt failed: counts it and sets when to try again, conditional on the attempts as
     * read (`condition-failed` when another attempt was counted meanwhile, or the delivery is gone).
     */
    postponeDelivery(input: {
      stream: string;
      ref: DeadLetterRef;
      destination: DestinationKind;
      expectAttempts: number;
      nextAttemptAtMs: number;
      error: string;
    }): Promise<'applied' | 'condition-failed'>;

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
