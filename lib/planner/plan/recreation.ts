/** Re-creation: a topic deleted and re-created under its name closes the old incarnation and registers the new one. */
import type { PartitionOffsets } from '../../ports/kafka-metadata';
import { cursorFloor } from '../../ranges';
import { CLOSE_MAX_OPEN_RANGES, type PlanWrite } from '../../ports/ledger';
import type { ClosedIncarnation, PartitionState, RangeState } from '../../ports/ledger-state';
import { sameIncarnation, topicIdChanged } from '../../ports/ledger-rules/incarnation';
import { regressionRecreationReason } from '../messages';
import { report } from './report';
import type { PartitionReport, PlanInput } from './types';

/**
 * Why a known partition of a topic that exists now reads a re-created topic (a new log under the
 * same name whose offsets restart at 0), or undefined. By topic id where both sides have one;
 * otherwise by the offsets falling below the planning cursor, or by the topic coming back after it
 * was retired as deleted. The same id with fewer offsets is a truncated log, not a new topic.
 */
export function recreationReason(p: PartitionState, idNow: string | undefined, o: { latest: number } | undefined): string | undefined {
  if (topicIdChanged(p.topicId, idNow)) return `topic id changed from ${p.topicId} to ${idNow}`;
  if (idNow !== undefined && p.topicId !== undefined) return undefined; // the same id: a truncated log at most
  const how = idNow === undefined ? 'no topic ids from this broker' : 'no topic id recorded for the old topic';
  if (p.status === 'retired') {
    if (p.reason?.startsWith('UNSUBSCRIBED')) return undefined; // subscribed again: the same log, as far as can be told
    return `the topic exists again after it was retired (${p.reason ?? 'retired'}; ${how})`;
  }
  const regressed = o !== undefined && o.latest < cursorFloor(p);
  if (regressed && (p.status === 'active' || p.reason?.startsWith('OFFSET_REGRESSION'))) {
    return regressionRecreationReason(o.latest, cursorFloor(p), how);
  }
  return undefined;
}

/**
 * The topic identity check of a known partition whose topic exists: the write that closes its
 * incarnation (with the partition's report: nothing else is decided for it this run) when the topic
 * was re-created, or the write that records the topic id a ledger written before ids lacks.
 */
export function topicIdentity(
  input: PlanInput,
  p: PartitionState,
  idNow: string | undefined,
  o: PartitionOffsets | undefined,
  open: RangeState[],
  bounded: boolean,
): { write?: PlanWrite; report?: PartitionReport } {
  const why = recreationReason(p, idNow, o);
  if (why) return closeIncarnation(input, p, idNow, o, why, open, bounded);
  if (idNow !== undefined && p.topicId === undefined && p.status === 'active') {
    return { write: { kind: 'record-topic-id', topic: p.topic, partition: p.partition, topicId: idNow, incarnation: p.incarnation } };
  }
  return {};
}

/**
 * The write that closes `p`'s incarnation and registers the new one at the stream's
 * `recreatedTopicOffsets`, with the record of what the old one had committed and planned. A bounded
 * stream (replay) only retires the partition: its stop offsets name the old log.
 */
function closeIncarnation(
  input: PlanInput,
  p: PartitionState,
  idNow: string | undefined,
  o: PartitionOffsets | undefined,
  why: string,
  open: RangeState[],
  bounded: boolean,
): { write?: PlanWrite; report: PartitionReport } {
  const { stream, nowMs } = input;
  const reason = `TOPIC_RECREATED: ${why} (committed ${p.committed}, planned up to ${p.nextFrom})`;
  if (bounded) {
    if (p.status !== 'active') return { report: report(p, o, 'inactive', p.reason) };
    return {
      write: { kind: 'retire-partition', topic: p.topic, partition: p.partition, reason, nowMs },
      report: report(p, o, 'retired', reason),
    };
  }
  if (!o) return { report: report(p, undefined, 'no-offsets', `${reason}; no offsets for the new topic this run`) };
  const start = stream.recreatedTopicOffsets === 'latest' ? o.latest : o.earliest;
  const incarnation = p.incarnation ?? 0;
  const own = open.filter((r) => sameIncarnation(r, p)).slice(0, CLOSE_MAX_OPEN_RANGES);
  const closed: ClosedIncarnation = {
    stream: stream.id,
    topic: p.topic,
    partition: p.partition,
    incarnation,
    ...(p.topicId !== undefined ? { topicId: p.topicId } : {}),
    ...(idNow !== undefined ? { newTopicId: idNow } : {}),
    status: p.status,
    startOffset: p.startOffset,
    committed: p.committed,
    nextFrom: p.nextFrom,
    openRanges: own.map((r) => ({ from: r.from, until: r.until, status: r.status, progress: r.progress })),
    newStartOffset: start,
    detectedAtMs: nowMs,
    reason,
  };
  const next: PartitionState = {
    stream: stream.id,
    topic: p.topic,
    partition: p.partition,
    status: 'active',
    startOffset: start,
    committed: start,
    nextFrom: start,
    firstSeenAtMs: nowMs,
    incarnation: incarnation + 1,
    ...(idNow !== undefined ? { topicId: idNow } : {}),
    ...(p.observedRecordsPerSec !== undefined ? { observedRecordsPerSec: p.observedRecordsPerSec } : {}),
  };
  const note = `${reason}; incarnation ${incarnation + 1} starts at ${start}`;
  return { write: { kind: 'close-incarnation', closed, next }, report: report(next, o, 'recreated', note) };
}
