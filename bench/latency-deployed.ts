/**
 * `npm run bench:latency -- --deployed`: the latency of the deployed shape. The real planner Lambda
 * handler (functions/planner.ts) is invoked the way its schedule invokes it: `{"loop": true}` once
 * per (shortened) schedule period, each invocation with a Lambda context whose remaining time counts
 * down from the planner's timeout, overlapping the next, so every invocation but the last hands the
 * loop over. Processors run through the real processor handler (functions/processor.ts) in this
 * process (the in-process dispatcher standing in for Lambda's async invoke). Kafka's Java producer
 * writes the load while the schedule runs: `--rate` records/s over `--accounts` keys for all but the
 * last schedule period, which drains.
 *
 * Latency is measured as bench/latency.ts measures it: from a record's produce timestamp to the
 * ledger commit that moved its range's progress past it, seen when that write returned `applied`.
 * The handlers' runtime (the one a warm container caches, `awsRuntime`) is instrumented in place:
 * its handlers tell the observer each record's timestamp, its ledger each applied commit and each
 * planner lease taken (one per tick: the tick gaps), and its DynamoDB client counts requests by who
 * sent them (planner or processor: the cost model's per-tick and per-invocation figures).
 *
 * Loaded only in --deployed mode, after require-middy (bench/latency.ts imports it first).
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createPlannerHandler } from '../functions/planner';
import { handler as processorHandler } from '../functions/processor';
import { parseDeploymentConfig, type StreamConfigInput } from '../lib/config/schema';
import { createInProcessDispatcher, type InProcessDispatcher } from '../lib/dispatch/dispatcher.local';
import { createSinkTable } from '../lib/sink/table.dynamodb';
import { scanTotals } from '../lib/sink/totals.dynamodb';
import { oneTopicConfigInput } from '../lib/local/one-topic';
import { lambdaContext, runSchedule, type ScheduledInvocation } from '../lib/runtime/scheduled-invocations';
import type { StreamLoopReport } from '../lib/planner/loop';
import type { ChainWatch } from '../lib/planner/tick-chain';
import type { Ledger } from '../lib/ports/ledger';
import type { Dispatcher } from '../lib/ports/dispatcher';
import { awsRuntime, resetAwsRuntime, type Runtime } from '../lib/runtime/aws';
import { createInProcessTickQueue, type InProcessTickQueue } from '../lib/dispatch/tick-queue.local';
import { SCHEDULE_PERIOD_ENV, TICK_CHAIN_FROM_ENV, tickModeOf } from '../lib/planner/loop-timing';
import { javaProduceAccounts, type ProducedAccounts } from '../test/support/java';
import { observedHandlerFor, observedLedger, storedSizes } from './drain';
import { captureStdout, type LogTally } from './log-capture';
import { countRequestsByRole, type RequestCounter, type RoleRequests } from './request-counts';
import { endOffsetsOf, withBenchTopic, withStack, type BenchStack, type BenchTopic } from './stack';
import {
  createLatencyObserver,
  createSegmentWatch,
  deployedResult,
  latencySummary,
  maxGapMs,
  median,
  percentile,
  totalsMismatches,
  type DeployedPhase,
  type DeployedResult,
  type DeployedRun,
} from './stats';

export type DeployedFlags = {
  ratePerSec: number;
  partitions: number;
  accounts: number;
  triggerIntervalMs: number;
  schedulePeriodMs: number;
  /** The planner function's timeout: each invocation's remaining time starts there. */
  plannerTimeoutMs: number;
  /** Scheduled invocations per phase (each but the last hands over). */
  invocations: number;
  /** The shortest interval the tick chain ticks (the deploy's tickChainFromMs): from it up to the period, ticks are queue messages. */
  tickChainFromMs: number;
  runs: number;
  keep: boolean;
  /** Continuous mode (`--continuous`): resident segments of `segmentMs`, commits every `commitIntervalMs`. */
  continuous?: { segmentMs: number; commitIntervalMs: number };
};

