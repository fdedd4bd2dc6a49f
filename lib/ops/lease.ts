/** Operator changes hold the stream's planner lease, so no planner run can interleave (I5). */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { PreconditionError } from '../errors';
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
 * Runs `fn` holding the planner lease of `stream`, waiting up to `waitMs` for a running planner to
 * finish first, and releases it afterwards (a crash leaves it to expire after `leaseMs`).
 */
export async function withOperatorLease<T>(
  ledger: Ledger,
  input: { stream: string; who: string; leaseMs?: number; waitMs?: number; clock?: () => number; storeClock?: StoreClock },
  fn: (lease: OperatorLease) => Promise<T>,
): Promise<T> {
  const clock = input.clock ?? Date.now;
  const ownerToken = `operator:${input.who}:${randomUUID()}`;
  const deadline = clock() + (input.waitMs ?? 15_000);
  for (let attempt = 0; ; attempt++) {
    const nowMs = input.storeClock ? await input.storeClock() : clock();
    const got = await ledger.acquirePlannerLease({ stream: input.stream, ownerToken, nowMs, leaseMs: input.leaseMs ?? 60_000 });
    if (got.acquired) {
      const lease = { stream: input.stream, epoch: got.epoch, ownerToken };
      try {
        return await fn(lease);
      } finally {
        await ledger.releasePlannerLease(lease).catch(() => undefined);
      }
    }
    if (clock() >= deadline) {
      throw new PreconditionError(streamBeingPlannedMessage(input.stream, got.holder, got.leaseExpiresAtMs));
    }
    // A planner loop keeps the lease between its ticks: asked, it releases it after its current tick.
    await ledger.requestPlannerLease({ stream: input.stream, ownerToken }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, Math.min(2000, 200 * 2 ** attempt)));
  }
}
