/** Phase "slots": under a cap on open ranges, which due partitions get a range this run. */
import { rangeLeaseMs } from '../../config/continuous';
import { partitionKey } from '../../ranges';
import { bySlotPriority, capSource, occupiedSlots, openRangeCap } from '../concurrency-cap';
import { waitingForConcurrencyNote } from '../messages';
import type { PartitionState } from '../../ports/ledger-state';
import type { PlanIndex } from './plan-index';
import { report } from './report';
import type { Draft, Eligible, PlanInput } from './types';

/** The due partitions given a slot, in the order they got it, and the slots free for their ranges (undefined: no cap). */
export type Slots = { granted: Eligible[]; free?: number };

/**
 * Slots: under a cap (the stream's maxConcurrency, or its share of the processor concurrency if
 * lower), a run plans at most `cap - open` ranges. The due partitions get the free slots in
 * `bySlotPriority` order (waiting longest first, then most lag); the others are reported waiting
 * and planned on a later run. Re-dispatches are not limited: their ranges are open, so counted.
 */
export function grantSlots(input: PlanInput, ix: PlanIndex, candidates: PartitionState[], eligible: Eligible[], draft: Draft): Slots {
  const { stream, processorConcurrency } = input;
  const cap = openRangeCap(stream.maxConcurrency, processorConcurrency);
  if (cap === undefined) return { granted: eligible };
  const live = new Map(candidates.filter((p) => p.status === 'active').map((p) => [partitionKey(p.topic, p.partition), p]));
  const open = occupiedSlots(input.openRanges, live, { nowMs: input.nowMs, leaseMs: rangeLeaseMs(stream) });
  const free = Math.max(0, cap - open);
  const claims = eligible.map((e) => ({
    e,
    topic: e.p.topic,
    partition: e.p.partition,
    waitingSinceMs: e.p.lastPlannedAtMs ?? e.p.firstSeenAtMs,
    lag: e.input.latest - e.input.from,
  }));
  const ordered = bySlotPriority(claims);
  const why = waitingForConcurrencyNote(open, cap, capSource(stream.maxConcurrency, processorConcurrency));
  for (const { e } of ordered.slice(free)) {
    const k = e.input.key;
    const before = draft.reports.get(k)?.note;
    draft.reports.set(k, report(e.p, ix.offsets.get(k), 'waiting-for-concurrency', before ? `${before}; ${why}` : why));
  }
  return { granted: ordered.slice(0, free).map((c) => c.e), free };
}
