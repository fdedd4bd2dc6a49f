/**
 * `npm start -- --config <file>`: the local runtime over the streams of a deployment config file
 * (the planner on each stream's trigger interval, the processors in this process, the same live
 * view as the demo), against the local stack or KAFKA_BROKERS / DYNAMODB_ENDPOINT. The ledger table
 * and the declared sink tables are created when missing. The streams' `handler.environment` is
 * applied to this process's environment for the run, except names the shell already sets. Locally every stream reads from the local
 * broker (KAFKA_BROKERS): the file's `kafka.brokers` are those of the deployed stage.
 *
 * With `untilCaughtUp` the run ends once every partition of every stream has no lag and nothing in
 * flight (exit 0), or as soon as a range is parked or a partition failed (exit 1, naming them), or
 * when nothing was committed for `timeoutMs` while lag remained (exit 1).
 */
import { busyProcessors, partitionCaughtUp } from './caught-up';
import { loadDeploymentConfig } from '../config/load';
import type { DeploymentConfig, StreamConfig } from '../config/schema';
import { kafkaLogLines, quietKafkaLog } from '../kafka/client';
import { duration } from '../ops/format';
import type { OpsContext } from '../ops/context';
import { partitionKey } from '../ranges';
import { composeAdapters } from '../runtime/compose';
import { cliCommand } from './cli-hint';
import type { PartitionProgress, ProgressView } from './progress';
import type { LocalRunner } from '../runtime/local';
import { applyHandlerEnvironment, appliedEnvironmentLine } from './handler-environment';
import { createViewAndDynamo, createViewedRunner, pause, readStreamOffsets, type LocalRunDeps } from './session';
import { ensureConfigTables } from './tables';

export type RunConfigOptions = {
  configFile: string;
  untilCaughtUp: boolean;
  json: boolean;
  progress: 'tty' | 'lines' | 'off';
  /** Bounded runs: give up when nothing was committed for this long while lag remained. */
  timeoutMs: number;
  /** Processors running at once (the local reserved concurrency); more ranges queue. */
  maxConcurrency: number;
  /** Also print the Kafka client's own log lines (default: each failure once, in one line). */
  verbose?: boolean;
};

/** A bounded run gives up this soon when Kafka cannot be read at all (or after `timeoutMs`, when shorter). */
const UNAVAILABLE_GIVE_UP_MS = 30_000;

export type RunConfigDeps = LocalRunDeps;

/** What a run of a config file reports (`--json`: its last line). */
export type RunConfigSummary = {
  configFile: string;
  streams: string[];
  ledgerTable: string;
  sinkTablesCreated: string[];
  partitions: number;
  /** Sum over partitions of latest - committed when the run ended. */
  lag: number;
  /** Records delivered to handlers and committed during this run. */
  records: number;
  invocations: number;
  plannerRuns: number;
  deadLetters: number;
  processorErrors: number;
  /** Ranges parked (`stream topic/partition [from, until): error`). */
  parked: string[];
  /** Partitions that failed (`stream topic/partition: reason`). */
  failedPartitions: string[];
  caughtUp: boolean;
  interrupted: boolean;
  wallMs: number;
};

export type RunConfigResult = { summary: RunConfigSummary; exitCode: number };

/** A config file's streams as they run locally: read from `kafkaBrokers`. */
function loadLocalConfig(configFile: string, kafkaBrokers: string, env: NodeJS.ProcessEnv): DeploymentConfig {
  const config = loadDeploymentConfig({ STREAMS_CONFIG: configFile, LEDGER_TABLE: env.LEDGER_TABLE }, { from: '--config' });
  const brokers = kafkaBrokers.split(',').map((b) => b.trim());
  return { ...config, streams: config.streams.map((s) => ({ ...s, kafka: { ...s.kafka, brokers } })) };
}