type Handler = 'noop' | 'running-totals';
type LoopResult = { loop: true; streams: StreamLoopReport[]; chains?: ChainWatch[] };
type Log = (line: string) => void;

/** Runs `--runs` runs, each a no-op phase then an exactly-once phase; returns the result line. */
export async function runDeployedLatency(flags: DeployedFlags, log: Log): Promise<DeployedResult> {
  const records = Math.round((flags.ratePerSec * produceMs(flags)) / 1000);
  log(
    `deployed shape: ${flags.invocations} scheduled invocations ${flags.schedulePeriodMs} ms apart (planner timeout ` +
      `${flags.plannerTimeoutMs} ms), a tick every ${flags.triggerIntervalMs} ms; ${records} records at ${flags.ratePerSec}/s ` +
      `over ${flags.accounts} keys into ${flags.partitions} partitions per phase`,
  );
  return withStack(log, { keep: flags.keep }, async (stack) => {
    const runs: DeployedRun[] = [];
    for (let i = 1; i <= flags.runs; i++) {
      const noop = await phase(stack, flags, 'noop', log);
      const exactlyOnce = await phase(stack, flags, 'running-totals', log);
      log(`run ${i}/${flags.runs}: ${JSON.stringify({ noop: brief(noop), exactlyOnce: brief(exactlyOnce) })}`);
      runs.push({ noop, exactlyOnce });
    }
    return deployedResult(flags, runs);
  });
}

/** The load is produced for all the schedule's periods but the last (which drains it). */
function produceMs(flags: DeployedFlags): number {
  return Math.max(1, flags.invocations - 1) * flags.schedulePeriodMs;
}

const brief = (p: DeployedPhase) => ({
  p50Ms: p.p50Ms,
  p99Ms: p.p99Ms,
  maxMs: p.maxMs,
  handovers: p.handovers,
  maxHandoverGapMs: p.maxHandoverGapMs,
  maxTickGapMs: p.maxTickGapMs,
});

/** One handler's phase: a fresh topic, ledger (and sink), the schedule under load, the figures. */
async function phase(stack: BenchStack, flags: DeployedFlags, handler: Handler, log: Log): Promise<DeployedPhase> {
  const kind = handler === 'noop' ? 'noop' : 'eo';
  return withBenchTopic(stack, `latency-deployed-${kind}`, flags.partitions, async (bench) => {
    const sinkTable = handler === 'running-totals' ? stack.table('latency-deployed-totals') : undefined;
    if (sinkTable) await createSinkTable(bench.dynamo, sinkTable);
    const streamId = stack.name(`latency-deployed-${kind}`);
    const shape = await deployedShape({ ...bench, brokers: stack.brokers, streamId, handler, sinkTable, flags });
    // The handlers log to stdout at the deployed level (INFO) and publish EMF metrics there: counted, not shown.
    const logs = captureStdout(shape.requests.role);
    // The largest size each ledger item had: DynamoDB bills a write by the item's size before or after it.
    // Continuous mode reads its items' sizes once, at the load's end (stopSegments): a Scan every 500 ms
    // would load the emulator its commits wait on.
    const sampler = sampleItemSizes(bench.dynamo, shape.tables.ledger, shape.segments ? 60_000 : 500);
    try {
      const t0 = Date.now();
      const { schedule, produced } = await scheduleUnderLoad(shape, bench, flags, log);
      const late = shape.segments
        ? await segmentsDrained(shape, streamId, produced.ends)
        : await drainRest(shape, streamId, produced.ends, log);
      const figures = phaseFigures(shape, schedule, produced.records);
      if (shape.segments) Object.assign(figures, await stopSegments(shape, flags, bench.dynamo, { t0, t1: Date.now() }));
      if (sinkTable) figures.exact = await sinkExact(bench.dynamo, sinkTable, produced.accounts.totals, log);
      logs.restore();
      const sizes = await sizesOf(bench.dynamo, shape.tables, await sampler.stop());
      Object.assign(figures, costFigures(shape, logs.byRole(), sizes));
      logDetail(log, handler, flags, { figures, shape, late, logs: logs.byRole(), sizes });
      return figures;
    } finally {
      logs.restore();
      await sampler.stop();
      await shape.chain?.queue.drain();
      await resetAwsRuntime();
    }
  });
}

