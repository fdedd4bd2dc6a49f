/** Phase "redispatch and park": open ranges sent again, or parked at the attempt limit. */
import { rangeLeaseMs } from '../../config/continuous';
import type { PlanWrite } from '../../ports/ledger';
import type { RangeState } from '../../ports/ledger-state';
import { attemptsExhaustedError } from '../messages';
import type { OwnedRange } from './plan-index';
import type { PlanDecision, PlanInput, RedispatchReason } from './types';

/**
 * Redispatch and park: open ranges never dispatched, unconfirmed, expired or failed are sent again,
 * or parked at the attempt limit; `ended` ranges (end-segments.ts) are not.
 */
export function redispatchOpen(
  input: PlanInput,
  owned: OwnedRange[],
  ended: ReadonlySet<RangeState> = new Set(),
): Pick<PlanDecision, 'redispatch' | 'parks'> {
  const { stream } = input;
  const redispatch: PlanDecision['redispatch'] = [];
  const parks: PlanWrite[] = [];
  // A closed incarnation's range (beyond what its close removed) is not among `owned`: never sent again.
  for (const { range: r } of owned) {
    if (ended.has(r)) continue;
    const reason = redispatchReason(r, input);
    if (!reason) continue;
    const exhausted = reason === 'not-started' ? r.dispatches > stream.maxAttempts : r.attempts >= stream.maxAttempts;
    if (exhausted && reason !== 'never-dispatched' && reason !== 'dispatch-unconfirmed') {
      const error =
        reason === 'not-started'
          ? `no processor took the range after ${r.dispatches} dispatches`
          : attemptsExhaustedError(r.attempts, stream.maxAttempts, r.lastError);
      parks.push({ kind: 'park-range', range: r, expect: { status: r.status, attempts: r.attempts }, error });
      continue;
    }
    redispatch.push({ range: r, reason });
  }
  return { redispatch, parks };
}

/**
 * Why an open range is due to be sent again, or undefined. A range whose processor holds a live
 * lease never is. A failed or expired range is sent again once: until a processor takes it (a new
 * attempt), that dispatch is waited for like a new range's, for the lease time; otherwise a planner
 * ticking faster than processors start would send it on every run.
 */
export function redispatchReason(
  r: RangeState,
  { stream, nowMs, epoch, confirmedEpoch }: Pick<PlanInput, 'stream' | 'nowMs' | 'epoch' | 'confirmedEpoch'>,
): RedispatchReason | undefined {
  const notStarted = r.dispatchedAtMs === undefined || nowMs - r.dispatchedAtMs > rangeLeaseMs(stream);
  const sentAgain = r.redispatchedAtAttempts === r.attempts && !notStarted;
  switch (r.status) {
    case 'planned':
      if (r.dispatchedAtMs === undefined) return 'never-dispatched';
      // Planned by a run that ended before recording its dispatches: it may never have been sent.
      if (r.epoch > (confirmedEpoch ?? 0) && r.epoch < epoch) return 'dispatch-unconfirmed';
      return notStarted ? 'not-started' : undefined;
    case 'leased':
      return r.leaseExpiresAtMs !== undefined && r.leaseExpiresAtMs < nowMs && !sentAgain ? 'lease-expired' : undefined;
    case 'failed':
      return sentAgain ? undefined : 'failed';
    default:
      return undefined;
  }
}
