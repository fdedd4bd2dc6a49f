/**
 * The planner loop in `status`, from the loop lease as the in-memory ledger keeps it: a loop never
 * taken, a holder whose lease ran out without a hand-over (died or timed out), and the JSON fields.
 */
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { loopStatus, renderLoop } from '../../../lib/ops/loop-status';

const NOW = Date.parse('2026-05-01T12:00:00Z');
const stream = 's1';

describe('status: the planner loop', () => {
  it('never taken: says so (ad hoc and local runs plan without it), with the last planner run', async () => {
    const ledger = createMemoryLedger();
    expect(loopStatus(await ledger.readMeta(stream), NOW)).toBeUndefined();
    expect(renderLoop(undefined, undefined, NOW)).toEqual([
      'planner loop: never taken (scheduled invocations take it; ad hoc and local runs plan without it; the tick chain ticks without it)',
      'no planner run yet',
    ]);
    expect(renderLoop(undefined, NOW - 1_500, NOW)[1]).toBe('last planner run 2026-05-01T11:59:58.500Z (1.5s ago)');
  });

  it('a holder that stopped renewing without handing over: its lease ran out, the next invocation takes it', async () => {
    const ledger = createMemoryLedger();
    await ledger.takePlannerLoop({ stream, ownerToken: 'inv-a', nowMs: NOW - 90_000, leaseMs: 30_000, asSuccessor: true });
    await ledger.renewPlannerLoop({ stream, ownerToken: 'inv-a', nowMs: NOW - 70_000, leaseMs: 30_000, lastTickAtMs: NOW - 70_000 });
    const loop = loopStatus(await ledger.readMeta(stream), NOW);
    expect(loop).toEqual({
      state: 'expired',
      ownerToken: 'inv-a',
      sinceMs: NOW - 90_000,
      leaseUntilMs: NOW - 40_000,
      lastTickAtMs: NOW - 70_000,
    });
    expect(renderLoop(loop, NOW - 69_000, NOW)).toEqual([
      'planner loop: not held: the lease of inv-a ran out at 2026-05-01T11:59:20.000Z (40.0s ago) without a hand-over (the invocation died or timed out)',
      'last planner run 2026-05-01T11:58:51.000Z (1m09s ago); last tick recorded on the loop 2026-05-01T11:58:50.000Z (1m10s ago)',
    ]);
  });

  it('a loop released with no successor: free, with the tick that was due next (for the next scheduled invocation)', async () => {
    const ledger = createMemoryLedger();
    await ledger.takePlannerLoop({ stream, ownerToken: 'inv-a', nowMs: NOW - 60_000, leaseMs: 30_000, asSuccessor: true });
    await ledger.releasePlannerLoop({ stream, ownerToken: 'inv-a', lastTickAtMs: NOW - 4_000, nextTickDueMs: NOW - 3_000 });
    const loop = loopStatus(await ledger.readMeta(stream), NOW);
    expect(loop).toEqual({ state: 'free', lastTickAtMs: NOW - 4_000, nextTickDueMs: NOW - 3_000 });
    expect(renderLoop(loop, NOW - 4_000, NOW)[0]).toBe(
      'planner loop: free (released by its last holder), next tick due at 2026-05-01T11:59:57.000Z (3.0s ago)',
    );
  });

  it('a stream ticked by the tick chain: its last claimed tick, in place of the loop it never takes', async () => {
    const ledger = createMemoryLedger();
    await ledger.claimChainTick({ stream, seq: 1, nowMs: NOW - 20_000, claimedBy: 'inv-1' });
    await ledger.claimChainTick({ stream, seq: 2, nowMs: NOW - 10_000, claimedBy: 'inv-2' });
    const meta = await ledger.readMeta(stream);
    expect(renderLoop(loopStatus(meta, NOW), NOW - 9_900, NOW, meta?.tickChain)).toEqual([
      'tick chain: tick 2 claimed 2026-05-01T11:59:50.000Z (10.0s ago)',
      'last planner run 2026-05-01T11:59:50.100Z (9.9s ago)',
    ]);
  });
});
