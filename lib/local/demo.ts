/**
 * `npm start`: the main job on one machine. A fresh demo stream per run (topic, stream id and sink
 * table named after the run: `demo-<what>-<time>-<hex>`), card payments produced at a steady rate
 * with a partition added part way, the planner every second and the processors in this process
 * (in-process dispatcher), and the exactly-once running-totals handler writing into a DynamoDB sink
 * table.
 *
 * Bounded (`--until-caught-up`): producing stops after `durationMs`; the run ends when every
 * partition's committed offset reached its latest offset, then checks the sink against what was
 * produced, key by key. Unbounded: runs until Ctrl-C, then stops producing, lets processors finish
 * (or stop at a chunk boundary: each chunk commits atomically) and checks that the sink holds
 * exactly the committed records.
 *
 * At exit (the end of the run, Ctrl-C, a failure) the run's topic and sink table are deleted, unless
 * `keep`: a shared stack would otherwise fill up with one of each per run. The stream's items in the
 * ledger table (shared by every demo run, in the emulator's memory) stay, so the CLI can still show
 * its dead letters.
 */
import { busyProcessors, partitionCaughtUp } from './caught-up';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { parseDeploymentConfig, type DeploymentConfig, type StreamConfig } from '../config/schema';
import { topicSelector } from '../config/topics';
import { TimeoutError } from '../errors';
import { KAFKAJS_RETRY, kafkaLogLines, quietKafkaLog } from '../kafka/client';
import { KafkaError } from '../errors';
import { toKafkaError } from '../kafka/errors';
import { ensureLedgerTable } from '../ledger/table';
import type { OpsContext } from '../ops/context';
import { DEFAULT_LOCAL_CONCURRENCY } from '../dispatch/dispatcher.local';
import { duration } from '../ops/format';
import { inFlightProgress } from '../ops/in-flight';
import type { RangeState } from '../ports/ledger-state';
import { sameIncarnation } from '../ports/ledger-rules/incarnation';
import { isOpenRange, partitionKey } from '../ranges';
import { composeAdapters } from '../runtime/compose';
import { createSinkTable } from '../sink/table.dynamodb';
import { scanTotals, type KeyTotals } from '../sink/totals.dynamodb';
import { DEMO_CONFIG_FILE } from './paths';
import { createDemoProducer, type DemoProducer } from './producer';
import { oneTopicConfigInput } from './one-topic';
import { cliCommand, localCommand } from './cli-hint';
import type { PartitionProgress, ProgressFrame, ProgressView } from './progress';
import type { LocalRunner } from '../runtime/local';
import { createViewAndDynamo, createViewedRunner, pause, readStreamOffsets, type LocalRunDeps } from './session';
import { listed, noResources, removalLine, removeResources, type CreatedResources } from './tool-cleanup';
import { toolResourceName } from './tool-names';

export type DemoOptions = {
  /** Bounded run: stop producing after `durationMs`, exit once lag is zero. */
  untilCaughtUp: boolean;
  /** Print one JSON summary as the last line of stdout (progress goes to stderr as log lines). */
  json: boolean;
  ratePerSec: number;
  /** How long to produce (bounded runs; unbounded runs produce until Ctrl-C when unset). */
  durationMs?: number;
  /** Partitions the topic starts with; one more is added at `addPartitionAfterMs`. */
  partitions: number;
  addPartitionAfterMs?: number;
  accounts: number;
  /** Bounded runs: give up waiting for lag zero this long after producing stopped. */
  timeoutMs: number;
  progress: 'tty' | 'lines' | 'off';
  triggerIntervalMs: number;
  ledgerTable: string;
  /** Processors running at once in this process (the local reserved concurrency); more dispatches queue. */
  maxConcurrency: number;
  /** Where to write the demo's deployment config for the CLI (null: do not write). */
  configFile?: string | null;
  /** Also print the Kafka client's own log lines. */
  verbose?: boolean;
  /** Leave the run's topic and sink table on the stack at exit (by default they are deleted). */
  keep?: boolean;
  /** Continuous mode: resident segments instead of micro-batches (short segments, so hand-overs show). */
  continuous?: boolean;
};

/** The demo's continuous settings: segments of 10 s, so that a short run shows hand-overs. */
const DEMO_SEGMENTS = { segmentMs: 10_000, handoverLeadMs: 2_000 };