export type Watch = {
  ops: Pick<OpsContext, 'ledger' | 'metadata'>;
  runner: Pick<LocalRunner, 'inFlight' | 'stats'>;
  view: ProgressView;
  streams: StreamConfig[];
  t0: number;
};

/** One look at every stream: partition rows for the view, and whether all is caught up or stuck. */
async function look(w: Watch) {
  const inFlight = w.runner.inFlight();
  const rows: PartitionProgress[] = [];
  let caughtUp = true;
  const parked: string[] = [];
  const failedPartitions: string[] = [];
  for (const stream of w.streams) {
    const { offsets, parts, open, byKey } = await readStreamOffsets(w.ops, stream);
    if (offsets.length === 0) caughtUp = false;
    for (const o of offsets) {
      const p = byKey.get(partitionKey(o.topic, o.partition));
      const running = busyProcessors(inFlight).filter(
        (r) => r.stream === stream.id && r.topic === o.topic && r.partition === o.partition,
      ).length;
      rows.push({
        topic: w.streams.length > 1 ? `${stream.id}:${o.topic}` : o.topic,
        partition: o.partition,
        committed: p?.committed,
        earliest: o.earliest,
        latest: o.latest,
        inFlight: running,
      });
      if (!partitionCaughtUp(p, o.latest) || running > 0) caughtUp = false;
    }
    for (const r of open.filter((x) => x.status === 'parked'))
      parked.push(`${stream.id} ${r.topic}/${r.partition} [${r.from}, ${r.until}): ${r.lastError ?? 'parked'}`);
    for (const p of parts.filter((x) => x.status === 'failed'))
      failedPartitions.push(`${stream.id} ${p.topic}/${p.partition}: ${p.reason ?? 'failed'}`);
  }
  return { rows, caughtUp, parked, failedPartitions };
}

/** One look at every stream (`look`): the rows, whether all is caught up, what is parked or failed. */
export type Look = Awaited<ReturnType<typeof look>>;

/** Shows progress until caught up or stuck (bounded), or Ctrl-C; returns the last look. */
async function watch(w: Watch, opts: RunConfigOptions, deps: RunConfigDeps): Promise<{ last?: Look; reason: string }> {
  let last: Look | undefined;
  let committed = -1;
  let progressAtMs = Date.now();
  const unavailable = unavailability(w.view);
  for (;;) {
    const now = Date.now();
    last = await look(w).then(
      (l) => (unavailable.ok(), l),
      (err: unknown) => (unavailable.failed((err as Error)?.message ?? String(err), now), last),
    );
    const giveUpMs = Math.min(opts.timeoutMs, UNAVAILABLE_GIVE_UP_MS);
    if (opts.untilCaughtUp && !last && unavailable.forMs(now) >= giveUpMs) {
      return { last, reason: `gave up: Kafka unavailable for ${duration(giveUpMs)} (${unavailable.reason()})` };
    }
    if (last) {
      const stats = w.runner.stats();
      const total = last.rows.reduce((s, r) => s + (r.committed ?? 0), 0);
      if (total !== committed) [committed, progressAtMs] = [total, now];
      w.view.show({
        elapsedMs: now - w.t0,
        stream: w.streams.map((s) => s.id).join(', '),
        phase: opts.untilCaughtUp ? 'until caught up' : 'running',
        // No `produced`: a config run produces nothing (the records were in the topics before it or are written by others).
        partitions: last.rows,
        invocations: stats.invocations,
        plannerRuns: stats.plannerRuns,
        inFlight: w.runner.inFlight().length,
        deadLetters: stats.deadLetters,
        errors: stats.byStatus.error ?? 0,
        lastError: stats.lastError,
        events: [],
      });
      if (last.parked.length || last.failedPartitions.length) return { last, reason: 'a range was parked or a partition failed' };
      if (opts.untilCaughtUp && last.caughtUp) return { last, reason: 'caught up' };
    }
    if (deps.signal?.aborted) return { last, reason: 'interrupted' };
    if (opts.untilCaughtUp && now - progressAtMs > opts.timeoutMs) return { last, reason: gaveUpReason(w, last, opts.timeoutMs) };
    await pause(opts.untilCaughtUp ? 250 : 1000, deps.signal);
  }
}

