/**
 * Which rule places a partition the planner sees for the first time, as pure functions of what the
 * ledger holds and what Kafka said this run. Three rules, told apart from durable state only (the
 * stream's start mark, its pending starts and the partitions it has registered):
 *
 * - `startingOffsets`: a partition present at the stream's first run (or found by it but unreadable
 *   then, pending its start) starts at the stream's `startingOffsets`;
 * - `newTopics`: a partition of a topic that appeared after the first run (no partition of it
 *   registered or pending) starts at the stream's `newTopics`;
 * - `newPartition`: a partition added later to a topic the stream already reads starts at its
 *   earliest offset (FLIP-288: what was written before it was discovered is not lost), or, with
 *   `startingOffsets.fromGroup`, at the group's committed offset where the group has one.
 *
 * Where each rule then starts is a start position (strategies.ts).
 */
import type { TopicPartitions } from '../../ports/kafka-metadata';
import type { PartitionState, PendingStart } from '../../ports/ledger-state';
import { topicIdChanged } from '../../ports/ledger-rules/incarnation';
import { partitionKey } from '../../ranges';

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
