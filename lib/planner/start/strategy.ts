/**
 * What a start position is, as Flink's `OffsetsInitializer`: a strategy per variant of the stream's
 * `startingOffsets` and `newTopics`, declaring what it needs read (its look-ups) and telling, purely,
 * where a new partition starts from what was read, and what a partition not placed yet is told about
 * where it will start. The run (start/lookups.ts) reads only what the strategies ask, so neither it
 * nor the plan knows the variants.
 */
import type { IsolationLevel } from '../../config/schema';
import type { PartitionOffsets } from '../../ports/kafka-metadata';
import type { StartRule } from './rule';

/**
 * What a start position needs read for a new partition. Its earliest and latest offsets are not
 * a look-up of their own: every run reads them for every discovered partition (the plan needs them),
 * and a partition without them waits before any strategy is asked.
 */
export type StartLookup =
  /** Its offset for a timestamp (epoch milliseconds): the first record at or after it. */
  | { kind: 'timestamp'; timestampMs: number }
  /** Its committed offset in a consumer group. */
  | { kind: 'group'; group: string };

/**
 * What the run read of a consumer group for one partition: its committed offset (absent: the group
 * has none), and the high watermark when the committed offset lies past the end the planner reads
 * (the last stable offset under read_committed) and the look-up answered.
 */
export type GroupOffsetRead = { committed?: number; highWatermark?: number };

/**
 * What the run read for one new partition's look-ups, a field per look-up kind (`StartLookup`): the
 * plan passes it to the partition's strategy as read, so a strategy added with the look-ups there are
 * needs no field anywhere else.
 */
export type StartReads = {
  /** The answer of its `timestamp` look-up; undefined when the look-up could not serve it this run. */
  byTimestamp?: number | undefined;
  /** What was read for it of its `group` look-up's group; undefined when the group was not read this run. */
  group?: GroupOffsetRead | undefined;
};

/** What a new partition's start is told from: the partition, how the stream reads it, and what the run read for it. */
export type StartInputs = StartReads & {
  topic: string;
  partition: number;
  /** Earliest and latest (the last stable offset under read_committed), read for every partition. */
  offsets: PartitionOffsets;
  isolationLevel: IsolationLevel;
};

/** A start offset with what to tell the operator about it, or why the partition waits for a later run. */
export type Start = { offset: number; note?: string } | { wait: string };

/** One start position: `Spec` is its variant's value in the stream's config. */
export type StartStrategy<Kind extends string, Spec> = {
  kind: Kind;
  /** What must be read for a partition starting here (beyond its earliest and latest offsets). */
  lookups(spec: Spec): StartLookup[];
  /** Where the partition starts, from what was read (pure), or why it waits for a later run. */
  start(spec: Spec, inputs: StartInputs): Start;
  /**
   * What a partition that will start here, not registered this run, is told about where it will start
   * (why it waits is the plan's to say). `rule`: what placed it here (rule.ts). Placed by its own
   * setting, it is told the setting the operator configured; the earliest and fromGroup positions
   * also place partitions added to a known topic, which no setting names, so those are told the position.
   */
  whereItWillStart(spec: Spec, rule: StartRule): string;
  /**
   * Whether the partitions of a topic that appeared after the stream started (`newTopics`) all wait
   * until every one can be placed, and register in one run: one registered in a later run would count
   * as added to a known topic and start at earliest, not here. Only a position that is earliest anyway
   * lets them register one by one.
   */
  wholeTopic: boolean;
};
