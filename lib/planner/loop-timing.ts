/**
 * The timing of a planner loop inside one scheduled invocation (docs/architecture.md, "The planner
 * loop"), as pure functions of the times it is given: when the next tick is due, whether one more
 * tick fits before the invocation must return, and what a tick's lag was. All times are epoch ms on
 * one clock (the store clock), durations in ms.
 */

/**
 * When the tick after one that was due at `dueMs` is due, if that tick ended at `endedAtMs`: one
 * interval later, or at once when the tick overran its interval. Missed ticks are not caught up in a
 * burst: a tick plans everything due anyway, and a burst would only repeat it.
 */
export function nextDueMs(dueMs: number, intervalMs: number, endedAtMs: number): number {
  return Math.max(dueMs + intervalMs, endedAtMs);
}

/** The longest of the recent ticks (the next one is expected to take as long); 0 before any. */
export function expectedTickMs(recentTickMs: readonly number[], window = 10): number {
  return recentTickMs.slice(-window).reduce((a, b) => Math.max(a, b), 0);
}

/** What decides whether another tick may start. */
export type TickFitInput = {
  nowMs: number;
  /** When the next tick is due (it starts then, or now if later). */
  dueMs: number;
  /** When the invocation must have returned (its start plus the remaining time it was given). */
  deadlineMs: number;
  /** How long a tick is expected to take (`expectedTickMs`). */
  expectedTickMs: number;
  /** Kept free after the last tick: its dispatches' outcomes recorded, the loop handed over, metrics flushed. */
  marginMs: number;
};

/** Whether a tick starting at the later of now and its due time ends, with the margin, before the deadline. */
export function tickFits(t: TickFitInput): boolean {
  return Math.max(t.nowMs, t.dueMs) + t.expectedTickMs + t.marginMs <= t.deadlineMs;
}

/** How late a tick started against its due time (0 when on time or early). */
export function tickLagMs(dueMs: number, startedAtMs: number): number {
  return Math.max(0, startedAtMs - dueMs);
}

/**
 * The margin kept free at the end of an invocation: at least `minMarginMs`, and twice the longest
 * recent tick (a slow Kafka or ledger makes the last tick slow too).
 */
export function endMarginMs(recentTickMs: readonly number[], minMarginMs: number): number {
  return Math.max(minMarginMs, 2 * expectedTickMs(recentTickMs));
}

/**
 * How long the loop lease lasts from each renewal: long enough that a holder renewing every third of
 * it never loses it to a slow tick, short enough that a dead holder is replaced within a schedule
 * period. Three trigger intervals, at least 30 s.
 */
export function loopLeaseMs(intervalMs: number): number {
  return Math.max(30_000, 3 * intervalMs);
}

/** How often a waiting successor looks whether the holder has handed over: a quarter interval, 50 ms to 1 s. */
export function handoverPollMs(intervalMs: number): number {
  return Math.min(1000, Math.max(50, Math.floor(intervalMs / 4)));
}

/** The planner function's environment variable giving its schedule's period (set by the stack when the rate has one). */
export const SCHEDULE_PERIOD_ENV = 'SCHEDULE_PERIOD_MS';

/** The schedule period the stack gave the planner, if any (a cron schedule has none). */
export function schedulePeriodFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const n = Number(env[SCHEDULE_PERIOD_ENV]);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * Whether a stream gets one tick per invocation: its interval is not shorter than the schedule
 * period, so the next tick is the next invocation's, and waiting for it would only bill idle time.
 */
export function oneTickPerInvocation(intervalMs: number, schedulePeriodMs: number | undefined): boolean {
  return schedulePeriodMs !== undefined && intervalMs >= schedulePeriodMs;
}

/**
 * How a stream is ticked: `loop`, by a resident invocation (intervals under `chainFromMs`); `chain`,
 * each tick an invocation of its own sent by the previous one as a delayed queue message (intervals
 * from `chainFromMs` up to the schedule period: a resident planner would sleep most of what it is
 * billed for); `once`, one tick per scheduled invocation (intervals not shorter than the period).
 * Without a tick queue (`chainFromMs` unset) there is no chain.
 */
export type TickMode = 'loop' | 'chain' | 'once';

/** The tick mode of a stream with `intervalMs` (see TickMode). */
export function tickModeOf(intervalMs: number, o: { schedulePeriodMs?: number; chainFromMs?: number }): TickMode {
  if (oneTickPerInvocation(intervalMs, o.schedulePeriodMs)) return 'once';
  return o.chainFromMs !== undefined && intervalMs >= o.chainFromMs ? 'chain' : 'loop';
}

/** The planner function's environment variable: the shortest interval ticked by the tick chain (set with its queue). */
export const TICK_CHAIN_FROM_ENV = 'TICK_CHAIN_FROM_MS';

/** The tick chain's threshold the stack gave the planner, if it has a tick queue. */
export function tickChainFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const n = Number(env[TICK_CHAIN_FROM_ENV]);
  return env[TICK_CHAIN_FROM_ENV] !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
}

/** The planner function's environment variable naming the tick queue (set by the stack with `TICK_CHAIN_FROM_MS`). */
export const TICK_QUEUE_URL_ENV = 'PLANNER_TICK_QUEUE_URL';

/** SQS's longest message delay. */
export const MAX_TICK_DELAY_MS = 900_000;

/**
 * The delay of the message carrying a tick due at `dueMs`: whole seconds (what a queue delays by),
 * rounded to the nearest, so the message arrives within half a second of its due time. One that
 * arrives early waits (billed); one that arrives late ticks at once. Due times stay one interval
 * apart, so the error does not add up from tick to tick.
 */
export function chainDelayMs(dueMs: number, nowMs: number): number {
  return Math.min(MAX_TICK_DELAY_MS, Math.max(0, Math.round((dueMs - nowMs) / 1000) * 1000));
}

/**
 * When a chain counts as broken (its next message lost with a crashed invocation): no tick claimed
 * for three intervals, and at least 30 s more than one (a late delivery is not a break). The schedule's
 * watchdog then sends the next message itself; should the old one still arrive, only one claims.
 */
export function chainStaleAfterMs(intervalMs: number): number {
  return Math.max(3 * intervalMs, intervalMs + 30_000);
}