export const DEMO_DEFAULTS = {
  ratePerSec: 250,
  boundedDurationMs: 20_000,
  partitions: 3,
  accounts: 40,
  timeoutMs: 120_000,
  triggerIntervalMs: 1000,
  ledgerTable: 'kafka-direct-ledger',
  maxConcurrency: DEFAULT_LOCAL_CONCURRENCY,
  /** Unbounded runs add the partition after this long. */
  unboundedAddPartitionAfterMs: 30_000,
} as const;

export type DemoSummary = {
  produced: number;
  applied: number;
  /** From the first event produced until lag reached zero (bounded) or the run stopped. */
  wallMs: number;
  invocations: number;
  stream: string;
  topic: string;
  sinkTable: string;
  partitions: number;
  /** Records in the topic (sum over partitions of latest - earliest): must equal `produced`. */
  kafkaRecords: number;
  plannerRuns: number;
  deadLetters: number;
  /** Records in Kafka the ledger does not show processed (interrupted or timed-out runs leave some). */
  unapplied: number;
  processorErrors: number;
  caughtUp: boolean;
  interrupted: boolean;
  /** Sink totals and counts equal the produced ones key by key (bounded runs). */
  exact: boolean;
  /** Sink counts + dead letters equal the offsets the ledger shows processed (no loss, no duplicates). */
  consistent: boolean;
  /** What became of the run's topic and sink table at exit: deleted, kept (--keep), or not deleted (`cleanupError`). */
  cleanup: DemoCleanup['cleanup'];
  cleanupError?: string;
  producerError?: string;
};

/** The end of the run's topic and sink table, and the line that says it. */
type DemoCleanup = { cleanup: 'deleted' | 'kept' | 'failed'; cleanupError?: string; line: string };

export type DemoResult = { summary: DemoSummary; expected: KeyTotals; sink: KeyTotals; exitCode: number };

export type DemoDeps = LocalRunDeps;

/** The run's names: a fresh stream, topic and sink table per run. */
type DemoNames = { id: string; topic: string; sinkTable: string };

/** What the phases of a started run share. */
type DemoRun = {
  opts: DemoOptions;
  deps: DemoDeps;
  names: DemoNames;
  view: ProgressView;
  ops: OpsContext;
  stream: StreamConfig;
  runner: LocalRunner;
  producer: DemoProducer;
  /** When producing started. */
  t0: number;
};

type DemoPhase = 'producing' | 'draining' | 'stopping';

/** Where the run loop ended: caught up, interrupted or given up, and what is still to settle. */
type RunEnd = { caughtUp: boolean; caughtUpAtMs?: number; lastFrame?: ProgressFrame; adding?: Promise<void> };

