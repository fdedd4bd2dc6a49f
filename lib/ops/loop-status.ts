/**
 * The planner loop as `status` shows it: which scheduled invocation ticks the stream (the loop lease
 * on the stream's META item, lib/ports/planner-loop.ts), who waits to take over, and the last tick;
 * when nobody holds it, when the next tick was due.
 */
import type { StreamMeta } from '../ports/ledger-state';
import { loopHolder, type TickChainState } from '../ports/planner-loop';
import { duration, isoTime } from './format';

export type LoopStatus = {
  /**
   * `held`: an invocation ticks the stream; `free`: handed over (a successor takes it at
   * `nextTickDueMs`, or the next scheduled invocation does); `expired`: its holder stopped renewing
   * without handing over (it died or timed out) and the next invocation takes it.
   */
  state: 'held' | 'free' | 'expired';
  /** The holder (`held`), or the last one whose lease ran out (`expired`). */
  ownerToken?: string;
  sinceMs?: number;
  leaseUntilMs?: number;
  /** An invocation waiting to take over. */
  successor?: string;
  /** The last tick the loop recorded (at renewals and hand-overs; the planner run's own time is `lastRunAtMs`). */
  lastTickAtMs?: number;
  /** Left by the holder that handed over: when its next tick was due (`free` only). */
  nextTickDueMs?: number;
};

/** The stream's loop at `nowMs`; undefined when no scheduled invocation ever took it (ad hoc and local runs do not). */
export function loopStatus(meta: StreamMeta | undefined, nowMs: number): LoopStatus | undefined {
  const loop = meta?.loop;
  if (!loop) return undefined;
  const held = loopHolder(loop, nowMs) !== undefined;
  const state = held ? 'held' : loop.ownerToken !== undefined ? 'expired' : 'free';
  return {
    state,
    ...(loop.ownerToken !== undefined ? { ownerToken: loop.ownerToken, sinceMs: loop.sinceMs, leaseUntilMs: loop.expiresAtMs } : {}),
    ...(loop.successor !== undefined ? { successor: loop.successor } : {}),
    ...(loop.lastTickAtMs !== undefined ? { lastTickAtMs: loop.lastTickAtMs } : {}),
    ...(state === 'free' && loop.nextTickDueMs !== undefined ? { nextTickDueMs: loop.nextTickDueMs } : {}),
  };
}

/** `<iso> (<d> ago)` or `<iso> (in <d>)`. */
function when(ms: number, nowMs: number): string {
  return `${isoTime(ms)} (${ms <= nowMs ? `${duration(nowMs - ms)} ago` : `in ${duration(ms - nowMs)}`})`;
}

/**
 * Two status lines: who ticks the stream (the loop's holder, or when its next tick was due; for a
 * stream ticked by the tick chain, its last claimed tick), then its last run and tick.
 */
export function renderLoop(loop: LoopStatus | undefined, lastRunAtMs: number | undefined, nowMs: number, chain?: TickChainState): string[] {
  const lastRun = lastRunAtMs === undefined ? 'no planner run yet' : `last planner run ${when(lastRunAtMs, nowMs)}`;
  const lastTick = loop?.lastTickAtMs === undefined ? '' : `; last tick recorded on the loop ${when(loop.lastTickAtMs, nowMs)}`;
  const head =
    chain && !loop ? `tick chain: tick ${chain.seq} claimed ${when(chain.lastTickAtMs, nowMs)}` : `planner loop: ${loopHead(loop, nowMs)}`;
  return [head, `${lastRun}${lastTick}`];
}

function loopHead(loop: LoopStatus | undefined, nowMs: number): string {
  if (!loop) return 'never taken (scheduled invocations take it; ad hoc and local runs plan without it; the tick chain ticks without it)';
  const successor = loop.successor ? `; successor ${loop.successor} waiting to take over` : '';
  const until = when(loop.leaseUntilMs ?? nowMs, nowMs);
  if (loop.state === 'held') {
    const since = loop.sinceMs === undefined ? '' : ` since ${isoTime(loop.sinceMs)}`;
    return `held by ${loop.ownerToken}${since}, lease until ${until}${successor}`;
  }
  if (loop.state === 'expired') {
    return (
      `not held: the lease of ${loop.ownerToken} ran out at ${until} ` +
      `without a hand-over (the invocation died or timed out)${successor}`
    );
  }
  const due = loop.nextTickDueMs === undefined ? '' : `, next tick due at ${when(loop.nextTickDueMs, nowMs)}`;
  return `free (released by its last holder)${due}${successor}`;
}