/**
 * A tick as its planner lease take saw it: this machine's time (the gaps are measured on it) and
 * the store clock's (the loop's own clock: DynamoDB's time as estimated from its responses).
 */
type Tick = { atMs: number; storeMs: number; invocation: string; heldMs?: number };

/** The planner and processor handlers on the container's runtime, instrumented. */
type Shape = {
  rt: Runtime;
  tables: { ledger: string; sink?: string };
  dispatcher: InProcessDispatcher;
  invokePlanner(event: unknown, context: ReturnType<typeof lambdaContext>): Promise<LoopResult>;
  observer: ReturnType<typeof createLatencyObserver>;
  requests: RequestCounter;
  /** Planner lease takes (one per tick) while recording: store time and how long the tick held it. */
  ticks: Tick[];
  stopRecordingTicks(): void;
  processors: {
    invocations: number;
    totalMs: number;
    spans: Array<{ startMs: number; endMs?: number }>;
    /** The ranges' outcomes, by status (a segment's ranges are mostly handed over). */
    statuses: Record<string, number>;
  };
  /** The tick chain (when the interval is chained): its in-process queue, and its invocations and their time (Lambda bills each). */
  chain?: { queue: InProcessTickQueue; ticks: { invocations: number; totalMs: number } };
  /** Ranges the processors completed (their completions applied). */
  completed: { ranges: number };
  loopDelay: IntervalHistogram;
  /** Continuous mode: the segments' hand-overs, and the switch that stops them handing over (the phase's end). */
  segments?: { watch: ReturnType<typeof createSegmentWatch>; stop(): void };
};

/**
 * The deployment config of one stream in STREAMS_CONFIG, the cached runtime rebuilt from it, and
 * its ledger, handlers and DynamoDB client instrumented in place (the processor handler takes the
 * runtime from the same cache).
 */