/** Runs the demo and returns its summary and exit code (0: success; 1: a check failed; 130: interrupted bounded run). */
export async function runDemo(opts: DemoOptions, deps: DemoDeps): Promise<DemoResult> {
  const names = demoNames(Date.now(), randomBytes(2).toString('hex'));
  const env = { ...deps.env, DYNAMODB_ENDPOINT: deps.dynamodbEndpoint, KAFKA_BROKERS: deps.kafkaBrokers };
  const { view, dynamo } = createViewAndDynamo(opts, deps, env);
  const kafka = new Kafka({ clientId: 'demo', brokers: deps.kafkaBrokers.split(','), logLevel: logLevel.NOTHING });
  // The admin's connect is the run's first Kafka call: with the project's short retry a wrong
  // KAFKA_BROKERS fails in a second, not after ~10 s of kafkajs's default retries. The producer keeps
  // those defaults, so a broker hiccup delays events instead of dropping them.
  const admin = new Kafka({
    clientId: 'demo-admin',
    brokers: deps.kafkaBrokers.split(','),
    logLevel: logLevel.NOTHING,
    retry: KAFKAJS_RETRY,
  }).admin();
  let ctx: OpsContext | undefined;
  const created = noResources();
  let cleanup: DemoCleanup | undefined;
  const cleanUp = async (): Promise<DemoCleanup> => (cleanup ??= await settleResources(created, opts.keep ?? false, { admin, dynamo }));

  try {
    const { config, configFile } = await setUpDemo(opts, deps, { names, created }, dynamo, admin);
    const stream = config.streams[0] as StreamConfig;
    // The Kafka client's own lines (a lost connection) only on request: the run says a failure once itself.
    ctx = composeAdapters({ config, env, dynamo, kafkaLog: opts.verbose ? kafkaLogLines((l) => view.event(l)) : quietKafkaLog });
    const { id, topic, sinkTable } = names;
    view.event(
      `stream ${id}: topic ${topic} created with ${opts.partitions} partitions, sink ${sinkTable}, ` +
        `ledger ${opts.ledgerTable}${configFile ? `; CLI: ${cliCommand('status', undefined)}` : ''}`,
    );

    const runner = createViewedRunner(ctx, view, [stream], opts.maxConcurrency, deps.hardSignal);
    const producer = createDemoProducer(kafka, admin, { topic, ratePerSec: opts.ratePerSec, accounts: opts.accounts });

    const run: DemoRun = { opts, deps, names, view, ops: ctx, stream, runner, producer, t0: Date.now() };
    deps.onRunning?.();
    runner.start();
    producer.start();
    const end = await runUntilDone(run);

    if (end.lastFrame) view.show({ ...end.lastFrame, phase: 'stopping', elapsedMs: Date.now() - run.t0 });
    await end.adding;
    await producer.stop();
    await runner.stop({ graceMs: 10_000 });
    view.close();
    return await checkAndReport(run, dynamo, end, cleanUp);
  } finally {
    // A run that failed before its summary says here what became of what it had created.
    if (!cleanup && listed(created)) deps.err(`${(await cleanUp()).line}\n`);
    await ctx?.close().catch(() => undefined);
    if (!ctx) dynamo.destroy();
    await admin.disconnect().catch(() => undefined);
  }
}

/** The run's stream, topic and sink table: `demo-stream-<time>-<hex>`, `demo-payments-...`, `demo-totals-...`. */
function demoNames(nowMs: number, random: string): DemoNames {
  const name = (what: string) => toolResourceName('demo', what, nowMs, random);
  return { id: name('stream'), topic: name('payments'), sinkTable: name('totals') };
}

/**
 * Creates the ledger table, the sink table and the topic (recording in `created` the last two, the
 * run's own), and writes the demo's deployment config for the CLI; returns the parsed config.
 */
async function setUpDemo(
  opts: DemoOptions,
  deps: DemoDeps,
  { names, created }: { names: DemoNames; created: CreatedResources },
  dynamo: DynamoDBClient,
  admin: Admin,
): Promise<{ config: DeploymentConfig; configFile: string | null }> {
  await admin.connect().catch((err: unknown) => {
    throw new KafkaError(`${toKafkaError('connect', err).message} [KAFKA_BROKERS]`, { cause: err });
  });
  // The topic is recorded before it is asked for (it may exist even if waiting for its leaders
  // fails), the table once it exists (an unreachable emulator created nothing to delete).
  created.topics.push(names.topic);
  // All settled before the first failure is thrown: a topic creation still in flight would reconnect
  // the admin after `runDemo`'s `finally` disconnected it, and keep the process alive.
  const setUp = await Promise.allSettled([
    ensureLedgerTable(dynamo, opts.ledgerTable),
    createSinkTable(dynamo, names.sinkTable).then(() => void created.tables.push(names.sinkTable)),
    createTopic(admin, names.topic, opts.partitions),
  ]);
  for (const r of setUp) if (r.status === 'rejected') throw r.reason;
  const input = oneTopicConfigInput({
    ledgerTable: opts.ledgerTable,
    streamId: names.id,
    brokers: deps.kafkaBrokers,
    topic: names.topic,
    triggerIntervalMs: opts.triggerIntervalMs,
    // Locally a "Lambda" is an async call in this process: a short timeout keeps leases short.
    processor: { timeoutMs: 30_000 },
    handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: names.sinkTable },
    ...(opts.continuous && { continuous: DEMO_SEGMENTS }),
  });
  const config = parseDeploymentConfig(input, 'demo');
  const configFile = opts.configFile === undefined ? DEMO_CONFIG_FILE : opts.configFile;
  if (configFile) {
    mkdirSync(dirname(configFile), { recursive: true });
    writeFileSync(configFile, `${JSON.stringify(input, null, 2)}\n`);
  }
  return { config, configFile };
}

/**
 * Produces (adding a partition when due) and shows progress until the run is caught up after
 * producing stopped (bounded), Ctrl-C, or the drain timeout.
 */
