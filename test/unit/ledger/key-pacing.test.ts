/**
 * The ledger's per-key write pacing, on a fake clock that the pacer's sleeps advance: whatever the
 * reservations, no key is given more than its rate in any one-second window (beyond the burst it
 * may start with), keys do not wait for each other, and what fits is not delayed.
 */
import fc from 'fast-check';
import { createKeyPacer, unitsOfTransaction, unitsOfItemWrite } from '../../../lib/ledger/key-pacing.dynamodb';

/** A pacer on a fake clock: every reservation's grant time, by key. */
function paced(unitsPerSec: number, burstUnits: number) {
  let nowMs = 0;
  const sleeps: number[] = [];
  const pacer = createKeyPacer({
    unitsPerSec,
    burstUnits,
    nowMs: () => nowMs,
    sleep: async (ms) => {
      sleeps.push(ms);
      nowMs += ms;
    },
  });
  const granted: Array<{ atMs: number; key: string; units: number }> = [];
  return {
    sleeps,
    granted,
    advance: (ms: number) => (nowMs += ms),
    async reserve(units: Record<string, number>) {
      await pacer.reserve(new Map(Object.entries(units)));
      for (const [key, n] of Object.entries(units)) granted.push({ atMs: nowMs, key, units: n });
    },
  };
}

/** The most units granted to one key inside any window of `windowMs` ending at a grant. */
function busiestWindow(granted: Array<{ atMs: number; key: string; units: number }>, key: string, windowMs: number): number {
  const mine = granted.filter((g) => g.key === key);
  return Math.max(
    0,
    ...mine.map((g) => mine.filter((h) => h.atMs > g.atMs - windowMs && h.atMs <= g.atMs).reduce((s, h) => s + h.units, 0)),
  );
}

describe('per-key write pacing', () => {
  it('does not delay writes within the rate', async () => {
    const p = paced(700, 200);
    for (let i = 0; i < 30; i++) {
      await p.reserve({ a: 60 });
      p.advance(100);
    }
    expect(p.sleeps).toEqual([]);
  });

  it('spreads a burst over the seconds the key can take (2,000 units at 700 a second)', async () => {
    const p = paced(700, 200);
    for (let i = 0; i < 20; i++) await p.reserve({ a: 100 });
    expect(p.sleeps.length).toBeGreaterThan(0);
    // 200 at once, then 700 a second: the 2,000th unit goes at 1,800 / 700 s (each wait rounded up to a ms).
    expect(p.granted.at(-1)!.atMs).toBeGreaterThanOrEqual(2572);
    expect(p.granted.at(-1)!.atMs).toBeLessThanOrEqual(2572 + 20);
    expect(busiestWindow(p.granted, 'a', 1000)).toBeLessThanOrEqual(900);
  });

  it('lets one key wait without holding back another', async () => {
    const p = paced(700, 200);
    await p.reserve({ a: 1600 });
    expect(p.granted.at(-1)!.atMs).toBe(2000);
    const before = p.sleeps.length;
    await p.reserve({ b: 100 });
    expect(p.sleeps.length).toBe(before);
  });

  it('never grants a key more than its burst plus its rate in a second (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ key: fc.constantFrom('a', 'b'), units: fc.integer({ min: 1, max: 300 }), gapMs: fc.integer({ min: 0, max: 400 }) }),
          {
            maxLength: 60,
          },
        ),
        async (writes) => {
          const p = paced(500, 100);
          for (const w of writes) {
            p.advance(w.gapMs);
            await p.reserve({ [w.key]: w.units });
          }
          for (const key of ['a', 'b']) {
            // A single reservation may exceed the bucket; it then waits for the units it borrowed.
            const largest = Math.max(0, ...writes.filter((w) => w.key === key).map((w) => w.units));
            expect(busiestWindow(p.granted, key, 1000)).toBeLessThanOrEqual(100 + 500 + largest);
          }
        },
      ),
    );
  });
});

describe('write units of a request, by key', () => {
  it('bills a transaction twice per item, by the item put or one unit for an update or check', () => {
    const units = unitsOfTransaction([
      { ConditionCheck: { TableName: 't', Key: { pk: 'S#s', sk: 'META' }, ConditionExpression: 'x' } },
      { Put: { TableName: 't', Item: { pk: 'S#s', sk: 'P#t#000001', blob: 'x'.repeat(1500) } } },
      { Update: { TableName: 't', Key: { pk: 'S#s#0', sk: 'G#000000' }, UpdateExpression: 'SET a = :a' } },
    ]);
    expect(Object.fromEntries(units)).toEqual({ 'S#s': 2 + 4, 'S#s#0': 2 });
    expect(unitsOfItemWrite({ pk: 'S#s' }, undefined, false)).toEqual(['S#s', 1]);
  });
});