async function deployedShape(p: {
  ledgerTable: string;
  brokers: string;
  topic: string;
  streamId: string;
  handler: Handler;
  sinkTable?: string;
  flags: DeployedFlags;
}): Promise<Shape> {
  const handler: StreamConfigInput['handler'] =
    p.handler === 'running-totals'
      ? { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: p.sinkTable }
      : { module: 'noop', mode: 'at-least-once' };
  const input = oneTopicConfigInput({ ...p, triggerIntervalMs: p.flags.triggerIntervalMs, handler });
  const c = p.flags.continuous;
  if (c) {
    const handoverLeadMs = Math.min(2_000, Math.floor(c.segmentMs / 4));
    (input.streams as StreamConfigInput[])[0]!.continuous = {
      segmentMs: c.segmentMs,
      commitIntervalMs: c.commitIntervalMs,
      handoverLeadMs,
    };
  }
  parseDeploymentConfig(input, 'bench'); // a bad config fails here, with its own message
  process.env.STREAMS_CONFIG = JSON.stringify(input);
  // What the stack gives the deployed planner: the schedule's period and, with a tick queue, the chain's threshold.
  process.env[SCHEDULE_PERIOD_ENV] = String(p.flags.schedulePeriodMs);
  process.env[TICK_CHAIN_FROM_ENV] = String(p.flags.tickChainFromMs);
  await resetAwsRuntime();
  const rt = awsRuntime(process.env);
  const observer = createLatencyObserver();
  const requests = countRequestsByRole(rt.dynamo);
  const completed = { ranges: 0 };
  const watch = c ? createSegmentWatch() : undefined;
  const watched = watch ? watch.ledger(rt.ledger) : rt.ledger;
  const recorded = recordTicks(countCompletions(observedLedger(watched, observer), completed));
  Object.assign(rt, { ledger: recorded.ledger, handlerFor: observedHandlerFor(rt.handlerFor, observer) });
  const processors: Shape['processors'] = { invocations: 0, totalMs: 0, spans: [], statuses: {} };
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const stream = rt.config.streams[0];
  const dispatcher = createInProcessDispatcher((range) =>
    requests.as('processor', async () => {
      const t0 = Date.now();
      processors.invocations++;
      const span: { startMs: number; endMs?: number } = { startMs: t0 };
      processors.spans.push(span);
      try {
        const out = (await processorHandler(range, lambdaContext(`p-${t0}`, stream?.processor.timeoutMs ?? 900_000, 'processor'))) as
          { status?: string; ranges?: Array<{ status: string }> } | undefined;
        for (const st of out?.ranges?.map((r) => r.status) ?? [out?.status ?? 'none']) {
          processors.statuses[st] = (processors.statuses[st] ?? 0) + 1;
        }
        return out;
      } finally {
        processors.totalMs += Date.now() - t0;
        span.endMs = Date.now();
      }
    }),
  );
  const ticks = { invocations: 0, totalMs: 0 };
  // A chained tick is an invocation of the planner handler of its own, as the queue's mapping invokes it.
  const invokeTick = (event: unknown) =>
    requests.as('planner', async () => {
      const t0 = Date.now();
      ticks.invocations++;
      try {
        return await planner(event, lambdaContext(`tick-${t0}`, p.flags.plannerTimeoutMs));
      } finally {
        ticks.totalMs += Date.now() - t0;
      }
    });
  const chain = chainedInterval(p.flags) ? { queue: createInProcessTickQueue(invokeTick), ticks } : undefined;
  const tickQueue = chain?.queue;
  const planner = createPlannerHandler({ dispatcher, runtime: () => rt, ...(tickQueue && { tickQueue }) });
  // A segment invokes its successor through the same in-process dispatcher, until the phase ends.
  let stopping = false;
  const segments = watch && { watch, stop: () => void (stopping = true) };
  Object.assign(rt, {
    segmentDispatcher: (): Dispatcher => ({
      dispatch: async (ranges, opts) =>
        stopping ? ranges.map(() => ({ ok: false as const, error: 'the phase ended' })) : dispatcher.dispatch(ranges, opts),
    }),
  });
  return {
    rt,
    tables: { ledger: p.ledgerTable, ...(p.sinkTable && { sink: p.sinkTable }) },
    dispatcher,
    invokePlanner: (event, context) => requests.as('planner', () => planner(event, context) as Promise<LoopResult>),
    observer,
    requests,
    ...recorded,
    processors,
    ...(chain && { chain }),
    completed,
    loopDelay,
    ...(segments && { segments }),
  };
}

/** Whether the deployed planner ticks this interval by the tick chain (lib/planner/loop-timing.ts `tickModeOf`). */
function chainedInterval(flags: DeployedFlags): boolean {
  return tickModeOf(flags.triggerIntervalMs, { schedulePeriodMs: flags.schedulePeriodMs, chainFromMs: flags.tickChainFromMs }) === 'chain';
}

/** The ledger with the completions that applied counted (a range each). */
function countCompletions(ledger: Ledger, completed: { ranges: number }): Ledger {
  return {
    ...ledger,
    async completeRanges(inputs) {
      const out = await ledger.completeRanges(inputs);
      completed.ranges += out.filter((o) => o === 'applied').length;
      return out;
    },
    async completeRange(input) {
      const out = await ledger.completeRange(input);
      if (out === 'applied') completed.ranges++;
      return out;
    },
  };
}

