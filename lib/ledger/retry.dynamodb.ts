/** When and how long the DynamoDB adapter waits before sending a write again. */
import { StoreError, ThrottledError } from '../errors';

/** Attempts after the first for a conflicted, throttled or failed idempotent write. */
export const CONFLICT_RETRIES = 6;

/** A failure worth sending the same idempotent write again for: throttling, or DynamoDB's own 5xx. */
export const isTransient = (err: unknown): boolean =>
  err instanceof ThrottledError || (err instanceof StoreError && (err.cause as { $fault?: string } | undefined)?.$fault === 'server');

/** The jittered wait before retry `attempt` (0-based) of a conflicted or throttled write: 25 ms doubling, at most 1 s. */
export const backoffMs = (attempt: number): number => Math.min(1000, 25 * 2 ** attempt) * (0.5 + Math.random());
