/** When a warm container drops its kept connections (lib/runtime/connection-reuse.ts), on a virtual clock. */
import fc from 'fast-check';
import {
  connectionIdleMaxMsFromEnv,
  connectionReuse,
  dropConnectionsAfterIdle,
  DEFAULT_CONNECTION_IDLE_MAX_MS,
} from '../../../lib/runtime/connection-reuse';

function rig(idleMaxMs: number) {
  let nowMs = 1_000_000;
  const drops: Array<{ idleMs: number; sockets: number }> = [];
  const rule = connectionReuse({
    idleMaxMs,
    now: () => nowMs,
    drop: () => 3,
    onDrop: (idleMs, sockets) => drops.push({ idleMs, sockets }),
  });
  return { rule, drops, advance: (ms: number) => (nowMs += ms) };
}

describe('connection reuse across a warm container’s invocations', () => {
  it.each([
    { gapMs: 0, dropped: false },
    { gapMs: 9_999, dropped: false },
    { gapMs: 10_000, dropped: false },
    { gapMs: 10_001, dropped: true },
    { gapMs: 400_000, dropped: true },
  ])('an invocation $gapMs ms after the previous one ended: dropped $dropped', ({ gapMs, dropped }) => {
    const { rule, drops, advance } = rig(10_000);
    expect(rule.before()).toBe(false); // a cold start has nothing kept
    advance(250);
    rule.after();
    advance(gapMs);
    expect(rule.before()).toBe(dropped);
    expect(drops).toEqual(dropped ? [{ idleMs: gapMs, sockets: 3 }] : []);
  });

  it('measures the idle spell from the end of the previous invocation, not its start', () => {
    const { rule, advance } = rig(10_000);
    rule.before();
    advance(60_000); // a long invocation (a planner loop)
    rule.after();
    advance(5_000);
    expect(rule.before()).toBe(false);
  });

  it('drops exactly when the gap exceeds the limit, whatever the gaps (property)', () => {
    fc.assert(
      fc.property(fc.nat(100_000), fc.array(fc.tuple(fc.nat(30_000), fc.nat(200_000)), { maxLength: 20 }), (idleMaxMs, steps) => {
        const { rule, drops, advance } = rig(idleMaxMs);
        rule.before();
        let expected = 0;
        for (const [busyMs, gapMs] of steps) {
          advance(busyMs);
          rule.after();
          advance(gapMs);
          if (gapMs > idleMaxMs) expected++;
          rule.before();
        }
        expect(drops).toHaveLength(expected);
      }),
    );
  });

  it('counts an invocation that failed as ended (the middleware’s onError)', async () => {
    let nowMs = 0;
    let dropped = 0;
    const mw = dropConnectionsAfterIdle({ idleMaxMs: 1000, now: () => nowMs, drop: () => ++dropped });
    const request = {} as never;
    await mw.before!(request);
    nowMs = 500;
    await mw.onError!(request);
    nowMs = 1400;
    await mw.before!(request);
    expect(dropped).toBe(0);
    nowMs = 1400;
    await mw.after!(request);
    nowMs = 2401;
    await mw.before!(request);
    expect(dropped).toBe(1);
  });

  it('reads its limit from CONNECTION_IDLE_MAX_MS, and refuses one that is not a whole number of ms, naming it', () => {
    expect(connectionIdleMaxMsFromEnv({})).toBe(DEFAULT_CONNECTION_IDLE_MAX_MS);
    expect(connectionIdleMaxMsFromEnv({ CONNECTION_IDLE_MAX_MS: '0' })).toBe(0);
    expect(connectionIdleMaxMsFromEnv({ CONNECTION_IDLE_MAX_MS: '30000' })).toBe(30_000);
    for (const bad of ['-1', '1.5', 'ten', '1e400'])
      expect(() => connectionIdleMaxMsFromEnv({ CONNECTION_IDLE_MAX_MS: bad })).toThrow(
        `CONNECTION_IDLE_MAX_MS must be a whole number of milliseconds (0 or more), not "${bad}"`,
      );
  });
});