/** The ledger with each planner lease a tick takes recorded (store time) until told to stop, and how long it was held. */
function recordTicks(ledger: Ledger) {
  const ticks: Tick[] = [];
  const open = new Map<string, { tick: (typeof ticks)[number]; t0: number }>();
  let recording = true;
  return {
    ticks,
    stopRecordingTicks: () => void (recording = false),
    ledger: {
      ...ledger,
      async acquirePlannerLease(input) {
        const lease = await ledger.acquirePlannerLease(input);
        if (lease.acquired && recording) {
          // The loop's run tokens are `<request id>:<invocation start>:<tick start>`.
          const tick: Tick = { atMs: Date.now(), storeMs: input.nowMs, invocation: input.ownerToken.split(':')[0] ?? '' };
          ticks.push(tick);
          open.set(input.ownerToken, { tick, t0: Date.now() });
        }
        return lease;
      },
      async releasePlannerLease(input) {
        const held = open.get(input.ownerToken);
        open.delete(input.ownerToken);
        try {
          return await ledger.releasePlannerLease(input);
        } finally {
          if (held) held.tick.heldMs = Date.now() - held.t0;
        }
      },
    } as Ledger,
  };
}

/** The schedule's invocations while the Java producer writes the load; resolves when both are done. */
async function scheduleUnderLoad(shape: Shape, bench: BenchTopic, flags: DeployedFlags, log: Log) {
  const records = Math.round((flags.ratePerSec * produceMs(flags)) / 1000);
  const producing = javaProduceAccounts(shape.rt.config.streams[0]!.kafka.brokers.join(','), {
    topic: bench.topic,
    records,
    accounts: flags.accounts,
    ratePerSec: flags.ratePerSec,
  });
  // A failed producer must not leave the schedule's promise unobserved: both are awaited together.
  const [schedule, accounts] = await Promise.all([
    runSchedule({
      invoke: (event, context) => shape.invokePlanner(event, context),
      event: { loop: true },
      periodMs: flags.schedulePeriodMs,
      timeoutMs: flags.plannerTimeoutMs,
      invocations: flags.invocations,
      onEnd: (i) => log(`invocation ${i.index}: ${i.error ? `failed: ${String(i.error)}` : loopLine(i.result)}`),
    }),
    producing,
  ]);
  shape.stopRecordingTicks();
  shape.loopDelay.disable();
  const failed = schedule.find((i) => i.error);
  if (failed) throw new Error(`scheduled invocation ${failed.index} failed: ${String(failed.error)}`);
  return { schedule, produced: { records, accounts, ends: await endOffsetsOf(bench.admin, bench.topic) } };
}

const loopLine = (result: LoopResult | undefined): string => {
  const r = result?.streams[0];
  const chain = result?.chains?.[0];
  if (!r && chain)
    return `tick chain ${chain.outcome}${chain.lastTickAtMs ? `, last tick ${new Date(chain.lastTickAtMs).toISOString()}` : ''}`;
  return r
    ? `${r.outcome}, ${r.ticks} ticks, hand-over gap ${r.handoverGapMs ?? '-'} ms, waited ${r.waitedMs} ms, max tick lag ${r.maxTickLagMs} ms` +
        (r.reason ? ` (${r.reason})` : '')
    : 'no report';
};

/**
 * Continuous mode: waits (up to a minute) until the resident segments have committed every record
 * produced. A segment range that failed or lost its holder meanwhile waits for a planner run, as
 * deployed: short loop invocations every 2 s while records remain (returns how many).
 */
async function segmentsDrained(shape: Shape, streamId: string, ends: number[]): Promise<number> {
  let extra = 0;
  for (let lastRunAt = Date.now(), until = lastRunAt + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
    const parts = await shape.rt.ledger.readPartitions(streamId);
    if (ends.every((end, p) => (parts.find((x) => x.partition === p)?.committed ?? 0) >= end)) return extra;
    if (Date.now() - lastRunAt < 2_000) continue;
    await shape.invokePlanner({ loop: true }, lambdaContext(`drain-${extra++}`, 5_000));
    lastRunAt = Date.now();
  }
  throw new Error(`${streamId}: the segments did not commit every record within a minute of the schedule's end`);
}

