/**
 * Port: the planner loop lease. A scheduled planner invocation ticks a stream every trigger interval
 * for as long as it runs; exactly one invocation ticks a stream at a time. It holds the stream's loop
 * (this lease, on the stream's META item beside the planner lease); the next scheduled invocation
 * asks it to hand over and takes over at the tick it was due next. Each tick is still one planner
 * run fenced by its own epoch (the planner lease, I5): the loop lease decides who ticks, the epoch
 * keeps any write of a tick that outlived its loop harmless. Like every ledger write, a lost
 * condition is a value, never thrown.
 */
import type { WriteOutcome } from './ledger';

/** A stream's loop as the ledger holds it. All times are store time (epoch ms). */
export type PlannerLoopState = {
  /** The invocation ticking the stream; absent once released. */
  ownerToken?: string;
  /** When the holder took the loop. */
  sinceMs?: number;
  /** The holder's until then, unless renewed or released. */
  expiresAtMs?: number;
  /** An invocation waiting to take over, which the holder hands over to after its current tick. */
  successor?: string;
  /** The last tick of any holder (what `status` shows, what the hand-over gap is measured from). */
  lastTickAtMs?: number;
  /** Left by a holder that handed over: when its next tick was due (the successor's first tick). */
  nextTickDueMs?: number;
};

/** The outcome of asking for the loop: taken (with what the last holder left), or held by another. */
export type LoopTake = { taken: true; previous: PlannerLoopState } | { taken: false; holder: PlannerLoopState };

/** The outcome of renewing: still held (and whether someone waits to take over), or lost. */
export type LoopRenewal = { held: true; successor?: string } | { held: false };

export type PlannerLoopLease = {
  /**
   * Takes the stream's loop if nobody holds it (never taken, released, or expired at `nowMs`),
   * conditional on the state read; otherwise returns the holder and, when `asSuccessor` and no other
   * invocation waits already, records the caller as the successor the holder is to hand over to.
   * Creates the stream's META item when there is none.
   */
  takePlannerLoop(input: { stream: string; ownerToken: string; nowMs: number; leaseMs: number; asSuccessor: boolean }): Promise<LoopTake>;
  /**
   * Extends the holder's loop to `nowMs + leaseMs` and records its last tick, conditional on still
   * holding it; says whether a successor waits.
   */
  renewPlannerLoop(input: {
    stream: string;
    ownerToken: string;
    nowMs: number;
    leaseMs: number;
    lastTickAtMs?: number;
  }): Promise<LoopRenewal>;
  /**
   * Hands the loop over: frees it, conditional on still holding it, leaving the last tick and when
   * the next is due for whoever takes it next (the waiting successor, or the next schedule).
   */
  releasePlannerLoop(input: { stream: string; ownerToken: string; lastTickAtMs?: number; nextTickDueMs: number }): Promise<WriteOutcome>;
};

// The rules of the lease, once: the in-memory ledger applies them directly, the DynamoDB codec
// writes the same rules as condition and update expressions.

/** Who holds `loop` at `nowMs`: its owner while unexpired, else nobody. */
export function loopHolder(loop: PlannerLoopState | undefined, nowMs: number): string | undefined {
  return loop?.ownerToken !== undefined && (loop.expiresAtMs ?? 0) >= nowMs ? loop.ownerToken : undefined;
}

/** Whether `ownerToken` may take the loop now: nobody holds it, or it does already (a retried request). */
export function mayTakeLoop(loop: PlannerLoopState | undefined, ownerToken: string, nowMs: number): boolean {
  const holder = loopHolder(loop, nowMs);
  return holder === undefined || holder === ownerToken;
}

/** The loop once `ownerToken` took it: the successor and the next due time are consumed, the last tick kept. */
export function takenLoop(prev: PlannerLoopState | undefined, ownerToken: string, nowMs: number, leaseMs: number): PlannerLoopState {
  return {
    ownerToken,
    sinceMs: nowMs,
    expiresAtMs: nowMs + leaseMs,
    ...(prev?.lastTickAtMs !== undefined ? { lastTickAtMs: prev.lastTickAtMs } : {}),
  };
}

/** Whether `ownerToken` may be recorded as the successor of a held loop: none is recorded, or it is already. */
export function maySucceed(loop: PlannerLoopState, ownerToken: string): boolean {
  return loop.successor === undefined || loop.successor === ownerToken;
}

/** The loop once its holder handed it over: nobody holds it; the successor, last tick and next due time stay for the taker. */
export function releasedLoop(prev: PlannerLoopState, lastTickAtMs: number | undefined, nextTickDueMs: number): PlannerLoopState {
  const lastTick = lastTickAtMs ?? prev.lastTickAtMs;
  return {
    ...(prev.successor !== undefined ? { successor: prev.successor } : {}),
    ...(lastTick !== undefined ? { lastTickAtMs: lastTick } : {}),
    nextTickDueMs,
  };
}

/**
 * A stream's tick chain (intervals of several seconds, ticked by delayed queue messages rather than
 * a resident loop): the last message that ticked it. Kept on the stream's META item.
 */
export type TickChainState = {
  /** The sequence number of the last tick message that claimed its tick; each message names the next. */
  seq: number;
  /** Store time of that claim: the watchdog restarts a chain whose last tick is too old. */
  lastTickAtMs: number;
  /** Who claimed it (the invocation): its own claim sent again (a lost answer) still counts as its claim. */
  claimedBy?: string;
};

/** The tick chain's write: one claim per tick message, so a duplicate or stale message ticks nothing. */
export type PlannerTickChain = {
  /**
   * Claims tick `seq` of the stream's chain for `claimedBy`: applied when the chain's last claimed
   * tick is `seq - 1` (or there is none and `seq` is 1), recording `seq`, `nowMs` and `claimedBy`, or
   * when `claimedBy` already claimed `seq` (the same claim sent again after its answer was lost);
   * `condition-failed` otherwise (the message is a duplicate, or stale after a restart). Creates the
   * stream's META item when there is none.
   */
  claimChainTick(input: { stream: string; seq: number; nowMs: number; claimedBy: string }): Promise<WriteOutcome>;
};

/**
 * Whether `claimedBy` may claim tick `seq`: it is the successor of the chain's last claimed one, or
 * `claimedBy` claimed it already (its own claim sent again, which changes nothing).
 */
export function mayClaimChainTick(chain: TickChainState | undefined, seq: number, claimedBy: string): boolean {
  return (chain?.seq ?? 0) === seq - 1 || (chain?.seq === seq && chain.claimedBy === claimedBy);
}
