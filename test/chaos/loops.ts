/**
 * Planner loops in the chaos scenarios (issue 23): a schedule of overlapping planner invocations,
 * each running `runPlannerLoop` over the scenario's streams until its deadline or a hand-over, the
 * ranges it dispatches processed as they come. `planners-2` / `planners-3` deliver every schedule 2
 * or 3 times (duplicate deliveries, a few ms apart); `planner-kill` kills a loop mid-loop, at a seeded
 * tick and step, and moves the store time on past its loop lease, so that the next invocation
 * replaces it at the lease's expiry without the scenario waiting the lease's 30 s. Every loop tick is
 * recorded with its owner: no two owners' ticks of one stream may interleave.
 */
import { variedScenario } from './scenarios/continuous';
import type { StreamConfig } from '../../lib/config/schema';
import type { MetadataCache } from '../../lib/kafka/metadata-cache';
import { runPlannerLoop, type LoopDeps, type StreamLoopReport, type TickRecord } from '../../lib/planner/loop';
import { loopLeaseMs } from '../../lib/planner/loop-timing';
import { PLANNER_STEPS, type PlannerStep } from '../../lib/planner/run';
import type { Ledger } from '../../lib/ports/ledger';
import type { RangePayload } from '../../lib/ranges';
import { hangsWhenDead } from './killable';
import { prng } from './prng';

/** The schedule of a loop scenario. */
export type LoopPlan = {
  /** A schedule delivery every `periodMs` (machine time). */
  periodMs: number;
  /** Each invocation's time: its deadline is its start plus this, on the store clock. */
  timeoutMs: number;
  /** Invocations per delivery (the schedule's duplicate deliveries), up to `jitterMs` apart. */
  copies: number;
  jitterMs: number;
  /** Deliveries before the run may count as complete. */
  minDeliveries: number;
  /** Loops killed, one after the other (the next once the last one was replaced). */
  kills: number;
};

/** The loop scenarios' schedules: invocations overlap (each lives two periods unless it hands over). */
function loopPlanFor(name: string): LoopPlan | undefined {
  const base = { periodMs: 2000, timeoutMs: 4000, jitterMs: 150, minDeliveries: 3 };
  const scenario = variedScenario(name);
  if (scenario === 'planners-2') return { ...base, copies: 2, kills: 0 };
  if (scenario === 'planners-3') return { ...base, copies: 3, kills: 0 };
  if (scenario === 'planner-kill') return { ...base, copies: 1, kills: 2 };
  return undefined;
}

export type LoopDriverInput = {
  streams: StreamConfig[];
  ledger: Ledger;
  /** A ledger without injected faults: what a killed loop left is read with it. */
  cleanLedger: Ledger;
  metadata: MetadataCache;
  rng: () => number;
};

/** One processor invocation of a dispatched range. */
type Process = (stream: StreamConfig, range: RangePayload) => Promise<void>;

export type LoopDriver = {
  /** The store time the loops see, for the processors (it moves on past a killed loop's lease). */
  clocks: { clock: () => number; storeClock: () => Promise<number> };
  /** Enough deliveries ran, and every planned kill fired and its loop was replaced. */
  satisfied(): boolean;
  /** Stops the schedule, waits for the live invocations and the processors, and checks the loops. */
  stop(): Promise<LoopCheck>;
};

/** What the loops did (`injected`), what went wrong with them, and the loop kills planned and fired. */
export type LoopCheck = { injected: string; problems: string[]; kills: { planned: number; fired: number } };

/** One loop tick as the scenario saw it (store time). */
export type LoopTick = { owner: string; stream: string; startedAtMs: number; endedAtMs: number; planned?: boolean };

type Invocation = { token: string; dead: { v: boolean }; ended: Promise<void>; reports: StreamLoopReport[]; error?: string };

type LoopKill = {
  victim: string;
  stream: string;
  step: PlannerStep;
  /** The victim's tick of `stream` the kill hit (1 = its first). */
  tick: number;
  /** Loops the victim held when it died, and until when. */
  held: Array<{ stream: string; expiresAtMs: number }>;
  skippedMs: number;
  /** When the invocations alive at the kill had ended (store time). */
  resumedAtMs?: number;
  replaced: Map<string, { by: string; atMs: number }>;
};

type Killer = {
  plans: Array<{ afterTicks: number; step: PlannerStep }>;
  fired: LoopKill[];
  /** Ticks that took the planner lease since the last replacement. */
  ticksSince: number;
  ticksOf: Map<string, number>;
  /** The tick the next kill hits at its step. */
  armed?: { owner: string; stream: string };
  /** No kill is waiting for its replacement. */
  ready: boolean;
};

