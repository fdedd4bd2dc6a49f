/**
 * Phase "discover" (starts): where each partition seen for the first time is registered, or why it
 * waits for a later run.
 */
import type { TopicPartitions } from '../../ports/kafka-metadata';
import type { PartitionState, PendingStart } from '../../ports/ledger-state';
import { partitionKey } from '../../ranges';
import { startRule } from '../start/rule';
import { startAt, startPosition, startsWholeTopic, whereItWillStart } from '../start/strategies';
import type { Start } from '../start/strategy';
import type { PlanIndex } from './plan-index';
import { report } from './report';
import type { Draft, PartitionReport, PlanDecision, PlanInput } from './types';

/**
 * Discover: partitions seen for the first time are registered at their start offset (never in a
 * bounded stream; `start/` says where). One whose start cannot be told this run (no offsets, or
 * no timestamp or group offset) waits for a later run; a first run returns those as pending their
 * start. A topic that appeared after the first run starts whole, in one run, unless its position
 * says otherwise (`StartStrategy.wholeTopic`: only earliest): a partition of it registered later
 * would count as added to a known topic and start at earliest, not at `newTopics`.
 */
export function discoverNew(input: PlanInput, ix: PlanIndex, draft: Draft): Pick<PlanDecision, 'registrations' | 'pendingStart'> {
  const registrations: PartitionState[] = [];
  const pendingStart: PendingStart[] = [];
  if (ix.bounded) return { registrations, pendingStart };
  for (const t of input.discovered) {
    const fresh = t.partitions.filter((partition) => !ix.known.has(partitionKey(t.topic, partition)));
    const placed = fresh.map((partition) => ({ partition, start: startOffsetFor(input, ix, t, partition) }));
    const waiting = placed.filter((x) => 'wait' in x.start).map((x) => x.partition);
    const whole = fresh.length > 0 && startsWholeTopic(startPosition(input.stream, startRule(ix.starts, t, fresh[0]!)));
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

/** The report of a new partition not registered this run (`why`), saying where it will start (as its strategy says). */
function waitingReport(input: PlanInput, ix: PlanIndex, t: TopicPartitions, partition: number, why: string): PartitionReport {
  const waiting = newPartition(input, t, partition, 0);
  const o = ix.offsets.get(partitionKey(t.topic, partition));
  const rule = startRule(ix.starts, t, partition);
  const where = whereItWillStart(startPosition(input.stream, rule), rule);
  return { ...report(waiting, o, 'no-offsets', `not registered yet (${why}): ${where}`), status: 'new' };
}

/** Where a new partition starts (its start rule's position, start/strategies.ts), or why it waits for a later run. */
function startOffsetFor(input: PlanInput, ix: PlanIndex, t: TopicPartitions, partition: number): Start {
  const { stream } = input;
  const k = partitionKey(t.topic, partition);
  const o = ix.offsets.get(k);
  if (!o) return { wait: 'no offsets this run' };
  const position = startPosition(stream, startRule(ix.starts, t, partition));
  return startAt(position, { ...input.startReads?.get(k), topic: t.topic, partition, offsets: o, isolationLevel: stream.isolationLevel });
}
