/**
 * The planner loop lease contract (lib/ports/planner-loop.ts), run against the in-memory ledger
 * (unit) and the DynamoDB ledger on the emulator (integration): one holder at a time, one waiting
 * successor, hand-over with the next tick's due time, expiry, and no interference with the planner
 * lease on the same META item.
 */
import type { Ledger } from '../../lib/ports/ledger';
import type { PlannerLoopLease } from '../../lib/ports/planner-loop';

export type LoopLedgerFactory = () => Promise<Ledger & PlannerLoopLease>;

/** Defines the contract's tests for one adapter. */
export function plannerLoopContract(makeLedger: LoopLedgerFactory): void {
  let ledger: Ledger & PlannerLoopLease;
  let n = 0;
  const streamName = () => `loop${Date.now().toString(36)}${n++}`;
  const take = (stream: string, ownerToken: string, nowMs: number, asSuccessor = true) =>
    ledger.takePlannerLoop({ stream, ownerToken, nowMs, leaseMs: 30_000, asSuccessor });
  beforeEach(async () => {
    ledger = await makeLedger();
  });

  it('gives a free loop to the first asker and shows it on the stream meta', async () => {
    const stream = streamName();
    expect(await take(stream, 'a', 1000)).toEqual({ taken: true, previous: {} });
    expect((await ledger.readMeta(stream))?.loop).toEqual({ ownerToken: 'a', sinceMs: 1000, expiresAtMs: 31_000 });
  });

  it('refuses a held loop, recording one successor only; the holder sees it when it renews', async () => {
    const stream = streamName();
    await take(stream, 'a', 1000);
    expect(await take(stream, 'b', 2000)).toEqual({
      taken: false,
      holder: { ownerToken: 'a', sinceMs: 1000, expiresAtMs: 31_000, successor: 'b' },
    });
    // A third invocation finds b next and is not recorded; asked again, b stays the successor.
    expect(await take(stream, 'c', 2100)).toMatchObject({ taken: false, holder: { ownerToken: 'a', successor: 'b' } });
    expect(await take(stream, 'b', 2200)).toMatchObject({ taken: false, holder: { successor: 'b' } });
    expect(await ledger.renewPlannerLoop({ stream, ownerToken: 'a', nowMs: 3000, leaseMs: 30_000, lastTickAtMs: 2900 })).toEqual({
      held: true,
      successor: 'b',
    });
    expect((await ledger.readMeta(stream))?.loop).toMatchObject({ ownerToken: 'a', expiresAtMs: 33_000, lastTickAtMs: 2900 });
  });

  it('asks without waiting records no successor', async () => {
    const stream = streamName();
    await take(stream, 'a', 1000);
    expect(await take(stream, 'b', 2000, false)).toEqual({ taken: false, holder: { ownerToken: 'a', sinceMs: 1000, expiresAtMs: 31_000 } });
  });

  it('hands over: the successor takes the released loop with the last tick and the next due time, and is no longer a successor', async () => {
    const stream = streamName();
    await take(stream, 'a', 1000);
    await take(stream, 'b', 2000);
    expect(await ledger.releasePlannerLoop({ stream, ownerToken: 'a', lastTickAtMs: 2500, nextTickDueMs: 3500 })).toBe('applied');
    expect(await take(stream, 'b', 2600)).toEqual({ taken: true, previous: { successor: 'b', lastTickAtMs: 2500, nextTickDueMs: 3500 } });
    expect((await ledger.readMeta(stream))?.loop).toEqual({ ownerToken: 'b', sinceMs: 2600, expiresAtMs: 32_600, lastTickAtMs: 2500 });
  });

  it('lets only the holder renew or release', async () => {
    const stream = streamName();
    await take(stream, 'a', 1000);
    expect(await ledger.renewPlannerLoop({ stream, ownerToken: 'b', nowMs: 2000, leaseMs: 30_000 })).toEqual({ held: false });
    expect(await ledger.releasePlannerLoop({ stream, ownerToken: 'b', nextTickDueMs: 3000 })).toBe('condition-failed');
    expect(await ledger.releasePlannerLoop({ stream, ownerToken: 'a', nextTickDueMs: 3000 })).toBe('applied');
    // Released: renewing or releasing again is no longer holding it.
    expect(await ledger.renewPlannerLoop({ stream, ownerToken: 'a', nowMs: 2000, leaseMs: 30_000 })).toEqual({ held: false });
    expect(await ledger.releasePlannerLoop({ stream, ownerToken: 'a', nextTickDueMs: 3000 })).toBe('condition-failed');
  });

  it("gives an expired loop (a dead holder's) to the next asker; the dead holder can then neither renew nor release", async () => {
    const stream = streamName();
    await take(stream, 'a', 1000);
    expect(await take(stream, 'b', 31_000)).toMatchObject({ taken: false });
    expect(await take(stream, 'b', 31_001)).toEqual({
      taken: true,
      previous: { ownerToken: 'a', sinceMs: 1000, expiresAtMs: 31_000, successor: 'b' },
    });
    expect(await ledger.renewPlannerLoop({ stream, ownerToken: 'a', nowMs: 31_002, leaseMs: 30_000 })).toEqual({ held: false });
    expect(await ledger.releasePlannerLoop({ stream, ownerToken: 'a', nextTickDueMs: 0 })).toBe('condition-failed');
  });

  it('a holder asking again keeps its loop (a retried request)', async () => {
    const stream = streamName();
    await take(stream, 'a', 1000);
    expect(await take(stream, 'a', 1500)).toMatchObject({ taken: true });
    expect((await ledger.readMeta(stream))?.loop).toMatchObject({ ownerToken: 'a', expiresAtMs: 31_500 });
  });

  it('shares the META item with the planner lease without either disturbing the other', async () => {
    const stream = streamName();
    // The loop is taken before any planner run: the item it creates still lets the first run lease and start.
    await take(stream, 'a', 1000);
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'run-1', nowMs: 1100, leaseMs: 5000 });
    expect(lease).toMatchObject({ acquired: true, epoch: 1 });
    expect(await ledger.markStreamStarted({ stream, epoch: 1, ownerToken: 'run-1', nowMs: 1100 })).toBe('applied');
    expect(await ledger.releasePlannerLease({ stream, epoch: 1, ownerToken: 'run-1', confirmDispatches: true })).toBe('applied');
    const meta = await ledger.readMeta(stream);
    expect(meta).toMatchObject({ epoch: 1, startedAtMs: 1100, confirmedEpoch: 1, lastRunAtMs: 1100 });
    expect(meta?.loop).toEqual({ ownerToken: 'a', sinceMs: 1000, expiresAtMs: 31_000 });
    // And the loop's writes leave the planner lease alone.
    await ledger.renewPlannerLoop({ stream, ownerToken: 'a', nowMs: 2000, leaseMs: 30_000, lastTickAtMs: 1100 });
    await ledger.releasePlannerLoop({ stream, ownerToken: 'a', lastTickAtMs: 1100, nextTickDueMs: 2100 });
    expect(await ledger.readMeta(stream)).toMatchObject({ epoch: 1, startedAtMs: 1100, confirmedEpoch: 1, leaseExpiresAtMs: 0 });
  });

  describe('the tick chain', () => {
    const claim = (stream: string, seq: number, nowMs: number, claimedBy = `inv-${seq}-${nowMs}`) =>
      ledger.claimChainTick({ stream, seq, nowMs, claimedBy });

    it('claims each tick once, in sequence: a duplicate, a stale or a skipped-ahead message claims nothing', async () => {
      const stream = streamName();
      expect(await claim(stream, 2, 900)).toBe('condition-failed');
      expect(await claim(stream, 1, 1000)).toBe('applied');
      expect((await ledger.readMeta(stream))?.tickChain).toEqual({ seq: 1, lastTickAtMs: 1000, claimedBy: 'inv-1-1000' });
      expect(await claim(stream, 1, 1100)).toBe('condition-failed');
      expect(await claim(stream, 2, 2000)).toBe('applied');
      expect(await claim(stream, 1, 2100)).toBe('condition-failed');
      expect(await claim(stream, 4, 2200)).toBe('condition-failed');
      expect((await ledger.readMeta(stream))?.tickChain).toEqual({ seq: 2, lastTickAtMs: 2000, claimedBy: 'inv-2-2000' });
    });

    it("applies a claim sent again by its claimant (its first answer lost), and no one else's", async () => {
      const stream = streamName();
      expect(await claim(stream, 1, 1000, 'a')).toBe('applied');
      expect(await claim(stream, 1, 1000, 'a')).toBe('applied');
      expect(await claim(stream, 1, 1050, 'b')).toBe('condition-failed');
      expect(await claim(stream, 2, 2000, 'c')).toBe('applied');
      // Once the chain moved on, the old claimant's repeat claims nothing.
      expect(await claim(stream, 1, 1000, 'a')).toBe('condition-failed');
      expect((await ledger.readMeta(stream))?.tickChain).toEqual({ seq: 2, lastTickAtMs: 2000, claimedBy: 'c' });
    });

    it('creates a META item the first planner run can lease, and leaves the lease and the loop alone', async () => {
      const stream = streamName();
      expect(await claim(stream, 1, 1000)).toBe('applied');
      expect(await ledger.acquirePlannerLease({ stream, ownerToken: 'run-1', nowMs: 1100, leaseMs: 5000 })).toMatchObject({
        acquired: true,
        epoch: 1,
      });
      await take(stream, 'a', 1200);
      expect(await claim(stream, 2, 1300)).toBe('applied');
      expect(await ledger.readMeta(stream)).toMatchObject({
        epoch: 1,
        ownerToken: 'run-1',
        leaseExpiresAtMs: 6100,
        loop: { ownerToken: 'a' },
        tickChain: { seq: 2, lastTickAtMs: 1300, claimedBy: 'inv-2-1300' },
      });
    });
  });
}