async function runUntilDone(run: DemoRun): Promise<RunEnd> {
  const { opts, deps, view, producer } = run;
  let phase: DemoPhase = 'producing';
  let adding: Promise<void> | undefined;
  let stoppedProducingAtMs: number | undefined;
  let lastFrame: ProgressFrame | undefined;
  const history: RateHistory = new Map();
  for (;;) {
    const elapsed = Date.now() - run.t0;
    if (opts.addPartitionAfterMs !== undefined && !adding && elapsed >= opts.addPartitionAfterMs && phase === 'producing')
      adding = addPartition(run);
    if (phase === 'producing' && opts.durationMs !== undefined && elapsed >= opts.durationMs) {
      await adding;
      await producer.stop();
      stoppedProducingAtMs = Date.now();
      phase = 'draining';
      view.event(`stopped producing after ${producer.produced()} events; waiting for lag 0`);
    }
    const snap = await snapshot(run.ops, run.stream, busyProcessors(run.runner.inFlight())).catch(() => undefined);
    if (snap) {
      view.show((lastFrame = progressFrame(run, phase, snap, history)));
      if (phase === 'draining' && snap.caughtUp && snap.kafkaRecords >= producer.produced()) {
        const caughtUpAtMs = Date.now();
        view.event(`caught up: lag 0 on ${snap.rows.length} partitions`);
        return { caughtUp: true, caughtUpAtMs, lastFrame, adding };
      }
    }
    if (deps.signal?.aborted) {
      view.event('stopping: producer stopped, processors finishing their ranges');
      return { caughtUp: false, lastFrame, adding };
    }
    if (phase === 'draining' && stoppedProducingAtMs !== undefined && Date.now() - stoppedProducingAtMs > opts.timeoutMs) {
      view.event(`gave up: lag not zero ${duration(opts.timeoutMs)} after producing stopped`);
      return { caughtUp: false, lastFrame, adding };
    }
    await pause(phase === 'draining' ? 250 : 1000, deps.signal);
  }
}

/** Adds one partition to the topic (a fresh producer then writes to it too); failures become an event. */
function addPartition(run: DemoRun): Promise<void> {
  const total = run.opts.partitions + 1;
  run.view.event(`adding partition ${total - 1} to ${run.names.topic} (now ${total} partitions)`);
  return run.producer.addPartitions(total).then(
    () => run.view.event(`partition ${total - 1} added; producing with a fresh producer`),
    (err: unknown) => run.view.event(`adding a partition failed: ${(err as Error)?.message ?? String(err)}`),
  );
}

/** Committed offsets seen in the last 5 s, per partition, for the records-per-second column. */
type RateHistory = Map<string, Array<{ t: number; committed: number }>>;

/** One frame of the live view: the snapshot's rows with their recent rates, and the runner's counters. */
function progressFrame(run: DemoRun, phase: DemoPhase, snap: Snapshot, history: RateHistory): ProgressFrame {
  const rows = snap.rows;
  const { producer, runner } = run;
  const now = Date.now();
  const partitions: PartitionProgress[] = rows.map((r) => {
    const k = partitionKey(r.topic, r.partition);
    const h = history.get(k) ?? [];
    if (r.committed !== undefined) h.push({ t: now, committed: r.committed });
    while (h.length > 1 && now - (h[0] as { t: number }).t > 5000) h.shift();
    history.set(k, h);
    const first = h[0];
    const last = h[h.length - 1];
    const rate = first && last && last.t > first.t ? ((last.committed - first.committed) * 1000) / (last.t - first.t) : undefined;
    const { inside, ...row } = r;
    return { ...row, inFlightDone: inside.done, inFlightOffsets: inside.offsets, recordsPerSec: rate };
  });
  const s = runner.stats();
  return {
    elapsedMs: now - run.t0,
    stream: run.names.id,
    phase,
    produced: producer.produced(),
    producedPerSec: phase === 'producing' ? producer.produced() / Math.max(0.001, (now - run.t0) / 1000) : 0,
    partitions,
    invocations: s.invocations,
    plannerRuns: s.plannerRuns,
    inFlight: runner.inFlight().length,
    inFlightProgress: snap.inside,
    deadLetters: s.deadLetters,
    errors: s.byStatus.error ?? 0,
    lastError: s.lastError,
    events: [],
  };
}

