/**
 * The planner loop of one scheduled invocation (docs/architecture.md, "The planner loop"): for each
 * stream, take the stream's loop (waiting for the holder to hand over if another invocation ticks
 * it), tick every trigger interval (each tick one planner run, `planStream`) while another tick fits
 * in the invocation's remaining time, then hand over, leaving when the next tick is due. One loop
 * per stream at a time (the loop lease); every tick is fenced by its own epoch as any run is.
 */
import type { StreamConfig } from '../config/schema';
import type { KeptPlannerLease, Ledger } from '../ports/ledger';
import type { PlannerLoopLease, PlannerLoopState } from '../ports/planner-loop';
import {
  endMarginMs,
  expectedTickMs,
  handoverPollMs,
  loopLeaseMs,
  nextDueMs,
  oneTickPerInvocation,
  tickFits,
  tickLagMs,
} from './loop-timing';
import { handoverTimedOutReason, loopHeldWithSuccessorReason } from './messages';
import { failedReport, planStream, type PlannerDeps, type StreamPlanReport } from './run';

/**
 * Time as the loop sees it: the store clock for what other processes read (leases, a tick's time in
 * the ledger, the planner's `nowMs`), and this process's clock for its own timing (due times, the
 * deadline, sleeps). The store clock's estimate moves as its samples narrow it, by up to a second;
 * ticks timed on it would move with it.
 */
export type LoopClock = {
  /** Store time now. */
  nowMs(): Promise<number>;
  /** This process's time now (the deadline's clock). */
  localMs(): number;
  sleep(ms: number): Promise<void>;
};

export type LoopDeps = Omit<PlannerDeps, 'ledger' | 'ownerToken'> & { ledger: Ledger & PlannerLoopLease; clock: LoopClock };

export type LoopOptions = {
  streams: StreamConfig[];
  /** This invocation's token: it holds the loops it takes under it. */
  ownerToken: string;
  /** When the invocation must have returned, on this process's clock (`LoopClock.localMs`). */
  deadlineMs: number;
  /** The least time kept free after the last tick (default 2 s). */
  minMarginMs?: number;
  /** The loop lease's length; default `loopLeaseMs` of the stream's interval. Tests shorten it to replace a dead holder sooner. */
  loopLeaseMs?: number;
  /** The schedule's period, when known: a stream whose interval is not shorter ticks once per invocation. */
  schedulePeriodMs?: number;
};

/** One tick of one stream, as the loop ran it (times on this process's clock). */
export type TickRecord = {
  stream: string;
  dueMs: number;
  startedAtMs: number;
  /** The start on the store clock (the planner run's `nowMs`, the tick time the ledger records). */
  storeStartedAtMs: number;
  /** How late it started against its due time. */
  lagMs: number;
  durationMs: number;
  report: StreamPlanReport;
};

/** How one stream's loop in this invocation ended, and what it did. */
export type StreamLoopReport = {
  stream: string;
  /**
   * `handed-over`: a successor asked and got the loop; `time-up`: the invocation's time ran out and
   * the loop was left for the next schedule; `lost`: another invocation took an expired loop;
   * `not-taken`: another invocation holds it and another successor already waits, or it was not
   * handed over in time.
   */
  outcome: 'handed-over' | 'time-up' | 'lost' | 'not-taken';
  reason?: string;
  ticks: number;
  failedTicks: number;
  /** From the previous holder's last tick to this loop's first (absent without a previous tick). */
  handoverGapMs?: number;
  maxTickLagMs: number;
  /** How long this invocation waited for the previous holder to hand over. */
  waitedMs: number;
  holderSinceMs?: number;
  /** The last tick's planner report. */
  last?: StreamPlanReport;
};

/** Runs every stream's loop side by side until each hands over, runs out of time or is not taken. */
export async function runPlannerLoop(
  deps: LoopDeps,
  opts: LoopOptions,
  onTick: (t: TickRecord) => void | Promise<void> = () => undefined,
): Promise<StreamLoopReport[]> {
  return Promise.all(opts.streams.map((s) => streamLoop(deps, s, opts, onTick)));
}

