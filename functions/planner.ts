/**
 * Planner Lambda. On its schedule ({"loop": true}, or an EventBridge rule's event) it ticks every
 * stream every trigger interval for as long as its remaining time allows, then hands the loop over
 * to the next scheduled invocation (lib/planner/loop.ts). Ad hoc ({"dryRun"?, "streams"?}) it plans
 * once. Thin: validate the payload, run the use case, publish metrics, return the reports.
 */
import middy from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import type { Context } from 'aws-lambda';
import type { StreamConfig } from '../lib/config/schema';
import { AppError } from '../lib/errors';
import type { Dispatcher } from '../lib/ports/dispatcher';
import { runPlannerLoop, type LoopDeps, type StreamLoopReport } from '../lib/planner/loop';
import { createLoopMetrics, recordChainTick } from '../lib/planner/loop-metrics';
import { schedulePeriodFromEnv, TICK_QUEUE_URL_ENV, tickChainFromEnv, tickModeOf } from '../lib/planner/loop-timing';
import { runChainTick, watchTickChains, type ChainTickReport, type ChainWatch } from '../lib/planner/tick-chain';
import type { TickQueue } from '../lib/ports/tick-queue';
import { plannerProcessorConcurrency } from '../lib/planner/concurrency-cap';
import { addPlannerMetric, recordPlannerMetrics } from '../lib/planner/metrics';
import { parsePlannerPayload, type ChainRequest, type PlannerRequest } from '../lib/planner/payload';
import { runPlanner, type StreamPlanReport } from '../lib/planner/run';
import { awsRuntime, kafkaLogTo, type Runtime } from '../lib/runtime/aws';
import { freshConnections } from '../lib/runtime/fresh-connections';
import { metricsNamespaceFrom } from '../lib/runtime/metrics-namespace';

/** Raised after all streams ran when at least one failed, so Lambda records the invocation as failed. */
export class PlannerRunFailedError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PLANNER_FAILED', message, options);
  }
}

/** What the handler is built on: the container's runtime, and (for in-process runs, benchmarks) another dispatcher. */
export type PlannerHandlerOptions = {
  runtime?: () => Runtime;
  dispatcher?: Dispatcher;
  /** The tick chain's queue (default: the runtime's, from PLANNER_TICK_QUEUE_URL). */
  tickQueue?: TickQueue;
  logger?: Logger;
  metrics?: Metrics;
};