/**
 * Checks the sink against what was produced and what the ledger committed, deletes (or keeps) the
 * run's topic and sink table, prints the summary, picks the exit code.
 */
async function checkAndReport(run: DemoRun, dynamo: DynamoDBClient, end: RunEnd, cleanUp: () => Promise<DemoCleanup>): Promise<DemoResult> {
  const { opts, deps, ops, stream, runner, producer, names } = run;
  const endMs = end.caughtUpAtMs ?? Date.now();
  const expected = producer.expected();
  const [sink, ledgerProcessed, kafkaRecords] = await Promise.all([
    scanTotals(dynamo, names.sinkTable),
    processedOffsets(ops, names.id),
    countRecords(ops, stream),
  ]);
  const applied = Object.values(sink).reduce((s, v) => s + v.count, 0);
  const stats = runner.stats();
  const deadLetters = (await ops.ledger.listDeadLetters(names.id)).length;
  const interrupted = deps.signal?.aborted ?? false;
  const produced = producer.produced();
  const consistent = applied + deadLetters === ledgerProcessed;
  const exact = end.caughtUp && applied === produced && kafkaRecords === produced && deadLetters === 0 && sameTotals(expected, sink);
  await producer.close();
  const partitions = (await ops.metadata.forStream(stream).then((m) => m.describeTopics({ topics: [names.topic] }))).reduce(
    (s, t) => s + t.partitions.length,
    0,
  );
  const { cleanup, cleanupError } = await cleanUp();
  const summary: DemoSummary = {
    produced,
    applied,
    wallMs: endMs - run.t0,
    invocations: stats.invocations,
    stream: names.id,
    topic: names.topic,
    sinkTable: names.sinkTable,
    partitions,
    kafkaRecords,
    plannerRuns: stats.plannerRuns,
    deadLetters,
    unapplied: Math.max(0, kafkaRecords - ledgerProcessed),
    processorErrors: stats.byStatus.error ?? 0,
    caughtUp: end.caughtUp,
    interrupted,
    exact,
    consistent,
    cleanup,
    ...(cleanupError ? { cleanupError } : {}),
    ...(producer.lastError() ? { producerError: producer.lastError() } : {}),
  };
  const exitCode = opts.untilCaughtUp ? (interrupted ? 130 : exact ? 0 : 1) : consistent ? 0 : 1;
  if (!opts.json) deps.out(`${humanSummary(summary, opts.untilCaughtUp)}\n`);
  else deps.out(`${JSON.stringify(summary)}\n`);
  return { summary, expected, sink, exitCode };
}

/** The summary printed when the demo ends (Ctrl-C or caught up). */
export function humanSummary(s: DemoSummary, bounded: boolean): string {
  const lines = [
    '',
    `produced ${s.produced} events (Kafka holds ${s.kafkaRecords}) into ${s.partitions} partitions; the sink applied ` +
      `${s.applied}; ${s.invocations} processor invocations, ${s.plannerRuns} planner runs, ${duration(s.wallMs)}`,
  ];
  // What is not in the sink, and why: dead-lettered (needs an operator) or not processed yet.
  if (s.deadLetters)
    lines.push(`${s.deadLetters} dead-lettered, not in the sink (see: ${cliCommand(`dead-letters ${s.stream}`, undefined)})`);
  if (s.unapplied)
    lines.push(`${s.unapplied} records left unapplied (not processed before the run stopped; the ledger keeps the position)`);
  if (bounded)
    lines.push(
      s.exact
        ? 'exactly once: every produced event is in the sink once, totals equal per account'
        : 'CHECK FAILED: the sink does not match what was produced (see the numbers above)',
    );
  else
    lines.push(
      s.consistent
        ? `consistent: the sink holds exactly the ${s.applied} committed events (no loss, no duplicates)`
        : 'CHECK FAILED: the sink does not match the committed offsets',
    );
  if (s.producerError) lines.push(`producer error seen: ${s.producerError}`);
  const resources = `topic ${s.topic} and sink table ${s.sinkTable}`;
  const stack = `the local stack keeps running; ${localCommand('down')} stops it`;
  if (s.cleanup === 'kept')
    lines.push(`kept ${resources} (--keep)`, `inspect: ${cliCommand(`status ${s.stream}`, undefined)}   (${stack})`);
  else if (s.cleanup === 'deleted') lines.push(`deleted ${resources} (--keep keeps them)`, stack);
  else lines.push(`could not delete ${resources}: ${s.cleanupError ?? 'unknown error'}`, stack);
  return lines.join('\n');
}

