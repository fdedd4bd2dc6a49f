/**
 * Phase "classify" (retirement): each known partition is re-created, retired, unavailable, inactive,
 * or active (a candidate to plan).
 */
import type { PlanWrite } from '../../ports/ledger';
import type { ClosedIncarnation, PartitionState } from '../../ports/ledger-state';
import { partitionKey } from '../../ranges';
import type { PlanIndex } from './plan-index';
import { topicIdentity } from './recreation';
import { report } from './report';
import type { Draft, PartitionReport, PlanInput } from './types';

/**
 * A partition missing from the metadata within this long of its registration is not retired yet
 * (metadata of a topic created a moment ago reaches brokers one by one; see docs/architecture.md).
 */
const MISSING_AFTER_REGISTRATION_GRACE_MS = 5_000;

/** Classify known partitions: re-created, retired, unavailable, inactive, or active (a candidate to plan). */
export function classifyKnown(
  input: PlanInput,
  ix: PlanIndex,
  draft: Draft,
): { candidates: PartitionState[]; recreated: ClosedIncarnation[] } {
  const candidates: PartitionState[] = [];
  const recreated: ClosedIncarnation[] = [];
  for (const p of input.known) {
    const k = partitionKey(p.topic, p.partition);
    const c = classifyKnownPartition(input, ix, p, k);
    for (const w of c.writes) {
      draft.writes.push(w);
      if (w.kind === 'close-incarnation') recreated.push(w.closed);
    }
    if (c.report) draft.reports.set(k, c.report);
    else candidates.push(p);
  }
  return { candidates, recreated };
}

/**
 * One known partition: the writes its class needs (close the incarnation, record the topic id,
 * retire) and, unless it is an active candidate, its report (nothing else is decided for it this run).
 */
function classifyKnownPartition(
  input: PlanInput,
  ix: PlanIndex,
  p: PartitionState,
  k: string,
): { writes: PlanWrite[]; report?: PartitionReport } {
  const topicParts = ix.discovered.get(p.topic);
  const listed = topicParts?.has(p.partition) === true;
  const subscribed = ix.matches(p.topic);
  const o = ix.offsets.get(k);
  const identity = listed && subscribed ? topicIdentity(input, p, ix.topicIds.get(p.topic), o, ix.openByKey.get(k) ?? [], ix.bounded) : {};
  const writes = identity.write ? [identity.write] : [];
  if (identity.report) return { writes, report: identity.report };
  if (p.status !== 'active') return { writes, report: report(p, o, 'inactive', p.reason) };
  if (listed) return { writes };
  if (subscribed && input.nowMs - p.firstSeenAtMs < MISSING_AFTER_REGISTRATION_GRACE_MS) {
    // Registered a moment ago from one broker's metadata: a broker that has not caught up with the
    // new topic yet answers as if it were gone. Retirement is final, so it waits for the grace.
    return {
      writes,
      report: report(
        p,
        undefined,
        'no-offsets',
        'missing from the metadata a moment after registration: retired only if still missing later',
      ),
    };
  }
  const why = !subscribed
    ? 'UNSUBSCRIBED: the topic no longer matches the stream configuration'
    : !topicParts
      ? 'TOPIC_DELETED: the topic no longer exists'
      : 'PARTITION_DELETED: the topic no longer has this partition';
  const reason = `${why} (committed ${p.committed}, planned up to ${p.nextFrom})`;
  writes.push({ kind: 'retire-partition', topic: p.topic, partition: p.partition, reason, nowMs: input.nowMs });
  return { writes, report: report(p, undefined, 'retired', reason) };
}
