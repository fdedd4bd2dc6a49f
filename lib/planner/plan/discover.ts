/**
 * Phase "discover" (starts): where each partition seen for the first time is registered, or why it
 * waits for a later run.
 */
import type { TopicPartitions } from '../../ports/kafka-metadata';
import type { PartitionState, PendingStart } from '../../ports/ledger-state';
import { partitionKey } from '../../ranges';
import { groupStart, newTopicStart, startGroup, startRule, type Start, type StartRule } from '../starts';
import type { PlanIndex } from './plan-index';
import { report } from './report';
import type { Draft, PartitionReport, PlanDecision, PlanInput } from './types';

/**
 * Discover: partitions seen for the first time are registered at their start offset (never in a
 * bounded stream; `starts.ts` says where). One whose start cannot be told this run (no offsets, or
 * no timestamp or group offset) waits for a later run; a first run returns those as pending their
 * start. A topic that appeared after the first run starts whole, in one run, unless `newTopics` is
 * earliest: a partition of it registered later would count as added to a known topic and start at
 * earliest, not at `newTopics`.
 */
export function discoverNew(input: PlanInput, ix: PlanIndex, draft: Draft): Pick<PlanDecision, 'registrations' | 'pendingStart'> {
  const registrations: PartitionState[] = [];
  const pendingStart: PendingStart[] = [];
  if (ix.bounded) return { registrations, pendingStart };
  for (const t of input.discovered) {
    const fresh = t.partitions.filter((partition) => !ix.known.has(partitionKey(t.topic, partition)));
    const placed = fresh.map((partition) => ({ partition, start: startOffsetFor(input, ix, t, partition) }));
    const waiting = placed.filter((x) => 'wait' in x.start).map((x) => x.partition);
    const whole = input.stream.newTopics !== 'earliest' && fresh.length > 0 && startRule(ix.starts, t, fresh[0]!) === 'newTopics';
    for (const { partition, start } of placed) {
      const k = partitionKey(t.topic, partition);
      if ('wait' in start || (whole && waiting.length)) {
        const why = 'wait' in start ? start.wait : `a new topic starts whole: partition ${waiting.join(', ')} not placed this run`;
        draft.reports.set(k, waitingReport(input, ix, t, partition, why));
        continue;
      }
      if (start.note) draft.startNotes.set(k, `starts at ${start.offset}: ${start.note}`);
      registrations.push(newPartition(input, t, partition, start.offset));
    }
    if (input.initial && waiting.length) pendingStart.push({ topic: t.topic, partitions: waiting, ...topicIdOf(t) });
  }
  return { registrations, pendingStart };
}

/** A partition registered this run at `start`. */
function newPartition({ stream, nowMs }: PlanInput, t: TopicPartitions, partition: number, start: number): PartitionState {
  return {
    stream: stream.id,
    topic: t.topic,
    partition,
    status: 'active',
    startOffset: start,
    committed: start,
    nextFrom: start,
    firstSeenAtMs: nowMs,
    ...topicIdOf(t),
  };
}

const topicIdOf = (t: TopicPartitions): { topicId?: string } => (t.topicId !== undefined ? { topicId: t.topicId } : {});

/** What a new partition not registered this run is told: where it will start. */
const WHERE_IT_STARTS: Record<StartRule, string> = {
  startingOffsets: 'present when the stream started, it will start at startingOffsets',
  newTopics: 'a topic that appeared after the stream started, it will start at newTopics',
  newPartition: 'it will start at earliest',
};

/** The report of a new partition not registered this run (`why`), saying where it will start. */
function waitingReport(input: PlanInput, ix: PlanIndex, t: TopicPartitions, partition: number, why: string): PartitionReport {
  const waiting = newPartition(input, t, partition, 0);
  const o = ix.offsets.get(partitionKey(t.topic, partition));
  const rule = startRule(ix.starts, t, partition);
  const group = startGroup(input.stream, rule);
  const where =
    rule === 'newPartition' && group !== undefined
      ? `it will start at the committed offset of group ${JSON.stringify(group)}, else earliest`
      : WHERE_IT_STARTS[rule];
  return { ...report(waiting, o, 'no-offsets', `not registered yet (${why}): ${where}`), status: 'new' };
}

/** Where a new partition starts (see starts.ts), or why it waits for a later run. */
function startOffsetFor(input: PlanInput, ix: PlanIndex, t: TopicPartitions, partition: number): Start {
  const { stream } = input;
  const k = partitionKey(t.topic, partition);
  const o = ix.offsets.get(k);
  if (!o) return { wait: 'no offsets this run' };
  const rule = startRule(ix.starts, t, partition);
  if (rule === 'newTopics') return newTopicStart(stream.newTopics, o, input.timestampOffsets?.get(k));
  const so = stream.startingOffsets;
  const group = startGroup(stream, rule);
  if (group !== undefined) {
    // A partition added to a known topic later falls back to earliest, as every later partition starts.
    const fallback = rule === 'startingOffsets' && typeof so === 'object' && 'fallback' in so ? so.fallback : 'earliest';
    return groupStart(group, input.groupOffsets?.get(k), o, fallback, stream.isolationLevel);
  }
  if (rule === 'newPartition' || so === 'earliest') return { offset: o.earliest };
  // The end when its offsets are first read: the start of a partition unreadable at the first run.
  if (so === 'latest') return { offset: o.latest };
  if ('timestampMs' in so) {
    const at = input.timestampOffsets?.get(k);
    return at === undefined ? { wait: 'no start offset by timestamp this run' } : { offset: at };
  }
  const explicit = 'offsets' in so ? so.offsets[t.topic]?.[String(partition)] : undefined;
  // A partition the map does not name starts at earliest; an offset past the end starts at the end.
  return { offset: explicit === undefined ? o.earliest : Math.min(explicit, o.latest) };
}