/** At exit: deletes what the run created (not the shared ledger table), or keeps it with --keep. */
async function settleResources(
  created: CreatedResources,
  keep: boolean,
  clients: { admin: Admin; dynamo: DynamoDBClient },
): Promise<DemoCleanup> {
  if (keep) return { cleanup: 'kept', line: `kept (--keep): ${listed(created)}` };
  const removal = await removeResources(created, clients, { timeoutMs: 30_000 });
  const line = removalLine(removal);
  return removal.errors.length ? { cleanup: 'failed', cleanupError: removal.errors.join('; '), line } : { cleanup: 'deleted', line };
}

type Snapshot = Awaited<ReturnType<typeof snapshot>>;

/** Kafka's offsets against the ledger's, per partition, and whether everything is committed. */
async function snapshot(ctx: OpsContext, stream: StreamConfig, inFlight: Array<{ topic: string; partition: number }>) {
  const { offsets, open, byKey } = await readStreamOffsets(ctx, stream);
  // The progress inside each partition's ranges in flight (their processors commit chunk by chunk).
  const current = open.filter((r) => sameIncarnation(r, byKey.get(partitionKey(r.topic, r.partition)) ?? {}));
  const byPartition = new Map<string, RangeState[]>();
  for (const r of current)
    byPartition.set(partitionKey(r.topic, r.partition), [...(byPartition.get(partitionKey(r.topic, r.partition)) ?? []), r]);
  const rows = offsets
    .map((o) => {
      const p = byKey.get(partitionKey(o.topic, o.partition));
      return {
        topic: o.topic,
        partition: o.partition,
        committed: p?.committed,
        earliest: o.earliest,
        latest: o.latest,
        lag: o.latest - (p?.committed ?? o.earliest),
        inFlight: inFlight.filter((r) => r.topic === o.topic && r.partition === o.partition).length,
        inside: inFlightProgress(byPartition.get(partitionKey(o.topic, o.partition)) ?? []),
        nextFrom: p?.nextFrom,
      };
    })
    .sort((a, b) => a.partition - b.partition);
  const caughtUp = inFlight.length === 0 && rows.length > 0 && rows.every((r) => partitionCaughtUp(r, r.latest));
  const kafkaRecords = offsets.reduce((s, o) => s + o.latest - o.earliest, 0);
  return { rows, caughtUp, kafkaRecords, inside: inFlightProgress(current) };
}

/** Offsets the ledger shows processed: finished ranges up to each committed offset, plus open ranges' progress. */
async function processedOffsets(ctx: OpsContext, stream: string): Promise<number> {
  const [parts, open] = await Promise.all([ctx.ledger.readPartitions(stream), ctx.ledger.readOpenRanges(stream)]);
  // A segment's open range commits into the partition's committed offset itself: counted there.
  const inside = open.filter((r) => !isOpenRange(r)).reduce((s, r) => s + r.progress - r.from, 0);
  return parts.reduce((s, p) => s + p.committed - p.startOffset, 0) + inside;
}

async function countRecords(ctx: OpsContext, stream: StreamConfig): Promise<number> {
  const kafka = await ctx.metadata.forStream(stream);
  const topics = await kafka.describeTopics(topicSelector(stream));
  // read_uncommitted: the high watermark, i.e. everything written (the demo uses no transactions).
  const offsets = await kafka.fetchOffsets(topics, 'read_uncommitted');
  return offsets.reduce((s, o) => s + o.latest - o.earliest, 0);
}

function sameTotals(a: KeyTotals, b: KeyTotals): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if (a[k]?.total !== b[k]?.total || a[k]?.count !== b[k]?.count) return false;
  return true;
}

/** Creates the topic and waits until every partition's leader answers (kafkajs's waitForLeaders is racy). */
async function createTopic(admin: Admin, topic: string, partitions: number): Promise<void> {
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: false });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const offsets = await admin.fetchTopicOffsets(topic).catch(() => []);
    if (offsets.length === partitions) return;
    if (Date.now() > deadline) throw new TimeoutError(`topic ${topic} not ready after 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
