/** Bounded exponential backoff and abortable waits. */
import { KafkaError } from '../../../lib/errors';
import { withRetries } from '../../../lib/kafka/retry';
import { abortable, backoffMs, systemClock, type RetryPolicy } from '../../../lib/retry';
import { FakeClock } from './fake-log';

const policy = { initialBackoffMs: 100, maxBackoffMs: 1_000, maxElapsedMs: 3_000 } satisfies RetryPolicy;
const retriable = Object.assign(new Error('not leader'), { retriable: true, type: 'NOT_LEADER_FOR_PARTITION' });

describe('backoffMs', () => {
  it('doubles up to the cap, with 50-100 % jitter', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(n, policy, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(n, policy, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
  });
});

describe('withRetries', () => {
  it('retries retriable errors, running beforeRetry, and returns the first success', async () => {
    const clock = new FakeClock();
    const seen: number[] = [];
    let calls = 0;
    const result = await withRetries(
      async (retry) => {
        calls += 1;
        if (retry < 2) throw retriable;
        return 'ok';
      },
      { operation: 'op', policy, isRetriable: () => true, beforeRetry: (_e, n) => void seen.push(n), clock, random: () => 1 },
    );
    expect(result).toBe('ok');
    expect(calls).toBe(3);
    expect(seen).toEqual([0, 1]);
    expect(clock.sleeps).toEqual([100, 200]);
  });

  it('stops once the next backoff would pass maxElapsedMs, wrapping the last error', async () => {
    const clock = new FakeClock();
    const error = await withRetries(
      async () => {
        clock.time += 50; // each attempt takes time too
        throw retriable;
      },
      { operation: 'fetch t/0', policy, isRetriable: () => true, clock, random: () => 1 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KafkaError);
    expect(error).toMatchObject({ retriable: true, type: 'NOT_LEADER_FOR_PARTITION', cause: retriable });
    expect((error as Error).message).toMatch(/^fetch t\/0: gave up after 6 attempts in 2800 ms: not leader$/);
    expect(clock.now()).toBeLessThanOrEqual(policy.maxElapsedMs);
  });

  it('throws non-retriable errors as they are', async () => {
    const bug = new TypeError('bug');
    await expect(withRetries(async () => Promise.reject(bug), { operation: 'op', policy, isRetriable: () => false })).rejects.toBe(bug);
  });

  it('stops waiting when the signal aborts, with its reason', async () => {
    const controller = new AbortController();
    const reason = new Error('deadline');
    setTimeout(() => controller.abort(reason), 20);
    const t0 = Date.now();
    await expect(
      withRetries(async () => Promise.reject(retriable), {
        operation: 'op',
        policy: { ...policy, initialBackoffMs: 10_000, maxBackoffMs: 10_000, maxElapsedMs: 60_000 },
        isRetriable: () => true,
        signal: controller.signal,
      }),
    ).rejects.toBe(reason);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});

describe('abortable and systemClock.sleep', () => {
  it('reject on abort and swallow the abandoned promise', async () => {
    const controller = new AbortController();
    let rejectLater: (e: Error) => void = () => undefined;
    const never = new Promise<never>((_, reject) => (rejectLater = reject));
    const racing = abortable(never, controller.signal);
    controller.abort();
    await expect(racing).rejects.toMatchObject({ name: 'AbortError' });
    rejectLater(new Error('late')); // must not surface as an unhandled rejection
    await expect(systemClock.sleep(10_000, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
    await expect(abortable(Promise.resolve(7), new AbortController().signal)).resolves.toBe(7);
  });
});
