/** Operator changes hold the stream's planner lease, so no planner run can interleave (I5). */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { PreconditionError } from '../errors';
import { NO_JITTER, retry, systemClock, type RetryPolicy } from '../retry';
import type { Ledger, StoreClock } from '../ports/ledger';
import { streamBeingPlannedMessage } from './messages';

export type OperatorLease = { stream: string; epoch: number; ownerToken: string };

/** Who is changing things: $USER, else the OS account name (recorded in the ledger). */
export function operatorName(env: NodeJS.ProcessEnv = process.env): string {
  if (env.USER) return env.USER;
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

/**
 * Waiting for a running planner's lease: asked again at 200 ms doubling to 2 s, no jitter (one
 * operator), for 15 s by default (`waitMs`). A planner loop hands the lease over after its current
 * tick once asked, so a second or two is the usual wait; 15 s covers a slow tick, and an operator at
 * a terminal gets an answer (who holds it, until when) rather than an open-ended wait.
 */
export const OPERATOR_LEASE_WAIT: RetryPolicy = {
  initialBackoffMs: 200,
  maxBackoffMs: 2_000,
  jitter: NO_JITTER,
  maxElapsedMs: 15_000,
  budget: 'failure',
};

/**
 * Runs `fn` holding the planner lease of `stream`, waiting up to `waitMs` for a running planner to
 * finish first, and releases it afterwards (a crash leaves it to expire after `leaseMs`).
 */
export async function withOperatorLease<T>(
  ledger: Ledger,
  input: { stream: string; who: string; leaseMs?: number; waitMs?: number; clock?: () => number; storeClock?: StoreClock },
  fn: (lease: OperatorLease) => Promise<T>,
): Promise<T> {
  const now = input.clock ?? Date.now;
  const ownerToken = `operator:${input.who}:${randomUUID()}`;
  const policy = { ...OPERATOR_LEASE_WAIT, ...(input.waitMs !== undefined && { maxElapsedMs: input.waitMs }) };
  const got = await retry(
    async () => {
      const nowMs = input.storeClock ? await input.storeClock() : now();
      return ledger.acquirePlannerLease({ stream: input.stream, ownerToken, nowMs, leaseMs: input.leaseMs ?? 60_000 });
    },
    policy,
    {
      // Held by another: a value, asked again until the wait is over.
      retryValue: (answer) => !answer.acquired,
      // A planner loop keeps the lease between its ticks: asked, it releases it after its current tick.
      onRetry: () => ledger.requestPlannerLease({ stream: input.stream, ownerToken }).catch(() => undefined),
      clock: { now, sleep: systemClock.sleep },
    },
  );
  if (!got.acquired) throw new PreconditionError(streamBeingPlannedMessage(input.stream, got.holder, got.leaseExpiresAtMs));
  const lease = { stream: input.stream, epoch: got.epoch, ownerToken };
  try {
    return await fn(lease);
  } finally {
    await ledger.releasePlannerLease(lease).catch(() => undefined);
  }
}
