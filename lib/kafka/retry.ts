/**
 * Bounded retries for Kafka calls that may fail transiently (leader moved, broker restarting,
 * connection dropped), on the project's retry helper (lib/retry.ts). Bounded in total time, not in
 * attempts, so a reader inside a Lambda never retries past its budget; an AbortSignal stops waiting
 * at once. Giving up throws a retriable `KafkaError` naming the call, like every Kafka failure.
 */
import { KafkaError } from '../errors';
import { retry, type Clock, type Random, type RetryPolicy } from '../retry';

/**
 * One Fetch (the range reader): 100 ms doubling to 2 s, equal jitter, no retry starting past 30 s.
 * A leader election takes a few seconds and a broker restart tens of them; 30 s rides those out and
 * stays well inside a processor Lambda's budget (each attempt's kafkajs connect retries included).
 */
export const KAFKA_CALL_RETRIES: RetryPolicy = {
  initialBackoffMs: 100,
  maxBackoffMs: 2_000,
  jitter: [0.5, 1],
  maxElapsedMs: 30_000,
  budget: 'retry-start',
};

export type KafkaRetryOptions = {
  /** Names the call in the error thrown when retries run out. */
  operation: string;
  policy: RetryPolicy;
  isRetriable(error: unknown): boolean;
  /** Runs once a retry is decided, before its wait (e.g. mark the cached leader stale). */
  beforeRetry?(error: unknown, retry: number): void | Promise<void>;
  signal?: AbortSignal;
  clock?: Clock;
  random?: Random;
};

/**
 * Runs `attempt` until it succeeds, fails with a non-retriable error (thrown as is), or the policy
 * runs out (then a retriable `KafkaError` wrapping the last error is thrown).
 */
export function withRetries<T>(attempt: (retry: number) => Promise<T>, options: KafkaRetryOptions): Promise<T> {
  const { beforeRetry } = options;
  return retry(attempt, options.policy, {
    isRetriable: options.isRetriable,
    signal: options.signal,
    clock: options.clock,
    random: options.random,
    ...(beforeRetry && { onRetry: (reason, { retry: n }) => beforeRetry('error' in reason ? reason.error : undefined, n) }),
    giveUp: (error, { attempts, elapsedMs }) => {
      const last = error as { message?: unknown; type?: unknown } | undefined;
      return new KafkaError(
        `${options.operation}: gave up after ${attempts} attempts in ${elapsedMs} ms: ${String(last?.message ?? error)}`,
        {
          cause: error,
          type: typeof last?.type === 'string' ? last.type : undefined,
          retriable: true,
        },
      );
    },
  });
}
