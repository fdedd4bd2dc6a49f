/** The range lease rules (ports/ledger-rules/lease.ts): when a lease may be taken, what taking it writes, who holds it. */
import fc from 'fast-check';
import {
  holdsLease,
  LEASE_TAKEABLE_STATUSES,
  leaseRefusal,
  lostLeaseOutcome,
  takenRange,
  type LeaseAsk,
} from '../../../lib/ports/ledger-rules/lease';
import { RANGE_STATUSES, type RangeState, type RangeStatus } from '../../../lib/ports/ledger-state';
import { rangeState } from './states';

const range = (extra: Partial<RangeState> = {}): RangeState => rangeState(0, 10, extra);
const ask: LeaseAsk = { until: 10, nowMs: 1000, maxAttempts: 3 };

describe('leaseRefusal', () => {
  it.each<[string, RangeState | undefined, string | undefined]>([
    ['missing', undefined, 'missing'],
    ['ending elsewhere (checked before anything else)', range({ until: 11, status: 'done' }), 'mismatch'],
    ['done', range({ status: 'done', attempts: 9 }), 'done'],
    ['parked', range({ status: 'parked', attempts: 9 }), 'parked'],
    ['leased, unexpired (expiry at now still holds)', range({ status: 'leased', leaseExpiresAtMs: 1000, attempts: 9 }), 'held'],
    ['out of attempts', range({ attempts: 3 }), 'exhausted'],
    ['leased, expired, out of attempts', range({ status: 'leased', leaseExpiresAtMs: 999, attempts: 3 }), 'exhausted'],
    ['planned', range(), undefined],
    ['failed', range({ status: 'failed', attempts: 2 }), undefined],
    ['leased, expired', range({ status: 'leased', leaseExpiresAtMs: 999, attempts: 1 }), undefined],
  ])('a range %s: %s', (_what, r, kind) => {
    expect(leaseRefusal(r, ask)?.kind).toBe(kind);
  });

  it('takes outright exactly the takeable statuses, and a leased range once expired (property)', () => {
    const arb = fc.record({
      status: fc.constantFrom(...RANGE_STATUSES),
      attempts: fc.nat(5),
      leaseExpiresAtMs: fc.option(fc.nat(2000), { nil: undefined }),
    });
    fc.assert(
      fc.property(arb, (fields) => {
        const r = range(fields);
        const takeable =
          (LEASE_TAKEABLE_STATUSES as readonly RangeStatus[]).includes(r.status) ||
          (r.status === 'leased' && (r.leaseExpiresAtMs ?? 0) < ask.nowMs);
        expect(leaseRefusal(r, ask) === undefined).toBe(takeable && r.attempts < ask.maxAttempts);
      }),
    );
  });
});

describe('lostLeaseOutcome', () => {
  it('judges the range the store saw, and calls a range that looks takeable held (a concurrent taker just won)', () => {
    expect(lostLeaseOutcome(undefined, ask)).toEqual({ kind: 'missing' });
    expect(lostLeaseOutcome(range({ status: 'done' }), ask).kind).toBe('done');
    expect(lostLeaseOutcome(range(), ask)).toEqual({ kind: 'held', range: range() });
  });
});

describe('takenRange', () => {
  it('leases until now + leaseMs, counts the attempt and records the first lease once', () => {
    const take = { leaseToken: 'tok', nowMs: 1000, leaseMs: 500 };
    const first = takenRange(range({ status: 'failed', attempts: 1 }), take);
    expect(first).toEqual(range({ status: 'leased', attempts: 2, leaseToken: 'tok', leaseExpiresAtMs: 1500, firstLeasedAtMs: 1000 }));
    expect(takenRange(first, { ...take, nowMs: 4000 }).firstLeasedAtMs).toBe(1000);
  });
});

describe('holdsLease', () => {
  it.each<[string, RangeState | undefined, boolean]>([
    ['leased with the token', range({ status: 'leased', leaseToken: 'tok' }), true],
    ['leased with another token', range({ status: 'leased', leaseToken: 'other' }), false],
    ['failed with the token', range({ status: 'failed', leaseToken: 'tok' }), false],
    ['missing', undefined, false],
  ])('a range %s: %s', (_what, r, held) => {
    expect(holdsLease(r, 'tok')).toBe(held);
  });
});
