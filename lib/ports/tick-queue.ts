/**
 * Port: the queue carrying a stream's next planner tick (the tick chain, docs/architecture.md "The
 * tick chain"). Each tick sends the next as a message delayed until it is due; the queue invokes the
 * planner with it. Delivery is at least once: a tick claims its sequence number in the ledger
 * (`PlannerTickChain`), so a duplicate ticks nothing.
 */

/**
 * One tick of a stream's chain: its sequence number and when it is due (store time, epoch ms), and
 * when the tick that sent it started (the gap between ticks, the no-tick alarm's metric).
 */
export type ChainTick = { stream: string; seq: number; dueMs: number; lastTickAtMs?: number };

export type TickQueue = {
  /** Sends `tick`, to be delivered after `delayMs` (whole seconds, at most 15 minutes). */
  sendTick(tick: ChainTick, delayMs: number): Promise<void>;
};