type State = {
  in: LoopDriverInput;
  plan: LoopPlan;
  process: Process;
  rng: () => number;
  offsetMs: number;
  invocations: Invocation[];
  ticks: LoopTick[];
  /** Every loop taken: by whom, of which stream, when (store time). */
  takes: Array<{ owner: string; stream: string; atMs: number }>;
  handovers: number;
  killer: Killer;
  deliveries: number;
  stopped: boolean;
  /** Set after a kill: resolves once the invocations alive at the kill have ended. */
  pause: Promise<void>;
  wake: () => void;
  pump: Pump;
};

const never = new Promise<never>(() => undefined);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const short = (stream: string) => stream.slice(stream.lastIndexOf('-') + 1);
/** The end margin of the scenario's invocations (the production default is 2 s; theirs last 4 s). */
const MIN_MARGIN_MS = 300;

/** The scenario's planner loops, if it has any: starts the schedule (the first delivery at once). */
export function startLoops(scenario: string, input: LoopDriverInput, process: Process): LoopDriver | undefined {
  const plan = loopPlanFor(scenario);
  if (!plan) return undefined;
  const s = newState(input, plan, process);
  const now = () => Date.now() + s.offsetMs;
  const scheduled = schedule(s, now);
  return {
    clocks: { clock: now, storeClock: async () => now() },
    satisfied: () => s.deliveries >= plan.minDeliveries && s.handovers > 0 && s.killer.fired.length === plan.kills && s.killer.ready,
    async stop() {
      s.stopped = true;
      s.wake();
      await scheduled;
      await Promise.all(live(s));
      await s.pump.idle();
      return summarize(s);
    },
  };
}

function newState(input: LoopDriverInput, plan: LoopPlan, process: Process): State {
  const rng = prng(Math.floor(input.rng() * 2 ** 32));
  const plans = Array.from({ length: plan.kills }, () => ({
    afterTicks: 2 + Math.floor(rng() * 4),
    step: PLANNER_STEPS[Math.floor(rng() * PLANNER_STEPS.length)] as PlannerStep,
  }));
  return {
    in: input,
    plan,
    process,
    rng,
    offsetMs: 0,
    invocations: [],
    ticks: [],
    takes: [],
    handovers: 0,
    killer: { plans, fired: [], ticksSince: 0, ticksOf: new Map(), ready: true },
    deliveries: 0,
    stopped: false,
    pause: Promise.resolve(),
    wake: () => undefined,
    pump: pump(8),
  };
}

const live = (s: State) => s.invocations.filter((i) => !i.dead.v).map((i) => i.ended);

/** A delivery every period until stopped; none while a killed loop's lease is being waited out. */
async function schedule(s: State, now: () => number): Promise<void> {
  while (!s.stopped) {
    const i = s.deliveries++;
    for (let c = 0; c < s.plan.copies && !s.stopped; c++) {
      if (c > 0) await sleep(Math.floor(s.rng() * s.plan.jitterMs));
      await s.pause;
      start(s, now, c ? `inv-${i}-dup${c}` : `inv-${i}`);
    }
    await new Promise<void>((r) => {
      const t = setTimeout(r, s.plan.periodMs);
      s.wake = () => {
        clearTimeout(t);
        r();
      };
    });
  }
}

function start(s: State, now: () => number, token: string): void {
  const inv: Invocation = { token, dead: { v: false }, ended: Promise.resolve(), reports: [] };
  const opts = { streams: s.in.streams, ownerToken: token, deadlineMs: now() + s.plan.timeoutMs, minMarginMs: MIN_MARGIN_MS };
  inv.ended = runPlannerLoop(loopDeps(s, inv, now), opts, (t) => onTick(s, inv, t)).then(
    (reports) => {
      inv.reports = reports;
      s.handovers += reports.filter((r) => r.outcome === 'handed-over').length;
    },
    (err: unknown) => void (inv.error = err instanceof Error ? err.message : String(err)),
  );
  s.invocations.push(inv);
}

/** An invocation's loop: the scenario's ledger and store time; once killed, nothing it calls answers. */
function loopDeps(s: State, inv: Invocation, now: () => number): LoopDeps {
  const streams = new Map(s.in.streams.map((st) => [st.id, st]));
  const dispatcher = {
    dispatch: async (ranges: RangePayload[]) =>
      ranges.map((range) => {
        const stream = streams.get(range.stream) as StreamConfig;
        s.pump.add(() => s.process(stream, range));
        return { ok: true as const };
      }),
  };
  return {
    ledger: hangsWhenDead(recordingTakes(s), inv.dead),
    metadataFor: (stream) => s.in.metadata.forStream(stream),
    dispatcher: hangsWhenDead(dispatcher, inv.dead),
    plannerLeaseMs: 1500,
    // The scenario clock is both clocks: a kill moves it forward to expire the dead holder's leases.
    clock: { ...hangsWhenDead({ nowMs: async () => now(), sleep }, inv.dead), localMs: () => now() },
    afterStep: (step, stream) => afterStep(s, inv, step, stream),
  };
}

