/**
 * When and how long the DynamoDB adapter sends a write again, on the retry helper (lib/retry.ts).
 * Each send is one SDK call, which makes up to 3 attempts itself for throttling, 5xx and network
 * errors (the client's `maxAttempts`); the SDK never retries a write refused by a running
 * transaction nor a cancelled transaction, so a conflict is retried here alone.
 */
import { StoreError, ThrottledError } from '../errors';
import type { RetryPolicy } from '../retry';

/**
 * A conflicted, throttled or failed idempotent write: 7 sends, 25 ms doubling to 1 s, 50-150 %
 * jitter, about 2.6 s of waits in all. A conflicting transaction holds an item for milliseconds, so
 * short first waits; the jitter spreads writers that conflicted with each other; 7 sends outlast a
 * burst of concurrent planners and processors on one group item, and a write that still conflicts
 * fails its planner run or processor invocation, which is retried as a whole.
 */
export const LEDGER_CONFLICT_RETRIES: RetryPolicy = {
  maxAttempts: 7,
  initialBackoffMs: 25,
  maxBackoffMs: 1_000,
  jitter: [0.5, 1.5],
};

/**
 * Rounds after the first of a loop that sends again what is still pending after a lost condition
 * (packed requests, lease takes): not a retry of the same call, bounded like one.
 */
export const CONFLICT_RETRIES = LEDGER_CONFLICT_RETRIES.maxAttempts! - 1;

/** A failure worth sending the same idempotent write again for: throttling, or DynamoDB's own 5xx. */
export const isTransient = (err: unknown): boolean =>
  err instanceof ThrottledError || (err instanceof StoreError && (err.cause as { $fault?: string } | undefined)?.$fault === 'server');