/**
 * Continuous mode: the phase's segment figures, then its segments stopped: none invokes a successor
 * any more, and each ends at its segment's end (waited for, so the next phase starts alone). The
 * write units and processor seconds are those of the load's window (the schedule and the drain).
 */
async function stopSegments(shape: Shape, flags: DeployedFlags, dynamo: DynamoDBClient, window: { t0: number; t1: number }) {
  const segments = shape.segments!;
  // The units of the load, each write at its item's size now (the steady state of the segments' group items).
  const sizes = await storedSizes(dynamo, shape.tables.ledger);
  const units = ['planner', 'processor'].reduce(
    (sum, role) =>
      sum +
      (shape.requests
        .roles()
        .get(role)
        ?.writes.settle(shape.tables.ledger, (k) => sizes.get(k)) ?? 0),
    0,
  );
  segments.stop();
  const seconds = (window.t1 - window.t0) / 1000;
  // Processor time within the load's window: what the resident segments are billed for it.
  const busyMs = shape.processors.spans.reduce(
    (sum, sp) => sum + Math.max(0, Math.min(sp.endMs ?? window.t1, window.t1) - Math.max(sp.startMs, window.t0)),
    0,
  );
  const figures: Partial<DeployedPhase> = {
    ...segments.watch.summary(flags.partitions),
    ledgerWriteUnitsPerSec: Math.round((units / seconds) * 100) / 100,
    processorSecondsPerSec: Math.round((busyMs / 1000 / seconds) * 100) / 100,
  };
  await shape.dispatcher.idle();
  return figures;
}

/**
 * After the schedule: waits for the processors it started, then, if a partition is still behind
 * its end, runs short loop invocations until it is not (what they commit counts too, late).
 * Returns how many such invocations it took.
 */
async function drainRest(shape: Shape, streamId: string, ends: number[], log: Log): Promise<number> {
  for (let extra = 0; ; extra++) {
    await shape.dispatcher.idle();
    const parts = await shape.rt.ledger.readPartitions(streamId);
    const behind = ends.reduce((s, end, p) => s + Math.max(0, end - (parts.find((x) => x.partition === p)?.committed ?? 0)), 0);
    if (behind === 0) return extra;
    if (extra >= 20) throw new Error(`${streamId}: ${behind} records still uncommitted after the schedule and ${extra} more invocations`);
    if (extra === 0)
      log(
        `${behind} records not committed when the schedule ended: ${shape.chain ? 'the chain ticks on' : 'invoking the loop again'} until they are`,
      );
    // The tick chain goes on by itself: wait a tick; the loop needs an invocation.
    if (shape.chain) await new Promise((r) => setTimeout(r, shape.rt.config.streams[0]?.triggerIntervalMs ?? 1000));
    else await shape.invokePlanner({ loop: true }, lambdaContext(`drain-${extra}`, 5_000));
  }
}

function phaseFigures(shape: Shape, schedule: Array<ScheduledInvocation<LoopResult>>, records: number): DeployedPhase {
  const reports = schedule.map((i) => i.result?.streams[0]);
  return {
    records,
    ...latencySummary(shape.observer.latenciesMs),
    // Invocations that took the loop over from an earlier one and ticked: whether it was handed to them
    // (`handed-over`) or left for them at its holder's deadline (`time-up`), the ticks went on.
    handovers: reports.filter((r) => r?.handoverGapMs !== undefined).length,
    ticksPerInvocation: reports.map((r) => r?.ticks ?? 0),
    maxTickGapMs: maxGapMs(shape.ticks.map((t) => t.atMs)),
    maxHandoverGapMs: maxHandoverGapMs(shape.ticks),
  };
}

