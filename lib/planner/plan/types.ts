/** The shapes of the planner's pure decision: what a run read (its input), what it decided, and what the phases share. */
import type { StreamConfig } from '../../config/schema';
import type { PartitionClampInput } from '../../offsets';
import type { PartitionOffsets, TopicPartitions, UnavailableCode } from '../../ports/kafka-metadata';
import type { PlanWrite } from '../../ports/ledger';
import type { ClosedIncarnation, PartitionState, PendingStart, RangeState } from '../../ports/ledger-state';
import type { StartReads } from '../start/strategy';
import type { ProcessorConcurrency } from '../concurrency-cap';

export type PlanInput = {
  stream: StreamConfig;
  nowMs: number;
  epoch: number;
  /**
   * True on the stream's first run (until it is marked started): new partitions start at
   * `startingOffsets`. Afterwards only those of `pendingStart` do; a partition of a topic that
   * appeared since starts at `newTopics`, one added to a known topic at earliest (see start/rule.ts).
   */
  initial: boolean;
  /** Partitions the first run found but could not register (`StreamMeta.pendingStart`). */
  pendingStart?: PendingStart[];
  known: PartitionState[];
  discovered: TopicPartitions[];
  offsets: PartitionOffsets[];
  /**
   * What the run read for the new partitions' start positions (the look-ups their strategies ask
   * for, start/lookups.ts), by partition key, handed to their strategies as read; a partition whose
   * strategy finds its answer missing here waits for a later run.
   */
  startReads?: Map<string, StartReads>;
  openRanges: RangeState[];
  /** Finished ranges still in their partitions' live state: archived by the write that next changes their partition. */
  finishedRanges?: RangeState[];
  /** The last epoch that confirmed its dispatches (`StreamMeta.confirmedEpoch`). */
  confirmedEpoch?: number;
  /** The processors this stream shares with the planner's other streams (its share caps its open ranges). */
  processorConcurrency?: ProcessorConcurrency;
};

/** What happened to one partition in this run (for reports, metrics and `plan --dry-run`). */
export type PartitionReport = {
  topic: string;
  partition: number;
  status: PartitionState['status'] | 'new';
  earliest?: number;
  latest?: number;
  committed: number;
  nextFrom: number;
  /** latest - committed: records not yet processed. */
  lag: number;
  planned: Array<{ from: number; until: number }>;
  action:
    | 'registered'
    | 'planned'
    | 'idle'
    | 'in-flight'
    | 'waiting-for-min-offsets'
    /** Due, but the stream has as many ranges open as its cap allows: planned when a slot frees. */
    | 'waiting-for-concurrency'
    | 'retired'
    | 'failed'
    | 'data-loss'
    | 'inactive'
    | 'no-offsets'
    /** A bounded stream's partition committed up to its stop offset. */
    | 'finished'
    /** The topic was deleted and re-created under its name: the old incarnation is closed, the new one registered. */
    | 'recreated';
  note?: string;
  /** Why the offsets could not be read this run (action `no-offsets`), when the look-up said. */
  unavailable?: UnavailableCode;
  /** The look-up's one-line reason with `unavailable` (e.g. which leader broker did not answer). */
  unavailableReason?: string;
  /** Bounded streams (replays): where this partition stops. */
  stopOffset?: number;
};

export type RedispatchReason = 'never-dispatched' | 'dispatch-unconfirmed' | 'not-started' | 'lease-expired' | 'failed';

export type PlanDecision = {
  /** Partitions to persist before anything is planned for them. */
  registrations: PartitionState[];
  /** A first run: the partitions found but not registered (no offsets yet), recorded with the start mark. */
  pendingStart: PendingStart[];
  /** Retire, fail, data-loss and range writes, in the order they must apply. */
  writes: PlanWrite[];
  /** Ranges newly planned in `writes` (to dispatch once persisted). */
  newRanges: RangeState[];
  /** Existing open ranges to dispatch again, and why. */
  redispatch: Array<{ range: RangeState; reason: RedispatchReason }>;
  /** Ranges that reached the attempt limit. */
  parks: PlanWrite[];
  /** Partitions whose committed offset lags the cursor with no open range at it: check the range there. */
  checkCommitted: PartitionState[];
  partitions: PartitionReport[];
  recordsPlanned: number;
  /**
   * A bounded stream (its partitions have stop offsets, e.g. a replay) whose every partition is
   * committed up to its stop offset or retired: nothing is left to plan, ever.
   */
  finished: boolean;
  /** Incarnations closed by `writes` (topics re-created under their name). */
  recreated: ClosedIncarnation[];
  /** Topics were found but the broker gave none of them an id: re-creation is detected only by offset regression. */
  noTopicIds: boolean;
  /** Continuous streams: partitions without a live segment at `nowMs` (plan/segments.ts; the `SegmentsMissing` metric). */
  segmentsMissing?: number;
};

/**
 * What the phases decided so far: the writes in the order they must apply, each partition's latest
 * report, and what to say about where a partition registered this run starts.
 */
export type Draft = { writes: PlanWrite[]; reports: Map<string, PartitionReport>; startNotes: Map<string, string> };

/** A partition to clamp: its clamp input and the backpressure state to persist with its range. */
export type Eligible = {
  p: PartitionState;
  input: PartitionClampInput;
  pidUpdate?: Pick<PartitionState, 'pid' | 'backpressureRatePerSec'>;
};
