/** An operator change waits for the planner's lease as OPERATOR_LEASE_WAIT says: asks it to hand over, then gives up naming the holder. */
import { PreconditionError } from '../../../lib/errors';
import { withOperatorLease } from '../../../lib/ops/lease';
import type { Ledger } from '../../../lib/ports/ledger';

/** A ledger whose planner lease is held for the first `heldFor` takes. */
function ledgerHeld(heldFor: number) {
  const calls: string[] = [];
  let takes = 0;
  const ledger = {
    acquirePlannerLease: async () => {
      calls.push('acquire');
      return ++takes <= heldFor ? { acquired: false, holder: 'planner:1', leaseExpiresAtMs: 5_000 } : { acquired: true, epoch: 7 };
    },
    requestPlannerLease: async () => void calls.push('request'),
    releasePlannerLease: async () => void calls.push('release'),
  } as unknown as Ledger;
  return { ledger, calls };
}

describe('withOperatorLease', () => {
  it('asks a holder to hand over, waits and takes the lease, releasing it after the change', async () => {
    const { ledger, calls } = ledgerHeld(1);
    const epoch = await withOperatorLease(ledger, { stream: 's', who: 'op', clock: () => 0 }, async (lease) => lease.epoch);
    expect(epoch).toBe(7);
    expect(calls).toEqual(['acquire', 'request', 'acquire', 'release']);
  });

  it('gives up once waitMs has passed, naming the holder; waitMs 0 asks once', async () => {
    const { ledger, calls } = ledgerHeld(Infinity);
    const err = await withOperatorLease(ledger, { stream: 's', who: 'op', waitMs: 0, clock: () => 0 }, async () => 'ran').catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PreconditionError);
    expect((err as Error).message).toContain('planner:1');
    expect(calls).toEqual(['acquire']);
  });
});