/** How many gaps between consecutive ticks exceed `ms`. */
function gapsOver(ticks: readonly Tick[], ms: number): number {
  return ticks.filter((t, i) => i > 0 && t.atMs - (ticks[i - 1] as Tick).atMs > ms).length;
}

/** The largest gap between the last tick of one invocation and the first of the next. */
function maxHandoverGapMs(ticks: readonly Tick[]): number {
  let gap = 0;
  for (let i = 1; i < ticks.length; i++) {
    const [a, b] = [ticks[i - 1] as Tick, ticks[i] as Tick];
    if (a.invocation !== b.invocation) gap = Math.max(gap, b.atMs - a.atMs);
  }
  return gap;
}

async function sinkExact(dynamo: DynamoDBClient, sinkTable: string, expected: ProducedAccounts['totals'], log: Log): Promise<boolean> {
  const mismatches = totalsMismatches(expected, await scanTotals(dynamo, sinkTable));
  if (mismatches.length)
    log(`sink differs from what was produced on ${mismatches.length} account(s), e.g. ${mismatches.slice(0, 3).join('; ')}`);
  return mismatches.length === 0;
}

/**
 * One stderr line of what the cost model and a profile need: tick durations, processor
 * invocations and their time, and the DynamoDB requests and units per tick and per invocation.
 */
function logDetail(
  log: Log,
  handler: Handler,
  flags: DeployedFlags,
  d: { figures: DeployedPhase; shape: Shape; late: number; logs: Map<string, LogTally>; sizes: Map<string, number> },
): void {
  const { shape, figures } = d;
  const ticks = shape.ticks.length;
  const held = shape.ticks.flatMap((t) => (t.heldMs === undefined ? [] : [t.heldMs]));
  const offsets = shape.ticks.map((t) => t.storeMs - t.atMs);
  const roles = shape.requests.roles();
  const per = (role: string, n: number) => ({
    ...perUnit(roles.get(role), n, shape.tables, d.sizes),
    logBytes: Math.round((d.logs.get(role)?.bytes ?? 0) / Math.max(1, n)),
    logLines: Math.round(((d.logs.get(role)?.lines ?? 0) / Math.max(1, n)) * 100) / 100,
  });
  log(
    `detail ${handler} ${JSON.stringify({
      ...figures,
      extraInvocations: d.late,
      ticks,
      tickMs: { p50: Math.round(median(held)), p99: Math.round(percentile(held, 99)), max: Math.max(0, ...held) },
      ticksOverInterval: held.filter((ms) => ms > flags.triggerIntervalMs).length,
      // The store clock (DynamoDB's time as estimated from its responses) against this machine's, over the ticks.
      gapsOverTwoIntervals: gapsOver(shape.ticks, 2 * flags.triggerIntervalMs),
      // The gaps on the store clock, as the loop and its TickGapMs metric see them: its estimate moves as responses come in.
      maxTickGapStoreMs: maxGapMs(shape.ticks.map((t) => t.storeMs)),
      storeClockOffsetMs: { min: Math.min(...offsets), max: Math.max(...offsets) },
      // The event loop's longest stall: a tick waits for it like for any request.
      eventLoopDelayMs: { p99: Math.round(shape.loopDelay.percentile(99) / 1e6), max: Math.round(shape.loopDelay.max / 1e6) },
      processorInvocations: shape.processors.invocations,
      rangeOutcomes: shape.processors.statuses,
      // Where a record's time goes: produce to the handler (producer, broker, Fetch wait, decoding), the rest to its commit.
      toHandlerMs: {
        p50: Math.round(median(shape.observer.handlerLatenciesMs)),
        p99: Math.round(percentile(shape.observer.handlerLatenciesMs, 99)),
      },
      processorMsPerInvocation: Math.round(shape.processors.totalMs / Math.max(1, shape.processors.invocations)),
      perTick: per('planner', ticks),
      perProcessorInvocation: per('processor', shape.processors.invocations),
      triggerIntervalMs: flags.triggerIntervalMs,
    })}`,
  );
}