/** The scenario's ledger, recording every loop taken. */
function recordingTakes(s: State): Ledger {
  const ledger = s.in.ledger;
  return {
    ...ledger,
    async takePlannerLoop(input) {
      const take = await ledger.takePlannerLoop(input);
      if (take.taken) s.takes.push({ owner: input.ownerToken, stream: input.stream, atMs: input.nowMs });
      return take;
    },
  };
}

/** Counts the ticks that took the planner lease; the armed tick dies at the kill's step (and never returns). */
function afterStep(s: State, inv: Invocation, step: PlannerStep, stream: string): Promise<void> | undefined {
  if (inv.dead.v) return never;
  const k = s.killer;
  const next = k.plans[k.fired.length];
  if (step === 'leased') {
    const key = `${inv.token} ${stream}`;
    k.ticksOf.set(key, (k.ticksOf.get(key) ?? 0) + 1);
    k.ticksSince++;
    if (next && k.ready && !k.armed && k.ticksSince >= next.afterTicks) k.armed = { owner: inv.token, stream };
  }
  if (!next || k.armed?.owner !== inv.token || k.armed.stream !== stream || step !== next.step) return undefined;
  inv.dead.v = true;
  k.armed = undefined;
  k.ready = false;
  const kill: LoopKill = {
    victim: inv.token,
    stream,
    step,
    tick: k.ticksOf.get(`${inv.token} ${stream}`) ?? 0,
    held: [],
    skippedMs: 0,
    replaced: new Map(),
  };
  k.fired.push(kill);
  s.pause = afterKill(s, kill);
  return never;
}

/**
 * After a kill: what the victim held, then the store time moved on past its loop lease (the next
 * schedules would wait that long); the invocations alive then run out of time and end before the
 * schedule goes on, as they would have within the lease.
 */
async function afterKill(s: State, kill: LoopKill): Promise<void> {
  const metas = await Promise.all(s.in.streams.map((st) => s.in.cleanLedger.readMeta(st.id)));
  kill.held = metas.flatMap((m) =>
    m?.loop?.ownerToken === kill.victim ? [{ stream: m.stream, expiresAtMs: m.loop.expiresAtMs ?? 0 }] : [],
  );
  kill.skippedMs = loopLeaseMs(Math.max(...s.in.streams.map((st) => st.triggerIntervalMs))) + 1;
  s.offsetMs += kill.skippedMs;
  await Promise.all(live(s));
  kill.resumedAtMs = Date.now() + s.offsetMs;
}

function onTick(s: State, inv: Invocation, t: TickRecord): void {
  const planned = t.report.status !== 'skipped';
  s.ticks.push({ owner: inv.token, stream: t.stream, startedAtMs: t.startedAtMs, endedAtMs: t.startedAtMs + t.durationMs, planned });
  const k = s.killer;
  // The armed tick ended before the kill's step (fenced, or it failed): the next one is armed.
  if (k.armed?.owner === inv.token && k.armed.stream === t.stream) k.armed = undefined;
  const kill = k.fired.at(-1);
  if (!kill || k.ready || kill.resumedAtMs === undefined || t.startedAtMs < kill.resumedAtMs) return;
  if (inv.token !== kill.victim && kill.held.some((h) => h.stream === t.stream) && !kill.replaced.has(t.stream))
    kill.replaced.set(t.stream, { by: inv.token, atMs: t.startedAtMs });
  if (kill.held.every((h) => kill.replaced.has(h.stream))) {
    k.ready = true;
    k.ticksSince = 0;
  }
}

/**
 * Where two invocations' ticks of one stream interleave: an owner ticking again after another one
 * ticked, or a tick starting before an earlier one of another owner ended. One loop holds a stream
 * at a time, so neither may happen.
 */
export function loopOverlaps(ticks: LoopTick[]): string[] {
  const out: string[] = [];
  for (const stream of new Set(ticks.map((t) => t.stream))) {
    const own = ticks.filter((t) => t.stream === stream).sort((a, b) => a.startedAtMs - b.startedAtMs);
    const done = new Set<string>();
    let owner: string | undefined;
    let endedAtMs = -Infinity;
    for (const t of own) {
      if (t.owner !== owner) {
        if (done.has(t.owner)) out.push(`${short(stream)}: ${t.owner} ticked again at ${t.startedAtMs} after ${owner} had ticked`);
        if (t.startedAtMs < endedAtMs)
          out.push(`${short(stream)}: ${t.owner}'s tick at ${t.startedAtMs} began before ${owner}'s ended at ${endedAtMs}`);
        if (owner !== undefined) done.add(owner);
        owner = t.owner;
      }
      endedAtMs = Math.max(endedAtMs, t.endedAtMs);
    }
  }
  return out;
}