async function streamLoop(
  deps: LoopDeps,
  stream: StreamConfig,
  opts: LoopOptions,
  onTick: (t: TickRecord) => void | Promise<void>,
): Promise<StreamLoopReport> {
  const rep: StreamLoopReport = { stream: stream.id, outcome: 'not-taken', ticks: 0, failedTicks: 0, maxTickLagMs: 0, waitedMs: 0 };
  const took = await takeOver(deps, stream, opts, rep);
  if (!took) return rep;
  const ended = await tick(deps, stream, opts, rep, { firstDueMs: took.firstDueMs, previous: took.previous, onTick });
  // The last tick's planner lease, kept for a next tick there will not be.
  if (ended.kept) await deps.ledger.releasePlannerLease({ stream: stream.id, ...ended.kept }).catch(() => undefined);
  if (ended.outcome !== 'lost') {
    const released = await deps.ledger.releasePlannerLoop({
      stream: stream.id,
      ownerToken: opts.ownerToken,
      lastTickAtMs: ended.lastTickAtMs,
      nextTickDueMs: ended.nextDueMs,
    });
    if (released !== 'applied') return { ...rep, outcome: 'lost', reason: 'another invocation took the loop before it was handed over' };
  }
  return { ...rep, outcome: ended.outcome };
}

/**
 * Take over: the loop at once when free, else wait as the successor until the holder hands over
 * (or its lease expires), reading the loop a few times per interval (a read, not a write, per look);
 * give up when another invocation is already next or no tick would fit any more.
 */
async function takeOver(
  deps: LoopDeps,
  stream: StreamConfig,
  opts: LoopOptions,
  rep: StreamLoopReport,
): Promise<{ firstDueMs: number; previous: PlannerLoopState } | undefined> {
  const { clock, ledger } = deps;
  const leaseMs = opts.loopLeaseMs ?? loopLeaseMs(stream.triggerIntervalMs);
  const t0 = clock.localMs();
  for (let raced = 0; ;) {
    const nowMs = await clock.nowMs();
    const take = await ledger.takePlannerLoop({ stream: stream.id, ownerToken: opts.ownerToken, nowMs, leaseMs, asSuccessor: true });
    if (take.taken) {
      const localMs = clock.localMs();
      rep.waitedMs = localMs - t0;
      rep.holderSinceMs = nowMs;
      // The previous holder's next tick (store time, here on this clock), never earlier than now (nor twice in its tick).
      const dueMs = (take.previous.nextTickDueMs ?? nowMs) - (nowMs - localMs);
      return { firstDueMs: Math.max(localMs, dueMs), previous: take.previous };
    }
    // Handed over (or expired) between the refusal and the successor's record: ask again at once.
    if ((take.holder.ownerToken === undefined || (take.holder.expiresAtMs ?? 0) < nowMs) && ++raced <= 5) continue;
    if (take.holder.successor !== opts.ownerToken) {
      rep.reason = loopHeldWithSuccessorReason(iso(take.holder.expiresAtMs));
      return undefined;
    }
    const waited = await waitForHandover(deps, stream, opts, opts.ownerToken);
    if (!waited) {
      rep.waitedMs = clock.localMs() - t0;
      rep.reason = handoverTimedOutReason(iso(take.holder.expiresAtMs));
      return undefined;
    }
  }
}

/** Reads the loop until it is free, expired, or no longer waits for this caller; false when time runs out first. */
async function waitForHandover(deps: LoopDeps, stream: StreamConfig, opts: LoopOptions, me: string): Promise<boolean> {
  const { clock } = deps;
  for (;;) {
    await clock.sleep(handoverPollMs(stream.triggerIntervalMs));
    const localMs = clock.localMs();
    if (!tickFits({ nowMs: localMs, dueMs: localMs, deadlineMs: opts.deadlineMs, expectedTickMs: 0, marginMs: opts.minMarginMs ?? 2000 }))
      return false;
    const loop = (await deps.ledger.readMeta(stream.id))?.loop;
    if (!loop?.ownerToken || (loop.expiresAtMs ?? 0) < (await clock.nowMs()) || loop.successor !== me) return true;
  }
}

type TickEnd = { outcome: 'handed-over' | 'time-up' | 'lost'; lastTickAtMs?: number; nextDueMs: number; kept?: KeptPlannerLease };

/**
 * Tick: wait for the due time, run one planner run, schedule the next; after each tick, see whether
 * a successor waits (hand over) or the loop was lost, and renew the lease a third of the way through.
 */