/** Kafka's availability as the watch sees it: a failure said once (and its end), and for how long it has lasted. */
function unavailability(view: ProgressView) {
  let since: number | undefined;
  let said: string | undefined;
  return {
    failed(reason: string, nowMs: number) {
      since ??= nowMs;
      if (reason !== said) view.event(`unavailable: ${reason}`);
      said = reason;
    },
    ok() {
      if (said !== undefined) view.event('available again');
      since = undefined;
      said = undefined;
    },
    forMs: (nowMs: number) => (since === undefined ? 0 : nowMs - since),
    reason: () => said ?? 'no answer',
  };
}

/** Why a bounded run stopped without progress: lag that did not move, or no partition to read at all (and the planner's warnings). */
function gaveUpReason(w: Watch, last: Look | undefined, timeoutMs: number): string {
  if (last?.rows.length) return `gave up: nothing committed for ${duration(timeoutMs)} while lag remained`;
  const warnings = [...w.runner.stats().reports.values()].flatMap((r) => r.warnings);
  const why = warnings.length ? warnings.join('; ') : "check the streams' topics or topicPattern";
  return `gave up: no partition to read after ${duration(timeoutMs)} (${why})`;
}

/** Runs the config file's streams locally; returns the summary and the exit code. */
export async function runConfigFile(opts: RunConfigOptions, deps: RunConfigDeps): Promise<RunConfigResult> {
  const config = loadLocalConfig(opts.configFile, deps.kafkaBrokers, deps.env);
  // The local stack's emulator answers Glue, SQS, SNS and S3 too: schema registries and failure destinations
  // are read from and delivered to it unless the shell names another endpoint.
  const env: NodeJS.ProcessEnv = { ...deps.env, DYNAMODB_ENDPOINT: deps.dynamodbEndpoint };
  for (const service of ['GLUE', 'SQS', 'SNS', 'S3'] as const) {
    const name = `AWS_ENDPOINT_URL_${service}`;
    env[name] = deps.env[name] ?? deps.env.AWS_ENDPOINT_URL ?? deps.dynamodbEndpoint;
  }
  const { view, dynamo } = createViewAndDynamo(opts, deps, env);
  // Before any handler module is loaded: a module may read its variables when it is first imported.
  const handlerEnv = applyHandlerEnvironment(config.streams, process.env);
  const envLine = appliedEnvironmentLine(handlerEnv);
  if (envLine) view.event(envLine);
  let ops: OpsContext | undefined;
  try {
    ops = composeAdapters({ config, env, dynamo, kafkaLog: opts.verbose ? kafkaLogLines((l) => view.event(l)) : quietKafkaLog });
    // Handler modules are loaded (and checked) before anything is created or run.
    for (const s of config.streams) if (s.handler) ops.handlerFor(s);
    const sinkTablesCreated = await ensureConfigTables(dynamo, config);
    view.event(
      `streams ${config.streams.map((s) => s.id).join(', ')} from ${opts.configFile}; ` +
        `ledger ${config.ledgerTable}${sinkTablesCreated.length ? `; created sink tables ${sinkTablesCreated.join(', ')}` : ''}; ` +
        `CLI: ${cliCommand('status', opts.configFile)}`,
    );
    const runner = createViewedRunner(ops, view, config.streams, opts.maxConcurrency, deps.hardSignal);
    const w: Watch = { ops, runner, view, streams: config.streams, t0: Date.now() };
    deps.onRunning?.();
    runner.start();
    const end = await watch(w, opts, deps);
    view.event(end.reason);
    await runner.stop({ graceMs: 10_000 });
    view.close();
    return await reportRun(w, opts, deps, { ledgerTable: config.ledgerTable, sinkTablesCreated, end });
  } finally {
    await ops?.close().catch(() => undefined);
    if (!ops) dynamo.destroy();
    handlerEnv.restore();
  }
}

