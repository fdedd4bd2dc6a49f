/** mapWithConcurrency: the bound on calls in flight, the order of results, and what a failure stops. */
import fc from 'fast-check';
import { mapWithConcurrency } from '../../lib/concurrency';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('mapWithConcurrency', () => {
  it('keeps at most `limit` calls in flight and the results in input order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat({ max: 3 }), { maxLength: 30 }), fc.integer({ min: 1, max: 6 }), async (delays, limit) => {
        let inFlight = 0;
        let peak = 0;
        const out = await mapWithConcurrency(delays, limit, async (d) => {
          peak = Math.max(peak, ++inFlight);
          for (let i = 0; i < d; i++) await tick();
          inFlight--;
          return d * 10;
        });
        expect(out).toEqual(delays.map((d) => d * 10));
        expect(peak).toBeLessThanOrEqual(Math.max(1, limit));
      }),
    );
  });

  it('starts no call after a failure and rejects once the calls in flight have settled', async () => {
    const started: number[] = [];
    const settled: number[] = [];
    const run = mapWithConcurrency([0, 1, 2, 3, 4, 5, 6, 7], 3, async (i) => {
      started.push(i);
      for (let t = 0; t < (i === 1 ? 1 : 3); t++) await tick();
      settled.push(i);
      if (i === 1) throw new Error('boom 1');
      return i;
    });
    await expect(run).rejects.toThrow('boom 1');
    expect(started).toEqual([0, 1, 2]);
    expect(settled.sort()).toEqual([0, 1, 2]);
  });
});
