/**
 * The tick chain (docs/architecture.md, "The tick chain"): a stream whose trigger interval is several
 * seconds is not ticked by a resident loop, which would sleep through most of what it is billed for,
 * but by a chain of delayed queue messages. Each message invokes the planner for one tick: it claims
 * its sequence number in the ledger (a duplicate or stale message claims nothing and ticks nothing),
 * waits for the tick's due time, runs one planner run, and sends the next tick's message delayed
 * until it is due. The schedule's invocation is the chain's watchdog: it starts a chain that has
 * none and restarts one whose messages stopped (an invocation that crashed before sending).
 */
import { randomUUID } from 'node:crypto';
import type { StreamConfig } from '../config/schema';
import type { Ledger } from '../ports/ledger';
import type { ChainTick, TickQueue } from '../ports/tick-queue';
import { chainDelayMs, chainStaleAfterMs, nextDueMs, tickLagMs, tickModeOf } from './loop-timing';
import { failedReport, planStream, type PlannerDeps, type StreamPlanReport } from './run';

export type ChainDeps = Omit<PlannerDeps, 'ledger' | 'ownerToken'> & {
  ledger: Ledger;
  tickQueue: TickQueue;
  clock: {
    /** Store time now: the claim, the run's `nowMs` and due times are on it. */
    nowMs(): Promise<number>;
    sleep(ms: number): Promise<void>;
  };
};

/** Which streams the chain ticks: the tick queue's threshold and the schedule's period (see `tickModeOf`). */
export type ChainSettings = { chainFromMs?: number; schedulePeriodMs?: number };

/** What one tick message did. */
export type ChainTickReport = {
  stream: string;
  seq: number;
  /**
   * `ticked`: claimed and planned (the run's report says how it went); `duplicate`: the tick was
   * claimed by another message already, or the chain moved past it; `ended`: the stream is no longer
   * configured, or no longer ticked by the chain, so no next message is sent.
   */
  outcome: 'ticked' | 'duplicate' | 'ended';
  reason?: string;
  /** How late the run started against the tick's due time. */
  lagMs?: number;
  /** When the run started (store time), and how long after the tick before it (absent for a chain's first). */
  startedAtMs?: number;
  gapMs?: number;
  report?: StreamPlanReport;
  /** The next tick's message, as sent. */
  next?: ChainTick & { delayMs: number };
  /** Why the next tick's message could not be sent: the chain is broken until the watchdog restarts it. */
  sendError?: string;
};

/** Runs one tick message of `tick.stream` (`stream`: its config, undefined when no longer configured). */
export async function runChainTick(
  deps: ChainDeps,
  stream: StreamConfig | undefined,
  tick: ChainTick,
  o: ChainSettings & { ownerToken: string },
): Promise<ChainTickReport> {
  const base = { stream: tick.stream, seq: tick.seq };
  if (!stream) return { ...base, outcome: 'ended', reason: 'the stream is no longer configured' };
  if (tickModeOf(stream.triggerIntervalMs, o) !== 'chain')
    return {
      ...base,
      outcome: 'ended',
      reason: 'the stream is no longer ticked by the tick chain (its interval or the deployment changed)',
    };
  const claimedAtMs = await deps.clock.nowMs();
  // Unique to this message's invocation, so only the SDK's own resend of this claim counts as this claim.
  const claim = { stream: stream.id, seq: tick.seq, nowMs: claimedAtMs, claimedBy: `${o.ownerToken}:${randomUUID()}` };
  if ((await deps.ledger.claimChainTick(claim)) !== 'applied')
    return { ...base, outcome: 'duplicate', reason: 'another message claimed this tick, or the chain moved past it' };
  // A message may arrive up to half a second early (`chainDelayMs`): the tick waits for its time.
  if (tick.dueMs > claimedAtMs) await deps.clock.sleep(Math.min(tick.dueMs - claimedAtMs, stream.triggerIntervalMs));
  const startedAtMs = await deps.clock.nowMs();
  const report = await planOnce(deps, stream, `${o.ownerToken}:${startedAtMs}`, startedAtMs);
  const endedAtMs = await deps.clock.nowMs();
  const dueMs = nextDueMs(tick.dueMs, stream.triggerIntervalMs, endedAtMs);
  const sent = await sendNext(deps, { stream: stream.id, seq: tick.seq + 1, dueMs, lastTickAtMs: startedAtMs });
  const gap = tick.lastTickAtMs !== undefined ? { gapMs: startedAtMs - tick.lastTickAtMs } : {};
  return { ...base, outcome: 'ticked', lagMs: tickLagMs(tick.dueMs, startedAtMs), startedAtMs, ...gap, report, ...sent };
}

/** What the watchdog found of one stream's chain, and did. */
export type ChainWatch = {
  stream: string;
  /** `alive`: a tick was claimed recently; `started`: it had none, or its last tick is too old, and a first message was sent. */
  outcome: 'alive' | 'started';
  lastTickAtMs?: number;
  /** The message sent, when started. */
  next?: ChainTick & { delayMs: number };
  sendError?: string;
};

/** The watchdog: for each stream the chain ticks, starts its chain if it has none or it stopped. */
export async function watchTickChains(deps: ChainDeps, streams: StreamConfig[], o: ChainSettings): Promise<ChainWatch[]> {
  const chained = streams.filter((s) => tickModeOf(s.triggerIntervalMs, o) === 'chain');
  return Promise.all(
    chained.map(async (stream): Promise<ChainWatch> => {
      const chain = (await deps.ledger.readMeta(stream.id))?.tickChain;
      const nowMs = await deps.clock.nowMs();
      const last = chain ? { lastTickAtMs: chain.lastTickAtMs } : {};
      if (chain && nowMs - chain.lastTickAtMs < chainStaleAfterMs(stream.triggerIntervalMs))
        return { stream: stream.id, outcome: 'alive', ...last };
      // The next sequence number: should the chain's own message still arrive, only one of the two claims.
      const sent = await sendNext(deps, { stream: stream.id, seq: (chain?.seq ?? 0) + 1, dueMs: nowMs, ...last });
      return { stream: stream.id, outcome: 'started', ...last, ...sent };
    }),
  );
}

/** Sends `next` delayed until it is due; a failure is reported, not thrown (the watchdog restarts the chain). */
async function sendNext(deps: ChainDeps, next: ChainTick): Promise<{ next: ChainTick & { delayMs: number }; sendError?: string }> {
  const delayMs = chainDelayMs(next.dueMs, await deps.clock.nowMs());
  try {
    await deps.tickQueue.sendTick(next, delayMs);
    return { next: { ...next, delayMs } };
  } catch (err) {
    return { next: { ...next, delayMs }, sendError: `${(err as Error)?.name ?? 'Error'}: ${(err as Error)?.message ?? String(err)}` };
  }
}

/** One planner run of the tick; a run that throws is a failed report (the chain goes on). */
async function planOnce(deps: ChainDeps, stream: StreamConfig, ownerToken: string, nowMs: number): Promise<StreamPlanReport> {
  return planStream({ ...deps, ownerToken }, stream, { dryRun: false, nowMs }).catch((err: unknown) => failedReport(stream.id, false, err));
}