/**
 * The ledger and Kafka read again once the runner has stopped. The watch's last look is up to a second
 * old, and older still when a parked range or failed partition ended the watch: the other partitions
 * go on committing while the runner drains, so a summary from that look said lag 3,000 where `status`
 * then showed 2,000. The watch's look stands in only when nothing can be read now.
 */
async function finalLook(w: Watch, watched: Look | undefined): Promise<Look | undefined> {
  try {
    return await look(w);
  } catch (err) {
    w.view.event(`summary from the last look: ${(err as Error)?.message ?? String(err)}`);
    return watched;
  }
}

/** Prints the run's summary (every figure as the ledger has it at exit) and returns it with the exit code. */
export async function reportRun(
  w: Watch,
  opts: Pick<RunConfigOptions, 'configFile' | 'json' | 'untilCaughtUp'>,
  deps: Pick<RunConfigDeps, 'signal' | 'out'>,
  r: { ledgerTable: string; sinkTablesCreated: string[]; end: { last?: Look; reason: string } },
): Promise<RunConfigResult> {
  const stats = w.runner.stats();
  const last = await finalLook(w, r.end.last);
  const deadLetters = (await Promise.all(w.streams.map((s) => w.ops.ledger.listDeadLetters(s.id)))).reduce((n, d) => n + d.length, 0);
  const interrupted = deps.signal?.aborted ?? false;
  const summary: RunConfigSummary = {
    configFile: opts.configFile,
    streams: w.streams.map((s) => s.id),
    ledgerTable: r.ledgerTable,
    sinkTablesCreated: r.sinkTablesCreated,
    partitions: last?.rows.length ?? 0,
    lag: last?.rows.reduce((s, row) => s + Math.max(0, (row.latest ?? 0) - (row.committed ?? row.earliest ?? 0)), 0) ?? 0,
    records: stats.records,
    invocations: stats.invocations,
    plannerRuns: stats.plannerRuns,
    deadLetters,
    processorErrors: stats.byStatus.error ?? 0,
    parked: last?.parked ?? [],
    failedPartitions: last?.failedPartitions ?? [],
    caughtUp: last?.caughtUp ?? false,
    interrupted,
    wallMs: Date.now() - w.t0,
  };
  const stuck = summary.parked.length > 0 || summary.failedPartitions.length > 0;
  const exitCode = stuck ? 1 : opts.untilCaughtUp ? (summary.caughtUp ? 0 : interrupted ? 130 : 1) : 0;
  deps.out(`${opts.json ? JSON.stringify(summary) : humanRunSummary(summary)}\n`);
  return { summary, exitCode };
}

/** The summary printed when a config run ends. */
function humanRunSummary(s: RunConfigSummary): string {
  const lines = [
    '',
    `streams ${s.streams.join(', ')}: ${s.records} records processed in ${s.invocations} processor ` +
      `invocations, ${s.plannerRuns} planner runs, ${duration(s.wallMs)}; ${s.partitions} partitions, lag ${s.lag}`,
  ];
  for (const p of s.parked) lines.push(`PARKED ${p}`);
  for (const p of s.failedPartitions) lines.push(`FAILED ${p}`);
  if (s.deadLetters) lines.push(`${s.deadLetters} dead-lettered (see: ${cliCommand('dead-letters <stream>', s.configFile)})`);
  if (s.processorErrors) lines.push(`${s.processorErrors} processor invocations failed (their ranges were retried)`);
  lines.push(s.caughtUp ? 'caught up: no lag, nothing in flight' : 'not caught up');
  lines.push(`inspect: ${cliCommand('status', s.configFile)}`);
  return lines.join('\n');
}
