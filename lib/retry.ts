/**
 * The one retry helper: `retry(fn, policy, options)` runs `fn` again after a backoff while it fails
 * with an error (or answers a value) its caller calls worth asking again for, within a named
 * policy's attempts and time. One helper, so every retry in the engine backs off, jitters, stops at
 * its budget and answers an abort the same way, and a policy is a value a test can run on a fake
 * clock. Each named policy is exported beside its caller, with why its numbers; docs/architecture.md
 * "Retries" tabulates them and how they stack on the clients' own retries (test/unit/docs/retries.test.ts
 * keeps that table to the policies' values).
 */

export type RetryPolicy = {
  /** Attempts in all, the first included. Default: unbounded (the time budget alone ends them). */
  maxAttempts?: number;
  /** Backoff ceiling before the first retry. */
  initialBackoffMs: number;
  /** Cap of one backoff ceiling. */
  maxBackoffMs: number;
  /** The ceiling's growth per retry. Default 2 (doubling). */
  multiplier?: number;
  /**
   * The wait is the ceiling times a uniform draw in `[low, high]`: `[1, 1]` none; `[0.5, 1]`
   * "equal jitter" (the default); `[0.5, 1.5]` centred on the ceiling.
   */
  jitter?: readonly [number, number];
  /** Time budget since the first attempt began. Default: none. */
  maxElapsedMs?: number;
  /**
   * What the budget bounds. `retry-start` (default): no retry starts past it (a retry whose wait
   * would end past the budget is not made). `failure`: no retry after a failure at or past it (the
   * retry after an earlier failure may start up to one wait later).
   */
  budget?: 'retry-start' | 'failure';
};

/** Uniform draw in [0, 1); injectable so tests pick the jitter. */
export type Random = () => number;

/** No jitter: the wait is the ceiling itself. */
export const NO_JITTER: readonly [number, number] = [1, 1];

/** Time source and sleep, injectable so tests run without real waiting. */
export type Clock = {
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
};

/** The reason an aborted signal carries (an AbortError DOMException unless the caller gave one). */
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Real time: Date.now and an abortable setTimeout. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(abortReason(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** Real time with the caller's sleep (adapters that take a `sleep` dependency so tests need not wait). */
export function clockWithSleep(sleep: (ms: number) => Promise<void>): Clock {
  return { now: () => Date.now(), sleep: (ms) => sleep(ms) };
}

/**
 * `promise`, or a rejection with the signal's reason as soon as it aborts. The abandoned promise's
 * eventual rejection is swallowed (a request in flight cannot be recalled; its result is unused).
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(abortReason(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      promise.catch(() => undefined);
      reject(abortReason(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** The wait (whole ms) before retry number `retry` (0-based): the capped exponential ceiling, jittered. */
export function backoffMs(retry: number, policy: RetryPolicy, random: Random = Math.random): number {
  const ceiling = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * (policy.multiplier ?? 2) ** retry);
  const [low, high] = policy.jitter ?? [0.5, 1];
  return Math.round(ceiling * (low + random() * (high - low)));
}

/**
 * The wait before retry number `retry` (0-based) after an attempt failed `elapsedMs` into the call,
 * or undefined when the policy allows no more (attempts or time spent). For loops that decide
 * themselves what to send again (a partial answer) but wait as a policy says.
 */
export function nextRetryDelayMs(policy: RetryPolicy, retry: number, elapsedMs: number, random?: Random): number | undefined {
  if (retry + 1 >= (policy.maxAttempts ?? Infinity)) return undefined;
  const budgetMs = policy.maxElapsedMs ?? Infinity;
  const atStart = (policy.budget ?? 'retry-start') === 'retry-start';
  if (!atStart && elapsedMs >= budgetMs) return undefined;
  const delayMs = backoffMs(retry, policy, random);
  if (atStart && elapsedMs + delayMs > budgetMs) return undefined;
  return delayMs;
}

/** Why a retry is made: the error thrown, or the value answered that asked for one. */
export type RetryReason<T> = { error: unknown } | { value: T };

export type RetryOptions<T> = {
  /** Whether a thrown error is worth another attempt. Default: none is (only values are retried). */
  isRetriable?(error: unknown): boolean;
  /** Whether an answer is worth asking again for (a 5xx, a lease still held); the last is returned when retries run out. */
  retryValue?(value: T): boolean;
  /** Runs once a retry is decided, before its wait (release a response, ask a holder to let go, log). */
  onRetry?(reason: RetryReason<T>, retry: { retry: number; delayMs: number }): void | Promise<void>;
  /** What to throw when retries run out on an error (default: the error itself). */
  giveUp?(error: unknown, spent: { attempts: number; elapsedMs: number }): unknown;
  /** Stops at once, waits and attempts in flight included, rejecting with the signal's reason. */
  signal?: AbortSignal;
  clock?: Clock;
  random?: Random;
};

/**
 * Runs `fn` (given the 0-based retry number) until it answers a value not to retry, throws an error
 * not to retry (thrown as it is), or the policy runs out: then the last value is returned, or
 * `giveUp` of the last error thrown.
 */
export async function retry<T>(fn: (retry: number) => Promise<T>, policy: RetryPolicy, options: RetryOptions<T> = {}): Promise<T> {
  const clock = options.clock ?? systemClock;
  const { signal } = options;
  const startedAtMs = clock.now();
  for (let n = 0; ; n++) {
    if (signal?.aborted) throw abortReason(signal);
    let reason: RetryReason<T>;
    try {
      const value = await abortable(fn(n), signal);
      if (!options.retryValue?.(value)) return value;
      reason = { value };
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      if (!options.isRetriable?.(error)) throw error;
      reason = { error };
    }
    const elapsedMs = clock.now() - startedAtMs;
    const delayMs = nextRetryDelayMs(policy, n, elapsedMs, options.random);
    if (delayMs === undefined) {
      if ('value' in reason) return reason.value;
      throw options.giveUp ? options.giveUp(reason.error, { attempts: n + 1, elapsedMs }) : reason.error;
    }
    await options.onRetry?.(reason, { retry: n, delayMs });
    await clock.sleep(delayMs, signal);
  }
}
