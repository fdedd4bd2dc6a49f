import fc from 'fast-check';
import {
  endMarginMs,
  expectedTickMs,
  handoverPollMs,
  loopLeaseMs,
  nextDueMs,
  oneTickPerInvocation,
  schedulePeriodFromEnv,
  tickFits,
  tickLagMs,
  chainDelayMs,
  chainStaleAfterMs,
  tickChainFromEnv,
  tickModeOf,
} from '../../../lib/planner/loop-timing';

describe('planner loop timing', () => {
  it.each([
    // [due, interval, ended, next]
    [1000, 1000, 1200, 2000], // on time: the next interval boundary
    [1000, 1000, 2000, 2000], // ended exactly at the next due time
    [1000, 1000, 2500, 2500], // overran its interval: the next tick at once, not a catch-up burst
    [1000, 1000, 9000, 9000], // overran by many intervals: still one tick, at once
    [0, 60_000, 400, 60_000],
  ])('a tick due at %i (interval %i) that ended at %i is followed at %i', (due, interval, ended, next) => {
    expect(nextDueMs(due, interval, ended)).toBe(next);
  });

  it('never schedules a tick before the last one ended, nor sooner than one interval after its due time', () => {
    fc.assert(
      fc.property(fc.nat(1e9), fc.integer({ min: 1000, max: 900_000 }), fc.nat(1e6), (due, interval, took) => {
        const next = nextDueMs(due, interval, due + took);
        expect(next).toBeGreaterThanOrEqual(due + took);
        expect(next).toBeGreaterThanOrEqual(due + interval);
        // Never later than needed: either the boundary or the end of the overrunning tick.
        expect(next === due + interval || next === due + took).toBe(true);
      }),
    );
  });

  it('expects the next tick to take as long as the longest of the last ten', () => {
    expect(expectedTickMs([])).toBe(0);
    expect(expectedTickMs([100, 300, 200])).toBe(300);
    expect(expectedTickMs([5000, ...Array(10).fill(100)])).toBe(100);
  });

  it.each([
    // now, due, deadline, expected, margin, fits
    [0, 1000, 10_000, 500, 2000, true], // 1000 + 500 + 2000 <= 10000
    [0, 8000, 10_000, 500, 2000, false], // 8000 + 500 + 2000 > 10000
    [0, 7500, 10_000, 500, 2000, true], // exactly at the deadline
    [9000, 1000, 10_000, 0, 2000, false], // overdue, but the margin is gone
    [5000, 1000, 10_000, 1000, 2000, true], // overdue: starts now, ends 8000
  ])('now %i, due %i, deadline %i, tick %i ms, margin %i: fits %s', (now, due, deadline, expected, margin, fits) => {
    expect(tickFits({ nowMs: now, dueMs: due, deadlineMs: deadline, expectedTickMs: expected, marginMs: margin })).toBe(fits);
  });

  it('measures lag from the due time, never negative', () => {
    expect(tickLagMs(1000, 1250)).toBe(250);
    expect(tickLagMs(1000, 900)).toBe(0);
  });

  it('keeps twice the longest recent tick free at the end, at least the minimum', () => {
    expect(endMarginMs([], 2000)).toBe(2000);
    expect(endMarginMs([400, 1500], 2000)).toBe(3000);
  });

  it('leases the loop for three intervals, at least 30 s, and polls for a hand-over a few times per interval', () => {
    expect(loopLeaseMs(1000)).toBe(30_000);
    expect(loopLeaseMs(60_000)).toBe(180_000);
    expect([handoverPollMs(1000), handoverPollMs(100), handoverPollMs(60_000)]).toEqual([250, 50, 1000]);
  });

  it('reads the schedule period the stack gives, and ticks once per invocation only at or above it', () => {
    expect(schedulePeriodFromEnv({ SCHEDULE_PERIOD_MS: '60000' })).toBe(60_000);
    expect([
      schedulePeriodFromEnv({}),
      schedulePeriodFromEnv({ SCHEDULE_PERIOD_MS: 'x' }),
      schedulePeriodFromEnv({ SCHEDULE_PERIOD_MS: '0' }),
    ]).toEqual([undefined, undefined, undefined]);
    expect([oneTickPerInvocation(60_000, 60_000), oneTickPerInvocation(1000, 60_000), oneTickPerInvocation(60_000, undefined)]).toEqual([
      true,
      false,
      false,
    ]);
  });

  it.each([
    // interval, schedule period, chain threshold, mode
    [1000, 60_000, 5000, 'loop'],
    [4999, 60_000, 5000, 'loop'],
    [5000, 60_000, 5000, 'chain'],
    [10_000, 60_000, 5000, 'chain'],
    [59_999, 60_000, 5000, 'chain'],
    [60_000, 60_000, 5000, 'once'],
    [10_000, 60_000, undefined, 'loop'],
    [10_000, undefined, 5000, 'chain'],
    [120_000, undefined, 5000, 'chain'],
  ] as const)('ticks an interval of %i ms (period %s, chain from %s) by %s', (intervalMs, schedulePeriodMs, chainFromMs, mode) => {
    expect(tickModeOf(intervalMs, { schedulePeriodMs, chainFromMs })).toBe(mode);
  });

  it("reads the chain's threshold the stack gives with its queue", () => {
    expect(tickChainFromEnv({ TICK_CHAIN_FROM_MS: '5000' })).toBe(5000);
    expect([tickChainFromEnv({}), tickChainFromEnv({ TICK_CHAIN_FROM_MS: '' }), tickChainFromEnv({ TICK_CHAIN_FROM_MS: '-1' })]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("delays a tick's message by whole seconds, within half a second of its due time, never beyond the queue's 15 minutes", () => {
    expect([chainDelayMs(10_000, 0), chainDelayMs(10_499, 0), chainDelayMs(10_500, 0), chainDelayMs(499, 0), chainDelayMs(0, 500)]).toEqual(
      [10_000, 10_000, 11_000, 0, 0],
    );
    expect(chainDelayMs(10_000_000, 0)).toBe(900_000);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000_000 }), fc.integer({ min: 0, max: 2_000_000 }), (due, now) => {
        const d = chainDelayMs(due, now);
        expect(d % 1000).toBe(0);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(900_000);
        if (due - now >= 0 && due - now <= 900_000) expect(Math.abs(now + d - due)).toBeLessThanOrEqual(500);
      }),
    );
  });

  it('counts a chain broken after three intervals without a tick, and never within 30 s of an interval', () => {
    expect([chainStaleAfterMs(5000), chainStaleAfterMs(10_000), chainStaleAfterMs(20_000), chainStaleAfterMs(50_000)]).toEqual([
      35_000, 40_000, 60_000, 150_000,
    ]);
  });
});
