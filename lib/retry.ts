/**
 * The one retry helper: `retry(fn, policy, options)` runs `fn` again after a backoff while it fails
 * with an error (or answers a value) its caller calls worth asking again for, within a named
 * policy's attempts and time. Each policy lives beside its caller, with why its numbers:
 *
 * | policy | where | attempts | backoff | budget |
 * | --- | --- | --- | --- | --- |
 * | `KAFKA_CALL_RETRIES` | `kafka/retry.ts` (range reader's Fetch) | by time | 100 ms doubling to 2 s, 50-100 % | 30 s, retry start |
 * | `KAFKA_METADATA_RETRIES` | `kafka/metadata.kafkajs.ts` | 6 | 100 ms doubling to 2 s, none | 2 s, at failure (offsets: retry start) |
 * | `LEDGER_CONFLICT_RETRIES` | `ledger/retry.dynamodb.ts` | 7 | 25 ms doubling to 1 s, 50-150 % | none |
 * | `REGISTRY_RETRIES` | `schemas/registry.confluent.ts` | 3 | 200 ms, then 1 s | none |
 * | `OPERATOR_LEASE_WAIT` | `ops/lease.ts` | by time | 200 ms doubling to 2 s, none | 15 s, at failure |
 *
 * How they stack on the clients' own retries (each of our attempts is one client call, which may
 * itself be several requests):
 *
 * - DynamoDB: the SDK's standard mode makes up to 3 attempts per call (`maxAttempts`, default 3, or
 *   `AWS_MAX_ATTEMPTS`; `dynamoClientFromEnv` keeps the default), with full-jitter backoff from
 *   100 ms (500 ms after throttling), for throttling, 5xx and network errors. The ledger does not
 *   retry what the SDK already did, with one exception: the SDK never retries a write refused by a
 *   transaction (`TransactionConflictException`) nor a cancelled transaction (its reasons
 *   `TransactionConflict`, `ThrottlingError`), so those are ours alone (7 sends in all). A marked sink
 *   write retried alone after throttling or a 5xx (`marked-writes.dynamodb.ts`) does stack: up to
 *   3 x 7 = 21 sends of one idempotent UpdateItem within a few seconds, which is still far cheaper
 *   than failing the folded batch around it (re-read and re-run from its start).
 * - Kafka: kafkajs retries connects and metadata refreshes itself (`KAFKAJS_RETRY`, 3 attempts,
 *   200 ms then 400 ms); our Kafka policies are bounded in time (30 s per Fetch, 2 s per metadata
 *   call), so the stack cannot outlast them by more than one call's own duration.
 * - AWS destinations (SQS, SNS, S3): the SDK's 2 attempts per call (`destinationClientConfig`), no
 *   loop of ours: a failed delivery stays pending and the planner's next run retries it.
 * - Glue registry: the SDK's 3 attempts, no loop of ours. Confluent registry: Node's fetch, which
 *   never retries; `REGISTRY_RETRIES` alone.
 *
 * Loops that only look like retries stay where they are, marked as such: re-sending what is still
 * pending after a lost condition (`settle` in `writer.dynamodb.ts`, lease takes in
 * `range-writes.dynamodb.ts`, `listOffsets` in `metadata.kafkajs.ts`, which takes its waits from
 * `nextRetryDelayMs`), and a record's handler attempts (`processor/committer.ts`, counted with the
 * chunk's failed attempt, bounded by the stream's `maxAttempts`, its backoff from `backoffMs`).
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
