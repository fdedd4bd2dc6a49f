/**
 * Continuous streams: the partitions that have no live segment at the run's `nowMs`, the
 * `SegmentsMissing` metric (and its `segments-missing` alarm). Pure, from what the run read and
 * decided.
 */
import { rangeLeaseMs } from '../../config/continuous';
import type { RangeState } from '../../ports/ledger-state';
import { isOpenRange, partitionKey } from '../../ranges';
import type { OwnedRange } from './plan-index';
import type { PartitionReport, PlanInput } from './types';

/**
 * Whether an open segment range has a segment now, or one on its way: held under a lease that has
 * not run out, or (re-)dispatched within the lease time and not yet taken (a new or handed-over
 * range, or one sent again after its segment failed or its lease ran out). A range whose lease ran
 * out, that failed, was given back or never sent, or whose dispatch was not taken within the lease
 * time, has none; nor has a parked range.
 */
export function segmentLive(r: RangeState, nowMs: number, leaseMs: number): boolean {
  if (r.status === 'leased' && r.leaseExpiresAtMs !== undefined && r.leaseExpiresAtMs >= nowMs) return true;
  if (r.status !== 'planned' && r.status !== 'leased' && r.status !== 'failed') return false;
  const sentWithinLease = r.dispatchedAtMs !== undefined && nowMs - r.dispatchedAtMs <= leaseMs;
  // A planned range's dispatch is its latest; a failed or expired one counts only once sent again since.
  return sentWithinLease && (r.status === 'planned' || r.redispatchedAtAttempts === r.attempts);
}

/**
 * Partitions of a continuous stream without a live segment: its active partitions' open segment
 * ranges (of their current incarnation) that have none (`segmentLive`), and its unbounded partitions
 * left waiting for a slot under the stream's concurrency cap (no range at all). Undefined for a
 * micro-batch stream. A run re-dispatches such ranges (redispatch.ts), so a dead segment is counted
 * from its lease's end until the run that sends it again; a partition that stays counted over
 * several runs has segments that do not start or do not last.
 */
export function segmentsMissing(input: PlanInput, owned: OwnedRange[], reports: PartitionReport[]): number | undefined {
  const { stream, nowMs } = input;
  if (!stream.continuous) return undefined;
  const leaseMs = rangeLeaseMs(stream);
  const missing = new Set<string>();
  for (const { range: r } of owned) {
    if (!isOpenRange(r) || r.status === 'done') continue;
    if (!segmentLive(r, nowMs, leaseMs)) missing.add(partitionKey(r.topic, r.partition));
  }
  // A bounded partition (a replay's) is read in micro-batches, never by a segment.
  for (const p of reports) {
    if (p.action === 'waiting-for-concurrency' && p.stopOffset === undefined) missing.add(partitionKey(p.topic, p.partition));
  }
  return missing.size;
}