/** What the loops did, and what went wrong with them. */
function summarize(s: State): LoopCheck {
  const alive = s.invocations.filter((i) => !i.dead.v);
  const reports = alive.flatMap((i) => i.reports);
  const count = (o: StreamLoopReport['outcome']) => reports.filter((r) => r.outcome === o).length;
  const problems = [...alive.filter((i) => i.error).map((i) => `planner loop ${i.token} failed: ${i.error}`), ...loopOverlaps(s.ticks)];
  if (!count('handed-over')) problems.push('no loop handed over to a waiting invocation');
  if (count('lost')) problems.push(`${count('lost')} loops were lost to another invocation while their holder lived`);
  if (s.plan.copies > 1 && !count('not-taken')) problems.push('no duplicate delivery found the loop held and a successor waiting');
  problems.push(...killProblems(s));
  const { periodMs, timeoutMs, copies, jitterMs } = s.plan;
  const schedule =
    `planner loops: a schedule delivery every ${periodMs} ms${copies > 1 ? ` delivered ${copies} times (up to ${jitterMs} ms apart)` : ''}, ` +
    `each invocation ${timeoutMs} ms looping over both streams (trigger interval ${s.in.streams[0]?.triggerIntervalMs} ms)`;
  const outcomes = `${s.invocations.length} invocations (stream loops: ${count('handed-over')} handed over, ${count('time-up')} ran out of time, ${count('not-taken')} not taken (another held it and another waited, or it was not handed over in time), ${count('lost')} lost)`;
  const planned = s.ticks.filter((t) => t.planned).length;
  const ticks =
    `${s.ticks.length} loop ticks by ${new Set(s.ticks.map((t) => t.owner)).size} owners (${planned} planned, ${s.ticks.length - planned} skipped: another run held the planner lease), ` +
    `${loopOverlaps(s.ticks).length ? 'SOME' : 'no'} two owners' ticks of a stream interleaved`;
  const injected = [schedule, ...s.killer.fired.map((k) => killText(s, k)), outcomes, ticks].join('; ');
  return { injected, problems, kills: { planned: s.plan.kills, fired: s.killer.fired.length } };
}

function killText(s: State, k: LoopKill): string {
  const held = k.held.map((h) => short(h.stream)).join(' and ') || 'nothing';
  const by = [...k.replaced].map(([stream, r]) => `${short(stream)} by ${r.by}`).join(', ') || 'nothing';
  return (
    `${k.victim} killed at step ${k.step} of its tick ${k.tick} of ${short(k.stream)} (held ${held}; its calls never answered), ` +
    `store time moved on ${k.skippedMs} ms, past its loop lease; replaced after the lease expired: ${by}`
  );
}

function killProblems(s: State): string[] {
  const k = s.killer;
  const problems: string[] = [];
  for (const kill of k.fired) {
    if (!kill.held.some((h) => h.stream === kill.stream))
      problems.push(`${kill.victim} did not hold the loop of the tick it was killed in`);
    for (const h of kill.held) {
      const by = kill.replaced.get(h.stream);
      if (!by) problems.push(`${short(h.stream)}: no loop ticked after ${kill.victim} was killed`);
      const took = s.takes.find((t) => t.owner === by?.by && t.stream === h.stream);
      if (by && (took?.atMs ?? -Infinity) < h.expiresAtMs)
        problems.push(`${short(h.stream)}: ${by.by} took ${kill.victim}'s loop before its lease expired`);
    }
  }
  return problems;
}

type Pump = { add(job: () => Promise<void>): void; idle(): Promise<void> };

/** Runs jobs as they come, `concurrency` at once (the processors of the dispatched ranges). */
function pump(concurrency: number): Pump {
  const waiting: Array<() => Promise<void>> = [];
  const running = new Set<Promise<void>>();
  const next = (): void => {
    while (running.size < concurrency && waiting.length) {
      const job = waiting.shift() as () => Promise<void>;
      const p: Promise<void> = job()
        .catch(() => undefined)
        .finally(() => {
          running.delete(p);
          next();
        });
      running.add(p);
    }
  };
  return {
    add(job) {
      waiting.push(job);
      next();
    },
    async idle() {
      while (running.size) await Promise.race(running);
    },
  };
}