/** A role's requests by operation, read units and write units (ledger, sink), divided by `n` (ticks or invocations). */
function perUnit(r: RoleRequests | undefined, n: number, tables: { ledger: string; sink?: string }, sizes: Map<string, number>) {
  if (!r || n === 0) return {};
  const round = (x: number) => Math.round((x / n) * 100) / 100;
  const units = (table: string | undefined) => (table ? round(r.writes.settle(table, (k) => sizes.get(`${table} ${k}`))) : undefined);
  return {
    requests: Object.fromEntries(Object.entries(r.byOperation).map(([op, c]) => [op, round(c)])),
    // Time waiting for DynamoDB per tick or invocation, and the longest single request, by operation.
    requestMs: Object.fromEntries(Object.entries(r.msByOperation).map(([op, m]) => [op, { each: round(m.total), max: m.max }])),
    readUnits: round(r.readUnits),
    ledgerWriteUnits: units(tables.ledger),
    ...(tables.sink && { sinkWriteUnits: units(tables.sink) }),
  };
}

/**
 * The size of every item of `tables`, by `<table> <key>`: the larger of its stored size now and the
 * largest the sampler saw (`sampled`, ledger items by key).
 */
async function sizesOf(
  dynamo: DynamoDBClient,
  tables: { ledger: string; sink?: string },
  sampled: Map<string, number>,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const t of [tables.ledger, tables.sink]) if (t) for (const [k, size] of await storedSizes(dynamo, t)) out.set(`${t} ${k}`, size);
  for (const [k, size] of sampled) out.set(`${tables.ledger} ${k}`, Math.max(size, out.get(`${tables.ledger} ${k}`) ?? 0));
  return out;
}

/** Reads every item of `table` every `everyMs` and keeps each key's largest size, until stopped. */
function sampleItemSizes(dynamo: DynamoDBClient, table: string, everyMs = 500): { stop(): Promise<Map<string, number>> } {
  const max = new Map<string, number>();
  let stopped = false;
  let wake = () => undefined as void;
  const loop = (async () => {
    while (!stopped) {
      for (const [k, size] of await storedSizes(dynamo, table)) max.set(k, Math.max(size, max.get(k) ?? 0));
      await new Promise<void>((r) => {
        const t = setTimeout(r, everyMs);
        wake = () => (clearTimeout(t), r());
      });
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake();
      await loop;
      return max;
    },
  };
}

/**
 * The cost figures of a phase: ledger write units (planner and processors, each write at the
 * largest size its item had) per range completed, processor invocations per tick, and the bytes the
 * processor handler logged per invocation.
 */
function costFigures(shape: Shape, logs: Map<string, LogTally>, sizes: Map<string, number>): Partial<DeployedPhase> {
  const units = (role: string) =>
    shape.requests
      .roles()
      .get(role)
      ?.writes.settle(shape.tables.ledger, (k) => sizes.get(`${shape.tables.ledger} ${k}`)) ?? 0;
  const ranges = Math.max(1, shape.completed.ranges);
  const invocations = Math.max(1, shape.processors.invocations);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    ledgerWriteUnitsPerRange: round((units('planner') + units('processor')) / ranges),
    processorInvocationsPerTick: round(shape.processors.invocations / Math.max(1, shape.ticks.length)),
    logBytesPerInvocation: Math.round((logs.get('processor')?.bytes ?? 0) / invocations),
    // A chained tick is an invocation of its own: what Lambda bills for it (its wait for the due time included).
    ...(shape.chain && { plannerMsPerTick: Math.round(shape.chain.ticks.totalMs / Math.max(1, shape.chain.ticks.invocations)) }),
  };
}