/** A planner handler; `handler` below is the deployed one. */
export function createPlannerHandler(opts: PlannerHandlerOptions = {}) {
  const logger = opts.logger ?? new Logger({ serviceName: 'planner' });
  const metrics = opts.metrics ?? new Metrics({ namespace: metricsNamespaceFrom(process.env), serviceName: 'planner' });
  const runtime = opts.runtime ?? (() => awsRuntime(process.env, { kafkaLog: kafkaLogTo(logger) }));

  async function plan(event: unknown, context: Context) {
    try {
      return await planOrLoop(event, context);
    } finally {
      // Added last, for logMetrics to flush: the runs publish their own metrics as they go, and it
      // would otherwise find nothing and warn on every invocation.
      addPlannerMetric(metrics, 'PlannerInvocations', 1);
    }
  }

  async function planOrLoop(event: unknown, context: Context) {
    const rt = runtime();
    const req = parsePlannerPayload(event, rt.config);
    const remainingMs = (): number => context.getRemainingTimeInMillis?.() ?? 60_000;
    const ownerToken = `${context.awsRequestId ?? 'local'}:${Date.now()}`;
    if (req.chain) return chainTicks(rt, req, { ownerToken, deps: runDeps(rt, false, remainingMs) });
    const deps = runDeps(rt, req.dryRun, remainingMs);
    if (req.loop) return loop(rt, req, deps, { ownerToken, remainingMs });
    const reports = await runPlanner(
      { ...deps, ownerToken },
      // Store time: the planner lease and range lease expiry are judged on DynamoDB's clock.
      { streams: req.streams, dryRun: req.dryRun, nowMs: await rt.storeClock() },
    );
    reports.forEach((r) => logRun(r));
    if (!req.dryRun) recordPlannerMetrics(metrics, reports);
    failIfAny(reports.filter((r) => r.status === 'failed').map((r) => `${r.stream}: ${r.reason}`));
    return { dryRun: req.dryRun, streams: reports };
  }

  /** What every run of this invocation is built on. */
  function runDeps(rt: Runtime, dryRun: boolean, remainingMs: () => number) {
    const dispatcher = dryRun ? { dispatch: async () => [] } : (opts.dispatcher ?? rt.dispatcher());
    return {
      ledger: rt.ledger,
      metadataFor: (s: StreamConfig) => rt.metadata.forStream(s),
      destinationsFor: (s: StreamConfig) => rt.destinationsFor(s),
      dispatcher,
      // A lease outlives the function timeout so a hard-killed run cannot overlap the next one.
      plannerLeaseMs: Math.max(remainingMs(), 1000) + 10_000,
      // Shared by every configured stream, also in an ad hoc run of a few: the scheduled runs keep planning the others.
      // Continuous streams with a segments function of their own (SEGMENT_FUNCTION_NAME) neither share nor are capped by it.
      processorConcurrency: plannerProcessorConcurrency(process.env, rt.config.streams),
    };
  }

  /** The tick chain's settings: which streams it ticks (none without a tick queue), and the queue. */
  function chainOf(rt: Runtime) {
    const tickQueue = opts.tickQueue ?? rt.tickQueue();
    const chainFromMs = tickQueue ? tickChainFromEnv(process.env) : undefined;
    return { tickQueue, settings: { schedulePeriodMs: schedulePeriodFromEnv(process.env), chainFromMs } };
  }

  /** A tick chain's message: one planner run of its stream, then the next tick's message (lib/planner/tick-chain.ts). */
  async function chainTicks(rt: Runtime, req: ChainRequest, run: { ownerToken: string; deps: ReturnType<typeof runDeps> }) {
    const { tickQueue, settings } = chainOf(rt);
    if (!tickQueue) throw new PlannerRunFailedError(`a tick chain's message, but ${TICK_QUEUE_URL_ENV} is not set: no chain can go on`);
    const clock = { nowMs: () => rt.storeClock(), sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) };
    const ticks = [];
    for (const { tick, stream } of req.chain) {
      const t = await runChainTick({ ...run.deps, tickQueue, clock }, stream, tick, { ...settings, ownerToken: run.ownerToken });
      logChainTick(t);
      ticks.push(t);
    }
    ticks.forEach((t) => recordChainTick(metrics, t));
    const reports = ticks.flatMap((t) => (t.report ? [t.report] : []));
    failIfAny(reports.filter((r) => r.status === 'failed').map((r) => `${r.stream}: ${r.reason}`));
    return { chain: ticks };
  }

  /** The scheduled loop: ticks until the remaining time runs out or the next invocation takes over. */
  async function loop(
    rt: Runtime,
    req: PlannerRequest,
    deps: Omit<LoopDeps, 'clock'>,
    run: { ownerToken: string; remainingMs: () => number },
  ) {
    // Its own timing on this container's clock (the deadline's clock); leases and tick times on the store's.
    const localMs = (): number => performance.timeOrigin + performance.now();
    const deadlineMs = localMs() + run.remainingMs();
    const clock = { nowMs: () => rt.storeClock(), localMs, sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) };
    const loopMetrics = createLoopMetrics(metrics);
    const { tickQueue, settings } = chainOf(rt);
    const chained = (s: StreamConfig) => tickModeOf(s.triggerIntervalMs, settings) === 'chain';
    const opts = { streams: req.streams.filter((s) => !chained(s)), ownerToken: run.ownerToken, deadlineMs, ...settings };
    // The schedule is the tick chains' watchdog: it starts a chain that has none or that stopped.
    const [reports, chains] = await Promise.all([
      runPlannerLoop({ ...deps, clock }, opts, (t) => {
        loopMetrics.tick(t);
        if (t.report.status === 'failed') logger.warn('planner tick failed', { stream: t.stream, reason: t.report.reason });
      }),
      tickQueue ? watchTickChains({ ...deps, tickQueue, clock }, req.streams.filter(chained), settings) : [],
    ]);
    loopMetrics.end(reports);
    for (const r of reports) logLoop(r);
    chains.forEach(logChainWatch);
    // The invocation fails when a stream's last tick failed: Lambda's Errors metric and alarm see a loop that cannot plan.
    failIfAny(reports.filter((r) => r.last?.status === 'failed').map((r) => `${r.stream}: ${r.last?.reason}`));
    failIfAny(chains.filter((c) => c.sendError).map((c) => `${c.stream}: the tick chain could not start: ${c.sendError}`));
    return { loop: true, streams: reports, ...(chains.length ? { chains } : {}) };
  }

  function logRun(r: StreamPlanReport, level: 'info' | 'warn' | 'debug' = 'info'): void {
    logger[level]('planner run', {
      stream: r.stream,
      status: r.status,
      reason: r.reason,
      rangesPlanned: r.rangesPlanned,
      recordsPlanned: r.recordsPlanned,
      inFlight: r.inFlight,
      dispatchFailures: r.dispatchFailures,
      dataLoss: r.dataLoss,
      partitions: r.partitions,
    });
    // Re-created topics, missing topics and brokers without topic ids are worth warnings of their own.
    if (r.recreated.length) logger.warn('topic re-created', { stream: r.stream, closedIncarnations: r.recreated });
    for (const w of r.warnings) logger.warn(w, { stream: r.stream });
    if (r.deliveries?.errors.length) logger.warn('failure destination delivery failed', { stream: r.stream, errors: r.deliveries.errors });
  }

  /** A first start is news; a restart means a chain broke (an invocation died between its claim and its send). */
  function logChainWatch(c: ChainWatch): void {
    if (c.sendError) logger.error('tick chain could not be started: its first message was not sent', { ...c });
    else if (c.outcome === 'started' && c.lastTickAtMs === undefined) logger.info('tick chain started', { ...c });
    else if (c.outcome === 'started') logger.warn('tick chain restarted: no tick claimed for too long', { ...c });
  }

  function logChainTick(t: ChainTickReport): void {
    const { report, ...tick } = t;
    if (t.outcome !== 'ticked') logger.info('tick chain message', tick);
    // A tick's run is a debug line, as the loop's ticks are not logged one by one: a tick every few
    // seconds all month is CloudWatch Logs' bill. Its failure and its warnings are logged.
    else if (report) logRun(report, report.status === 'failed' ? 'warn' : 'debug');
    if (t.sendError) logger.error('tick chain broken: the next tick could not be sent (the schedule restarts it)', tick);
  }

  function logLoop(r: StreamLoopReport): void {
    const { last, ...loopReport } = r;
    logger.info('planner loop', { ...loopReport, lastStatus: last?.status });
    if (last) logRun(last);
  }

  return middy(plan).use(injectLambdaContext(logger)).use(freshConnections(logger)).use(logMetrics(metrics));
}

function failIfAny(failures: string[]): void {
  if (failures.length) throw new PlannerRunFailedError(failures.join('; '));
}

export const handler = createPlannerHandler();
