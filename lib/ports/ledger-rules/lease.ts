/**
 * The range lease rules, once: when a processor may take a range's lease, what taking it writes,
 * and whether a lease is still held. The in-memory ledger applies them; the DynamoDB adapter writes
 * the same rules as its conditional update and judges a lost race with `leaseRefusal`.
 */
import type { RangeState, RangeStatus } from '../ledger-state';
import type { LeaseOutcome } from '../ledger';

/** What a lease request asks for besides the range's identity. */
export type LeaseAsk = { until: number; nowMs: number; maxAttempts: number };

/** Statuses whose lease a processor may take outright; a `leased` range only once its lease expired. */
export const LEASE_TAKEABLE_STATUSES = ['planned', 'failed'] as const satisfies readonly RangeStatus[];

/**
 * Why a range's lease cannot be taken now, as the contract of `takeRangeLease` orders the reasons
 * (missing, wrong `until`, done, parked, held, attempts used up); undefined when it can be taken.
 * Both ledgers judge the same way.
 */
export function leaseRefusal(range: RangeState | undefined, asked: LeaseAsk): Exclude<LeaseOutcome, { kind: 'taken' }> | undefined {
  if (!range) return { kind: 'missing' };
  if (range.until !== asked.until) return { kind: 'mismatch', range };
  if (range.status === 'done') return { kind: 'done', range };
  if (range.status === 'parked') return { kind: 'parked', range };
  if (range.status === 'leased' && (range.leaseExpiresAtMs ?? 0) >= asked.nowMs) return { kind: 'held', range };
  if (range.attempts >= asked.maxAttempts) return { kind: 'exhausted', range };
  return undefined;
}

/** A lost lease race, judged on the range as the store saw it (held when a concurrent taker just won). */
export function lostLeaseOutcome(range: RangeState | undefined, asked: LeaseAsk): LeaseOutcome {
  return leaseRefusal(range, asked) ?? { kind: 'held', range: range as RangeState };
}

/** The range once `leaseToken` took its lease: leased until `nowMs + leaseMs`, one more attempt, first lease kept. */
export function takenRange(range: RangeState, take: { leaseToken: string; nowMs: number; leaseMs: number }): RangeState {
  return {
    ...range,
    status: 'leased',
    leaseToken: take.leaseToken,
    leaseExpiresAtMs: take.nowMs + take.leaseMs,
    attempts: range.attempts + 1,
    firstLeasedAtMs: range.firstLeasedAtMs ?? take.nowMs,
  };
}

/** Whether `leaseToken` holds the range's lease: every processor write is conditional on it (I3). */
export function holdsLease(range: RangeState | undefined, leaseToken: string): range is RangeState {
  return range !== undefined && range.status === 'leased' && range.leaseToken === leaseToken;
}