async function tick(
  deps: LoopDeps,
  stream: StreamConfig,
  opts: LoopOptions,
  rep: StreamLoopReport,
  start: { firstDueMs: number; previous: PlannerLoopState; onTick: (t: TickRecord) => void | Promise<void> },
): Promise<TickEnd> {
  const { clock, ledger } = deps;
  const leaseMs = opts.loopLeaseMs ?? loopLeaseMs(stream.triggerIntervalMs);
  const durations: number[] = [];
  let dueMs = start.firstDueMs;
  let renewedAtMs = clock.localMs();
  let lastTickAtMs = start.previous.lastTickAtMs;
  /** The planner lease the last tick kept: the next tick takes it over in the write that takes its own. */
  let kept: KeptPlannerLease | undefined;
  // A holder whose loop lease expired (it died) may have kept a lease too: the first tick takes it over.
  let deadLoopOwner = start.previous.ownerToken !== opts.ownerToken ? start.previous.ownerToken : undefined;
  // What the ledger keeps for the next holder is store time: the next due time converted back.
  const end = async (outcome: TickEnd['outcome']): Promise<TickEnd> => ({
    outcome,
    lastTickAtMs,
    nextDueMs: dueMs + ((await clock.nowMs()) - clock.localMs()),
    ...(kept ? { kept } : {}),
  });
  for (;;) {
    const nowMs = clock.localMs();
    const marginMs = endMarginMs(durations, opts.minMarginMs ?? 2000);
    if (!tickFits({ nowMs, dueMs, deadlineMs: opts.deadlineMs, expectedTickMs: expectedTickMs(durations), marginMs }))
      return end('time-up');
    if (dueMs > nowMs) await clock.sleep(dueMs - nowMs);
    const t = await runTick(deps, stream, opts.ownerToken, dueMs, { previous: kept, deadLoopOwner });
    kept = t.report.kept;
    deadLoopOwner = undefined;
    if (rep.ticks === 0 && lastTickAtMs !== undefined) rep.handoverGapMs = t.storeStartedAtMs - lastTickAtMs;
    rep.ticks++;
    if (t.report.status === 'failed') rep.failedTicks++;
    rep.maxTickLagMs = Math.max(rep.maxTickLagMs, t.lagMs);
    rep.last = t.report;
    durations.push(t.durationMs);
    lastTickAtMs = t.storeStartedAtMs;
    await start.onTick(t);
    const endedAtMs = t.startedAtMs + t.durationMs;
    dueMs = nextDueMs(dueMs, stream.triggerIntervalMs, endedAtMs);
    const meta = await ledger.readMeta(stream.id);
    const loop = meta?.loop;
    // Someone (an operator) waits for the planner lease: it is released now, not kept for the next tick.
    if (kept && meta?.leaseWanted !== undefined) {
      await ledger.releasePlannerLease({ stream: stream.id, ...kept }).catch(() => undefined);
      kept = undefined;
    }
    if (loop?.ownerToken !== opts.ownerToken) return end('lost');
    if (loop.successor !== undefined) return end('handed-over');
    if (oneTickPerInvocation(stream.triggerIntervalMs, opts.schedulePeriodMs)) {
      rep.reason = 'the trigger interval is not shorter than the schedule period: one tick per invocation';
      return end('time-up');
    }
    if (endedAtMs - renewedAtMs >= leaseMs / 3) {
      const renewal = await ledger.renewPlannerLoop({
        stream: stream.id,
        ownerToken: opts.ownerToken,
        nowMs: await clock.nowMs(),
        leaseMs,
        lastTickAtMs,
      });
      if (!renewal.held) return end('lost');
      renewedAtMs = endedAtMs;
      if (renewal.successor !== undefined) return end('handed-over');
    }
  }
}

/**
 * One planner run of the stream, timed on this process's clock; a run that throws is a failed report
 * (the loop goes on). It takes over the lease the previous tick kept, and keeps its own.
 */
async function runTick(
  deps: LoopDeps,
  stream: StreamConfig,
  ownerToken: string,
  dueMs: number,
  takeOver: { previous?: KeptPlannerLease; deadLoopOwner?: string },
): Promise<TickRecord> {
  const startedAtMs = deps.clock.localMs();
  const storeStartedAtMs = await deps.clock.nowMs();
  const report = await planStream({ ...deps, ownerToken: `${ownerToken}:${storeStartedAtMs}` }, stream, {
    dryRun: false,
    nowMs: storeStartedAtMs,
    keep: true,
    ...(takeOver.previous ? { previous: takeOver.previous } : {}),
    ...(takeOver.deadLoopOwner !== undefined ? { deadLoopOwner: takeOver.deadLoopOwner } : {}),
  }).catch((err: unknown) => failedReport(stream.id, false, err));
  const durationMs = deps.clock.localMs() - startedAtMs;
  return { stream: stream.id, dueMs, startedAtMs, storeStartedAtMs, lagMs: tickLagMs(dueMs, startedAtMs), durationMs, report };
}

const iso = (ms: number | undefined): string => (ms === undefined ? 'unknown' : new Date(ms).toISOString());
