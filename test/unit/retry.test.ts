/** The retry helper (lib/retry.ts) on a fake clock: attempts, backoff and jitter, both budgets, values, abort. */
import { backoffMs, nextRetryDelayMs, NO_JITTER, retry, type Clock, type RetryPolicy } from '../../lib/retry';
import { FakeClock } from './kafka/fake-log';

const transient = new Error('busy');
const always = (): boolean => true;

describe('backoffMs', () => {
  it('grows by the multiplier up to the cap, jittered within the policy range, in whole ms', () => {
    const p: RetryPolicy = { initialBackoffMs: 25, maxBackoffMs: 1_000, jitter: [0.5, 1.5] };
    expect([0, 1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, p, () => 0.5))).toEqual([25, 50, 100, 200, 400, 800, 1000]);
    expect([0, 6].map((n) => backoffMs(n, p, () => 0))).toEqual([13, 500]);
    expect([0, 6].map((n) => backoffMs(n, p, () => 0.999999))).toEqual([37, 1500]);
    const fivefold: RetryPolicy = { initialBackoffMs: 200, maxBackoffMs: 1_000, multiplier: 5, jitter: NO_JITTER };
    expect([0, 1, 2].map((n) => backoffMs(n, fivefold))).toEqual([200, 1000, 1000]);
  });
});

describe('nextRetryDelayMs', () => {
  const p: RetryPolicy = { maxAttempts: 3, initialBackoffMs: 100, maxBackoffMs: 2_000, jitter: NO_JITTER, maxElapsedMs: 1_000 };
  it('stops at maxAttempts (the first attempt counted)', () => {
    expect([0, 1, 2].map((n) => nextRetryDelayMs(p, n, 0))).toEqual([100, 200, undefined]);
  });
  it('retry-start budget: no retry whose wait would end past it; failure budget: none after a failure at or past it', () => {
    expect(nextRetryDelayMs(p, 1, 800)).toBe(200);
    expect(nextRetryDelayMs(p, 1, 801)).toBeUndefined();
    const atFailure: RetryPolicy = { ...p, budget: 'failure' };
    expect(nextRetryDelayMs(atFailure, 1, 999)).toBe(200);
    expect(nextRetryDelayMs(atFailure, 1, 1_000)).toBeUndefined();
  });
});

describe('retry', () => {
  const p: RetryPolicy = { maxAttempts: 4, initialBackoffMs: 100, maxBackoffMs: 1_000, jitter: NO_JITTER };

  it('retries retriable errors after the policy waits and returns the first success', async () => {
    const clock = new FakeClock();
    const seen: Array<[unknown, number, number]> = [];
    const result = await retry(
      async (n) => {
        if (n < 2) throw transient;
        return `ok after ${n}`;
      },
      p,
      { isRetriable: always, clock, onRetry: (r, { retry: n, delayMs }) => void seen.push(['error' in r && r.error, n, delayMs]) },
    );
    expect(result).toBe('ok after 2');
    expect(clock.sleeps).toEqual([100, 200]);
    expect(seen).toEqual([
      [transient, 0, 100],
      [transient, 1, 200],
    ]);
  });

  it('throws a non-retriable error as it is, without waiting; by default no error is retriable', async () => {
    const clock = new FakeClock();
    const bug = new TypeError('bug');
    await expect(retry(() => Promise.reject(bug), p, { isRetriable: (e) => e !== bug, clock })).rejects.toBe(bug);
    await expect(retry(() => Promise.reject(transient), p, { clock })).rejects.toBe(transient);
    expect(clock.sleeps).toEqual([]);
  });

  it('gives up after maxAttempts with the last error, or what giveUp makes of it', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const fail = async (): Promise<never> => {
      calls += 1;
      throw transient;
    };
    await expect(retry(fail, p, { isRetriable: always, clock })).rejects.toBe(transient);
    expect(calls).toBe(4);
    const err = await retry(fail, p, {
      isRetriable: always,
      clock,
      giveUp: (e, spent) => new Error(`gave up: ${(e as Error).message} after ${spent.attempts} in ${spent.elapsedMs} ms`),
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('gave up: busy after 4 in 700 ms');
  });

  it('retries values it is told to, returning the last one when the policy runs out', async () => {
    const clock = new FakeClock();
    const answers = [503, 503, 200];
    const released: number[] = [];
    const got = await retry(async (n) => answers[n]!, p, {
      retryValue: (status) => status >= 500,
      onRetry: (r) => void released.push('value' in r ? r.value : -1),
      clock,
    });
    expect(got).toBe(200);
    expect(released).toEqual([503, 503]);
    expect(await retry(async () => 503, p, { retryValue: (s) => s >= 500, clock })).toBe(503);
  });

  it('bounds the total time: the retry-start budget counts the wait, attempts taking time included', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const timed: RetryPolicy = { initialBackoffMs: 100, maxBackoffMs: 1_000, jitter: NO_JITTER, maxElapsedMs: 1_000 };
    await expect(
      retry(
        async () => {
          calls += 1;
          clock.time += 50;
          throw transient;
        },
        timed,
        { isRetriable: always, clock },
      ),
    ).rejects.toBe(transient);
    // Failures at 50, 200, 450, 900 ms; 900 + 800 would pass 1 s.
    expect(calls).toBe(4);
    expect(clock.sleeps).toEqual([100, 200, 400]);
  });

  it('the failure budget lets the retry after an earlier failure start past it', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const late: RetryPolicy = { initialBackoffMs: 400, maxBackoffMs: 400, jitter: NO_JITTER, maxElapsedMs: 500, budget: 'failure' };
    await expect(
      retry(
        async () => {
          calls += 1;
          throw transient;
        },
        late,
        { isRetriable: always, clock },
      ),
    ).rejects.toBe(transient);
    // Failures at 0 and 400 ms are retried (the second retry starts at 800); the one at 800 is not.
    expect(calls).toBe(3);
  });

  it('an aborted signal stops a wait and an attempt in flight at once, with its reason', async () => {
    const reason = new Error('deadline');
    const waiting = new AbortController();
    const clock: Clock = {
      now: () => 0,
      sleep: (_ms, signal) => new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    };
    const pending = retry(() => Promise.reject(transient), p, { isRetriable: always, clock, signal: waiting.signal });
    waiting.abort(reason);
    await expect(pending).rejects.toBe(reason);
    const inFlight = new AbortController();
    const hanging = retry(() => new Promise<never>(() => undefined), p, { signal: inFlight.signal });
    inFlight.abort(reason);
    await expect(hanging).rejects.toBe(reason);
    let calls = 0;
    await expect(retry(async () => ++calls, p, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(calls).toBe(0);
  });
});
