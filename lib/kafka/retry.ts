/**
 * Bounded retries with exponential backoff for Kafka calls that may fail transiently (leader moved,
 * broker restarting, connection dropped). Bounded in total time, not only in attempts, so a reader
 * inside a Lambda never retries past its budget; an AbortSignal stops waiting at once.
 */
import { KafkaError } from '../errors';

export type RetryPolicy = {
  /** Backoff before the first retry; doubles per retry. */
  initialBackoffMs: number;
  /** Cap of one backoff. */
  maxBackoffMs: number;
  /** No retry starts once this much time has passed since the first attempt. */
  maxElapsedMs: number;
};

/** 100 ms doubling to 2 s, at most 30 s in all: well inside a processor Lambda's budget. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { initialBackoffMs: 100, maxBackoffMs: 2_000, maxElapsedMs: 30_000 };

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

/** Backoff before retry number `retry` (0-based): exponential, capped, with "equal jitter" (50-100 %). */
export function backoffMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxBackoffMs, policy.initialBackoffMs * 2 ** retry);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export type RetryOptions = {
  /** Names the call in the error thrown when retries run out. */
  operation: string;
  policy: RetryPolicy;
  isRetriable(error: unknown): boolean;
  /** Runs before each retry (e.g. mark the cached leader stale). */
  beforeRetry?(error: unknown, retry: number): void | Promise<void>;
  signal?: AbortSignal;
  clock?: Clock;
  random?: () => number;
};

/**
 * Runs `attempt` until it succeeds, fails with a non-retriable error (thrown as is), or the time
 * budget runs out (then a retriable `KafkaError` wrapping the last error is thrown).
 */
export async function withRetries<T>(attempt: (retry: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const clock = options.clock ?? systemClock;
  const { signal, policy } = options;
  const startedAt = clock.now();
  for (let retry = 0; ; retry++) {
    if (signal?.aborted) throw abortReason(signal);
    try {
      return await abortable(attempt(retry), signal);
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      if (!options.isRetriable(error)) throw error;
      const delayMs = backoffMs(retry, policy, options.random);
      const elapsedMs = clock.now() - startedAt;
      if (elapsedMs + delayMs > policy.maxElapsedMs) {
        const last = error as { message?: unknown; type?: unknown } | undefined;
        throw new KafkaError(
          `${options.operation}: gave up after ${retry + 1} attempts in ${elapsedMs} ms: ${String(last?.message ?? error)}`,
          { cause: error, type: typeof last?.type === 'string' ? last.type : undefined, retriable: true },
        );
      }
      await clock.sleep(delayMs, signal);
      await options.beforeRetry?.(error, retry);
    }
  }
}
