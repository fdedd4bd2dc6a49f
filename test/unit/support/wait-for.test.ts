/** The tests' shared wait: returns the first awaited value, retries after a throw, fails naming what it waited for. */
import { waitFor } from '../../support/wait-for';

/** A probe answering `values` in turn (the last one from then on), counting its calls. */
function answers<T>(...values: T[]): { probe: () => T; calls: () => number } {
  let n = 0;
  return { probe: () => values[Math.min(n++, values.length - 1)]!, calls: () => n };
}

describe('waitFor', () => {
  it('returns the first value that is neither undefined nor false, and probes no further', async () => {
    const { probe, calls } = answers<number | undefined | false>(undefined, false, 0, 7);
    await expect(waitFor('a number', probe, { intervalMs: 1 })).resolves.toBe(0);
    expect(calls()).toBe(3);
  });

  it('awaits an async probe and, with `until`, the first value it accepts', async () => {
    const { probe, calls } = answers([1], [1, 2], [1, 2, 3]);
    const got = await waitFor('three items', async () => probe(), { until: (v) => v.length === 3, intervalMs: 1 });
    expect(got).toEqual([1, 2, 3]);
    expect(calls()).toBe(3);
  });

  it('retries after a thrown probe, sync or async', async () => {
    let n = 0;
    // Not `async`: the first throw is synchronous, the second a rejected promise.
    const flaky = (): string | Promise<string> => {
      n += 1;
      if (n === 1) throw new Error('not yet');
      if (n === 2) return Promise.reject(new Error('still not'));
      return 'ready';
    };
    await expect(waitFor('the flaky probe', flaky, { intervalMs: 1 })).resolves.toBe('ready');
    expect(n).toBe(3);
  });

  it('times out with a message naming the condition and the last value seen', async () => {
    const { probe } = answers<number[]>([1], [1, 2]);
    const started = Date.now();
    await expect(waitFor('three items', probe, { until: (v) => v.length === 3, timeoutMs: 50, intervalMs: 5 })).rejects.toThrow(
      'timed out after 50 ms waiting for three items; last value: [ 1, 2 ]',
    );
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('times out with the last error seen, kept as the cause', async () => {
    const last = new Error('broker not ready');
    const failure = await waitFor('the broker', () => Promise.reject(last), { timeoutMs: 30, intervalMs: 5 }).catch((e: Error) => e);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe('timed out after 30 ms waiting for the broker; last error: Error: broker not ready');
    expect((failure as Error).cause).toBe(last);
  });

  it('keeps its deadline when a probe hangs, saying so and what the probe before it saw', async () => {
    let n = 0;
    const hangsSecond = (): Promise<boolean> => (n++ === 0 ? Promise.resolve(false) : new Promise<boolean>(() => undefined));
    await expect(waitFor('the hanging probe', hangsSecond, { timeoutMs: 50, intervalMs: 5 })).rejects.toThrow(
      'timed out after 50 ms waiting for the hanging probe; last value: false; the last probe was still running at the deadline',
    );
    const never = (): Promise<string> => new Promise<string>(() => undefined);
    await expect(waitFor('a probe that never answers', never, { timeoutMs: 20 })).rejects.toThrow(
      'timed out after 20 ms waiting for a probe that never answers; no probe answered before the deadline',
    );
  });
});
