/**
 * Where a partition the planner sees for the first time starts (registration), as pure functions of
 * what the ledger holds and what Kafka said this run. Three rules, told apart from durable state only
 * (the stream's start mark, its pending starts and the partitions it has registered):
 *
 * - `startingOffsets`: a partition present at the stream's first run (or found by it but unreadable
 *   then, pending its start) starts at the stream's `startingOffsets`;
 * - `newTopics`: a partition of a topic that appeared after the first run (no partition of it
 *   registered or pending) starts at the stream's `newTopics`;
 * - `newPartition`: a partition added later to a topic the stream already reads starts at its
 *   earliest offset (FLIP-288: what was written before it was discovered is not lost), or, with
 *   `startingOffsets.fromGroup`, at the group's committed offset where the group has one.
 */
import type { NewTopicsStart, StartingOffsets, StreamConfig } from '../config/schema';
import type { PartitionOffsets, TopicPartitions } from '../ports/kafka-metadata';
import type { PartitionState, PendingStart } from '../ports/ledger-state';
import { topicIdChanged } from '../ports/ledger-rules/incarnation';
import { partitionKey } from '../ranges';

export type StartRule = 'startingOffsets' | 'newTopics' | 'newPartition';

/** Partitions pending their start by key (`partitionKey`), with the topic id recorded for them. */
export type PendingIndex = Map<string, { topicId?: string }>;

/** What the start rule of a new partition depends on, indexed once per run. */
export type StartContext = {
  /** The stream's first run (not marked started yet). */
  initial: boolean;
  pending: PendingIndex;
  /** Topics with a partition registered (any status or incarnation) or pending its start. */
  knownTopics: Set<string>;
};

/** The partitions pending their start, by key. */
export function pendingIndex(pending: PendingStart[] = []): PendingIndex {
  const ix: PendingIndex = new Map();
  for (const t of pending) {
    for (const p of t.partitions) ix.set(partitionKey(t.topic, p), t.topicId !== undefined ? { topicId: t.topicId } : {});
  }
  return ix;
}

/** The start context of a run from the stream's start mark, its pending starts and its registered partitions. */
export function startContext(initial: boolean, pendingStart: PendingStart[] | undefined, known: PartitionState[]): StartContext {
  const knownTopics = new Set(known.map((p) => p.topic));
  for (const t of pendingStart ?? []) knownTopics.add(t.topic);
  return { initial, pending: pendingIndex(pendingStart), knownTopics };
}

/**
 * Whether a partition seen for the first time starts at the stream's `startingOffsets`: on its
 * first run, and later when that run found it but could not read it (pending its start), unless
 * its topic id changed since (a topic re-created in between appeared after the start).
 */
export function startsAtStartingOffsets(initial: boolean, pending: PendingIndex, t: TopicPartitions, partition: number): boolean {
  if (initial) return true;
  const recorded = pending.get(partitionKey(t.topic, partition));
  if (!recorded) return false;
  return !topicIdChanged(recorded.topicId, t.topicId);
}

/** Which rule places a partition seen for the first time (see the module comment). */
export function startRule(ctx: StartContext, t: TopicPartitions, partition: number): StartRule {
  if (startsAtStartingOffsets(ctx.initial, ctx.pending, t, partition)) return 'startingOffsets';
  return ctx.knownTopics.has(t.topic) ? 'newPartition' : 'newTopics';
}

/** The timestamp a new partition's start offset is looked up at under `rule`, if any. */
export function startTimestampMs(stream: Pick<StreamConfig, 'startingOffsets' | 'newTopics'>, rule: StartRule): number | undefined {
  const spec: StartingOffsets | NewTopicsStart | undefined =
    rule === 'startingOffsets' ? stream.startingOffsets : rule === 'newTopics' ? stream.newTopics : undefined;
  return typeof spec === 'object' && 'timestampMs' in spec ? spec.timestampMs : undefined;
}

/** The consumer group whose committed offset places a new partition under `rule`, if any (`startingOffsets.fromGroup`). */
export function startGroup(stream: Pick<StreamConfig, 'startingOffsets'>, rule: StartRule): string | undefined {
  const so = stream.startingOffsets;
  if (rule === 'newTopics' || typeof so !== 'object' || !('fromGroup' in so)) return undefined;
  return so.fromGroup;
}

/**
 * What the run read of a consumer group for one partition: its committed offset (absent: the group
 * has none), and the high watermark when the committed offset lies past the end the planner reads
 * (the last stable offset under read_committed) and the look-up answered.
 */
export type GroupOffsetRead = { committed?: number; highWatermark?: number };

/** A start offset with what to tell the operator about it, or why the partition waits for a later run. */
export type Start = { offset: number; note?: string } | { wait: string };

/**
 * Where a partition starts from consumer group `group` (`read`: what the run read of it; undefined
 * when it was not read this run), with `fallback` where the group has no usable offset, as Kafka's
 * consumer applies `auto.offset.reset` and Flink's `committedOffsets(resetStrategy)`:
 *
 * - no committed offset: the fallback (earliest, or the end);
 * - within the log: the committed offset;
 * - below the log start (retention deleted what the group had not read): the committed offset, so the
 *   planner's data-loss check applies to the span at once (failOnDataLoss fails the partition, or the
 *   exact lost span is recorded and reading continues at the log start), never a silent skip;
 * - past the high watermark (a log truncated or re-created since the commit): out of range, the fallback;
 * - past the last stable offset but not the high watermark (read_committed, a transaction open that
 *   the group's consumer read uncommitted): the partition waits until the offset is stable, then starts
 *   exactly there.
 */
export function groupStart(
  group: string,
  read: GroupOffsetRead | undefined,
  o: PartitionOffsets,
  fallback: 'earliest' | 'latest',
  isolationLevel: StreamConfig['isolationLevel'],
): Start {
  const name = JSON.stringify(group);
  if (!read) return { wait: `committed offsets of group ${name} not read this run` };
  const fallbackOffset = fallback === 'earliest' ? o.earliest : o.latest;
  const { committed } = read;
  if (committed === undefined) {
    return { offset: fallbackOffset, note: `group ${name} has no committed offset: fallback ${fallback} (${fallbackOffset})` };
  }
  if (committed < o.earliest) {
    return { offset: committed, note: `committed offset ${committed} of group ${name} is below the log start ${o.earliest}` };
  }
  if (committed <= o.latest) return { offset: committed, note: `committed offset ${committed} of group ${name}` };
  const highWatermark = isolationLevel === 'read_uncommitted' ? o.latest : read.highWatermark;
  if (highWatermark === undefined) return { wait: `committed offset ${committed} of group ${name} is past the end ${o.latest}` };
  const past = `committed offset ${committed} of group ${name} is past`;
  if (committed <= highWatermark) {
    return { wait: `${past} the last stable offset ${o.latest} (a transaction is open): starts there once stable` };
  }
  return { offset: fallbackOffset, note: `${past} the end ${highWatermark} (out of range): fallback ${fallback} (${fallbackOffset})` };
}

/** Where a partition of a topic that appeared after the stream's first run starts (`newTopics`); `byTimestamp`: its look-up. */
export function newTopicStart(spec: NewTopicsStart, o: PartitionOffsets, byTimestamp: number | undefined): Start {
  if (spec === 'earliest') return { offset: o.earliest };
  if (spec === 'latest') return { offset: o.latest, note: 'a topic that appeared after the stream started: newTopics latest' };
  if (byTimestamp === undefined) return { wait: 'no start offset by timestamp this run' };
  return { offset: byTimestamp, note: `a topic that appeared after the stream started: newTopics timestampMs ${spec.timestampMs}` };
}
