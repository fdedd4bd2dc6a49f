/**
 * The chaos harness (issue #7): runs a stream over several partitions against the real broker and
 * the DynamoDB emulator with one fault injected, drives it to completion (planner runs, processors,
 * retries), then checks the exactly-once sink, the at-least-once audit log and the ledger invariants.
 *
 * Every scenario runs two streams over the same topics: `<id>-eo` (running-totals, exactly-once into
 * a sink table) and `<id>-al` (audit-log, at-least-once). Each produced record has a unique key
 * (`r-<n>`, amount n), so the sink shows every duplicate and every loss record by record.
 * Faults are drawn from a seeded PRNG; runs are bounded by a wall-clock budget per scenario.
 * What a scenario creates (`chaos-<what>-<time>-<hex>`) is deleted when it ends, passed or failed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, InternalServerError, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import {
  killKafkaNode,
  restartKafka,
  startKafka,
  startKafkaCluster,
  stopKafka,
  stopKafkaCluster,
  type KafkaCluster,
  type KafkaInstance,
} from '../../infra/local/kafka';
import { freePort } from '../../infra/local/process';
import { CACHE_DIR } from '../../infra/local/stack';
import { checkInvariants, type Violation } from './invariants';
import { createKafka } from '../../lib/kafka/client';
import { readLedgerSnapshot } from './snapshot.dynamodb';
import { mapWithConcurrency } from '../../lib/concurrency';
import { parseStreamConfig, type StreamConfig } from '../../lib/config/schema';
import { StoreError, ValidationError } from '../../lib/errors';
import { createAuditLog } from '../../lib/handlers/audit-log';
import { runningTotals } from '../../lib/handlers/running-totals';
import { createMetadataCache, type MetadataCache } from '../../lib/kafka/metadata-cache';
import { createDynamoStoreClock } from '../../lib/ledger/clock.dynamodb';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { exitCleanups } from '../../lib/local/exit-cleanup';
import { noResources, removeResources, type CreatedResources, type Removal } from '../../lib/local/tool-cleanup';
import { toolResourceName } from '../../lib/local/tool-names';
import { emptyReport, planStream, type StreamPlanReport } from '../../lib/planner/run';
import type { HandlerRecord, RecordsHandler } from '../../lib/processor/handler-api';
import { processRange, PROCESSOR_STEPS } from '../../lib/processor/process-range';
import type { Ledger, PartitionState, StoreClock } from '../../lib/ports/ledger';
import type { RangeReader } from '../../lib/ports/range-reader';
import type { RangePayload } from '../../lib/ranges';
import { createScenarioTable, createScenarioTopics } from './scenario-resources';
import { takeReader } from './readers';
import { runLargeBatch } from './large-batch';
import { runLoad } from './load';
import { runTopicRecreated } from './topic-recreated';
import { scanItems, scanTotals } from '../support/scan';
import { prng } from './prng';
import { killable } from './killable';
import { startLoops, type LoopDriver } from './loops';

export const SCENARIOS = [
  'baseline',
  'processor-kill',
  'duplicate-invoke',
  'planners-2',
  'planners-3',
  'planner-kill',
  'partitions-added',
  'retention-continue',
  'retention-fail',
  'dynamodb-faults',
  'deadline',
  'poison-record',
  'broker-restart',
  'topic-deleted',
  'forged-payload',
  'skewed-clock',
  'leader-killed',
  'topic-recreated',
  'large-batch',
  'load',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export type ScenarioResult = {
  scenario: ScenarioName;
  seed: number;
  injected: string;
  produced: number;
  /** Records the exactly-once sink must hold (produced minus recorded data loss, dead letters, stopped partitions). */
  expected: number;
  /** Distinct records in the sink. */
  applied: number;
  /** Extra applications in the exactly-once sink (must be 0). */
  duplicates: number;
  /** Records neither applied, nor dead-lettered, nor in a recorded data-loss span, nor held by a stopped partition (must be 0). */
  losses: number;
  /** Records the audit log (at-least-once) is missing (must be 0). */
  auditLosses: number;
  /** Redeliveries the audit log saw (allowed: at least once). */
  auditDuplicates: number;
  /** Records in recorded data-loss spans (expected only in retention scenarios). */
  dataLoss: number;
  deadLetters: number;
  /** Records behind a partition stopped on purpose (failOnDataLoss=true). */
  stopped: number;
  /** Records of a deleted topic never read before its partitions were retired (topic-deleted only). */
  retired: number;
  violations: Violation[];
  /** Scenario-specific expectations that failed. */
  problems: string[];
  rounds: number;
  invocations: number;
  processorErrors: number;
  /** Processor outcomes by status. */
  statuses: Record<string, number>;
  wallMs: number;
  ok: boolean;
  /** What was deleted when the scenario ended (a private broker's topics go with the broker instead). */
  removed?: { topics: string[]; tables: string[] };
};

export type ChaosEnv = {
  kafka: Kafka;
  /** The client range readers use, when the streams reach the broker otherwise than `kafka` (broker-restart: SASL_SSL). */
  readerKafka?: Kafka;
  admin: Admin;
  producer: Producer;
  /** A clean client (sink checks, audit log, tables). */
  ddb: DynamoDBClient;
  ledgerTable: string;
  metadata: MetadataCache;
  readers: RangeReader[];
  allReaders: RangeReader[];
  /** Topics and tables made through this environment, to delete: its ledger table, or a running scenario's own. */
  created: CreatedResources;
};

/** An environment on `kafka` with a fresh ledger table, recorded in `created`. */
export async function openChaosEnv(kafka: Kafka, ddb: DynamoDBClient, created = noResources()): Promise<ChaosEnv> {
  const admin = kafka.admin();
  const producer = kafka.producer();
  const ledgerTable = toolResourceName('chaos', 'ledger');
  created.tables.push(ledgerTable);
  await Promise.all([admin.connect(), producer.connect(), ensureLedgerTable(ddb, ledgerTable)]);
  return { kafka, admin, producer, ddb, ledgerTable, metadata: createMetadataCache(), readers: [], allReaders: [], created };
}

/** Deletes what the environment recorded (its ledger table), then closes its clients. */
export async function closeChaosEnv(env: ChaosEnv): Promise<Removal> {
  const removal = await removeResources(env.created, { admin: env.admin, dynamo: env.ddb });
  await disconnect(env);
  return removal;
}

async function disconnect(env: ChaosEnv): Promise<void> {
  await Promise.allSettled([
    env.metadata.closeAll(),
    ...env.allReaders.map((r) => r.close()),
    env.admin.disconnect(),
    env.producer.disconnect(),
  ]);
}

/** A DynamoDB client whose requests fail, before they are sent, with the given probability. */
export function faultyDynamo(endpoint: string, rng: () => number, fraction: number, counter: { injected: number }): DynamoDBClient {
  // Two SDK attempts: most injected failures are absorbed by the SDK's retry, a few reach our own
  // retries (failed range -> re-dispatch, failed planner run -> next run).
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 2,
  });
  client.middlewareStack.add(
    (next) => async (args) => {
      if (rng() < fraction) {
        counter.injected++;
        const throttle = rng() < 0.5;
        throw throttle
          ? new ProvisionedThroughputExceededException({ message: 'chaos: throttled', $metadata: { httpStatusCode: 400 } })
          : Object.assign(new InternalServerError({ message: 'chaos: internal server error', $metadata: { httpStatusCode: 500 } }), {
              $fault: 'server' as const,
            });
      }
      return next(args);
    },
    // Inside the SDK's retry middleware (finalizeRequest), so its own retries see these failures.
    { step: 'deserialize', name: 'chaosFaults', priority: 'low' },
  );
  return client;
}

type Produced = { topic: string; partition: number; offset: number; id: number; poison: boolean };

/** One planner run as leader-killed records it. */
function failoverRun(rep: StreamPlanReport): FailoverLog['runs'][number] {
  const unavailable = rep.partitions.filter((p) => p.action === 'no-offsets');
  return {
    atMs: Date.now() - rep.durationMs,
    durationMs: rep.durationMs,
    status: rep.status,
    planned: rep.partitions.filter((p) => p.planned.length > 0).map((p) => p.partition),
    unavailable: unavailable.map((p) => p.partition),
    codes: unavailable.map((p) => p.unavailable ?? 'unknown'),
  };
}

type ScenarioSpec = {
  partitions: number;
  perPartition: number;
  config: Record<string, unknown>;
  planners: number;
  budgetMs: number;
};

const BASE: ScenarioSpec = {
  partitions: 3,
  perPartition: 80,
  // Small ranges: several planner rounds per partition.
  config: { maxOffsetsPerTrigger: 90, maxAttempts: 12, processor: { timeoutMs: 1000, leaseMs: 1500 }, triggerIntervalMs: 1000 },
  planners: 1,
  budgetMs: 40_000,
};

/** Restarts the scenario's private broker (broker-restart only), which the streams reach over SASL_SSL with SCRAM. */
type BrokerControl = { brokers: string; kafka: Record<string, unknown>; restart(): Promise<void> };

/** The scenario's private 3-broker cluster (leader-killed only): kills the leader of a partition. */
type ClusterControl = { brokers: string; startMs: number; killLeaderOf(topic: string, partition: number): Promise<number> };

/**
 * Runs one scenario end to end and checks it; never throws for a failed check (see `ok`, `problems`).
 * When it ends, passed, failed or interrupted (Ctrl-C in a soak), the topics and tables it created are
 * deleted; a deletion that fails is a problem of the scenario.
 */
export async function runScenario(
  env: ChaosEnv,
  scenario: ScenarioName,
  seed: number,
  opts: { budgetMs?: number } = {},
): Promise<ScenarioResult> {
  // A producer of its own: kafkajs asks again for every topic a producer ever wrote to, so a shared
  // one would fail in every later scenario once this one's topics are deleted.
  const producer = env.kafka.producer();
  await producer.connect();
  const own: ChaosEnv = { ...env, producer, created: noResources() };
  let removal: Removal | undefined;
  const cleanUp = async (): Promise<void> => {
    await producer.disconnect().catch(() => undefined);
    removal = await removeResources(own.created, { admin: env.admin, dynamo: env.ddb });
  };
  const res = await exitCleanups.around(cleanUp, () => runScenarioOn(own, scenario, seed, opts));
  const errors = removal?.errors ?? ['no clean-up ran'];
  return {
    ...res,
    removed: { topics: removal?.topics ?? [], tables: removal?.tables ?? [] },
    problems: [...res.problems, ...errors.map((e) => `clean-up: ${e}`)],
    ok: res.ok && errors.length === 0,
  };
}

/**
 * The scenario's own runner. `broker-restart` and `leader-killed` run against a private broker or
 * cluster of their own (started there, stopped in `finally`), so the shared test broker other test
 * files use is never restarted.
 */
function runScenarioOn(env: ChaosEnv, scenario: ScenarioName, seed: number, opts: { budgetMs?: number }): Promise<ScenarioResult> {
  if (scenario === 'leader-killed') return runOnCluster(env, scenario, seed, opts);
  if (scenario === 'broker-restart') return runOnPrivateBroker(env, scenario, seed, opts);
  if (scenario === 'topic-recreated') return runTopicRecreated(env, seed, opts);
  if (scenario === 'large-batch') return runLargeBatch(env, seed, opts);
  if (scenario === 'load') return runLoad(env, seed, opts);
  return runIn(env, scenario, seed, opts);
}

/**
 * `broker-restart` runs against a private broker, which the streams reach over SASL_SSL with SCRAM;
 * its tables are on the shared emulator and recorded in `env.created`.
 */
async function runOnPrivateBroker(
  env: ChaosEnv,
  scenario: ScenarioName,
  seed: number,
  opts: { budgetMs?: number },
): Promise<ScenarioResult> {
  const t0 = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'chaos-broker-'));
  let broker: KafkaInstance | undefined;
  let priv: ChaosEnv | undefined;
  try {
    // The watchdog kills the JVM if this test process dies before `finally` runs.
    // Secured: the streams read over SASL_SSL with SCRAM-SHA-512 (set-up and checks use PLAINTEXT), so
    // reconnecting after the restart re-authenticates every connection.
    const scram = { name: 'chaos', password: randomBytes(12).toString('base64url') };
    broker = await startKafka({
      dir: join(dir, 'kafka'),
      cacheDir: CACHE_DIR,
      ownerPid: process.pid,
      port: String(await freePort()),
      startTimeoutMs: 60_000,
      secured: { scramUsers: [scram] },
    });
    process.env.CHAOS_SCRAM_PASSWORD = scram.password;
    const kafka = new Kafka({ clientId: 'chaos-private', brokers: [broker.brokers], logLevel: logLevel.NOTHING });
    priv = await openChaosEnv(kafka, env.ddb, env.created);
    const secured = broker.secured!;
    const streamKafka = {
      ssl: { ca: readFileSync(secured.tls.caCert, 'utf8') },
      sasl: { mechanism: 'scram-sha-512', username: scram.name, password: { env: 'CHAOS_SCRAM_PASSWORD' } },
    };
    priv.readerKafka = await createKafka(
      parseStreamConfig({ id: 'chaos', kafka: { brokers: [secured.saslSsl], ...streamKafka }, topics: ['any'] }, 'chaos').kafka,
    );
    const control: BrokerControl = {
      brokers: secured.saslSsl,
      kafka: streamKafka,
      restart: async () => {
        broker = await restartKafka(broker as KafkaInstance);
      },
    };
    const res = await runIn(priv, scenario, seed, { ...opts, broker: control, startedAt: t0 });
    return res;
  } finally {
    if (priv) await disconnect(priv);
    if (broker) await stopKafka(broker);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `leader-killed` runs against a private 3-broker cluster (replication factor 3, min.insync.replicas
 * 2), started here and stopped in `finally`; its budget starts once the cluster is up.
 */
async function runOnCluster(env: ChaosEnv, scenario: ScenarioName, seed: number, opts: { budgetMs?: number }): Promise<ScenarioResult> {
  const dir = mkdtempSync(join(tmpdir(), 'chaos-cluster-'));
  let cluster: KafkaCluster | undefined;
  let priv: ChaosEnv | undefined;
  try {
    const t0 = Date.now();
    // Watchdogs kill the JVMs if this test process dies before `finally` runs.
    cluster = await startKafkaCluster({ dir, cacheDir: CACHE_DIR, ownerPid: process.pid, brokers: 3 });
    const c = cluster;
    const kafka = new Kafka({ clientId: 'chaos-cluster', brokers: c.brokers.split(','), logLevel: logLevel.NOTHING });
    priv = await openChaosEnv(kafka, env.ddb, env.created);
    const admin = priv.admin;
    const control: ClusterControl = {
      brokers: c.brokers,
      startMs: Date.now() - t0,
      async killLeaderOf(topic, partition) {
        const md = await admin.fetchTopicMetadata({ topics: [topic] });
        const leader = md.topics[0]?.partitions.find((p) => p.partitionId === partition)?.leader;
        if (leader === undefined || leader < 0) throw new Error(`chaos harness: ${topic}/${partition} has no leader to kill`);
        await killKafkaNode(c, leader);
        return leader;
      },
    };
    return await runIn(priv, scenario, seed, { ...opts, cluster: control });
  } finally {
    if (priv) await disconnect(priv);
    if (cluster) await stopKafkaCluster(cluster, 5_000);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** leader-killed: what the planner runs after the kill saw, for the report and the checks. */
type FailoverLog = {
  killedAtMs?: number;
  victim?: number;
  /** Partitions the killed broker led. */
  dead: number[];
  /** Planner runs: when each started (`atMs`) and how long it took. */
  runs: Array<{ atMs: number; durationMs: number; status: string; planned: number[]; unavailable: number[]; codes: string[] }>;
};

/** The leader-killed figures and the problems they show (none when only the dead leader's partitions stalled). */
function failoverFigures(log: FailoverLog, partitions: number, startMs: number): { injected: string; problems: string[] } {
  const killedAt = log.killedAtMs;
  if (killedAt === undefined) return { injected: 'no leader was killed', problems: ['no leader was killed'] };
  const after = log.runs.filter((r) => r.atMs >= killedAt);
  const stalled = after.filter((r) => r.unavailable.length > 0);
  const failed = after.filter((r) => r.status === 'failed');
  const live = (r: FailoverLog['runs'][number]) => r.planned.filter((p) => !log.dead.includes(p));
  const back = after.find((r) => r.planned.some((p) => log.dead.includes(p)));
  const first = stalled[0];
  const problems: string[] = [];
  if (failed.length)
    problems.push(`${failed.length} planner runs failed after the kill (${Math.max(...failed.map((r) => r.durationMs))} ms at most)`);
  if (!first) problems.push("no planner run saw the dead leader's partitions unavailable (re-election before the next run?)");
  else if (!stalled.some((r) => live(r).length > 0))
    problems.push("no run planned the live leaders' partitions while the dead leader's were unavailable");
  if (stalled.some((r) => r.unavailable.some((p) => !log.dead.includes(p))))
    problems.push('a partition of a live leader was reported unavailable');
  if (!back) problems.push("the dead leader's partitions were never planned again");
  const codes = [...new Set(stalled.flatMap((r) => r.codes))].join(', ');
  const injected =
    `private 3-broker cluster (replication factor 3, min.insync.replicas 2, started in ${startMs} ms); after round 1 the leader (broker ${log.victim}) ` +
    `of ${log.dead.length} of ${partitions} partitions was killed (SIGKILL): ${stalled.length} planner runs (both streams) during the stall took ` +
    `${stalled.length ? Math.max(...stalled.map((r) => r.durationMs)) : 0} ms at most, planned ${stalled.reduce((n, r) => n + live(r).length, 0)} ranges of ` +
    `the live leaders' partitions and reported the dead leader's unavailable (${codes || 'none'}); those were planned again ` +
    `${back ? back.atMs + back.durationMs - killedAt : '-'} ms after the kill (re-election); ${failed.length} planner runs failed`;
  return { injected, problems };
}

async function runIn(
  env: ChaosEnv,
  scenario: ScenarioName,
  seed: number,
  opts: { budgetMs?: number; broker?: BrokerControl; cluster?: ClusterControl; startedAt?: number },
): Promise<ScenarioResult> {
  const t0 = opts.startedAt ?? Date.now();
  const rng = prng(seed);
  const spec: ScenarioSpec = { ...BASE, config: { ...BASE.config } };
  const id = toolResourceName('chaos', scenario);
  const topic1 = `${id}-t1`;
  const topics = [topic1];
  const problems: string[] = [];
  let injected = 'nothing';
  let nextId = 1;
  const produced: Produced[] = [];
  const faults = { injected: 0 };
  const kills = { processor: 0 };
  const killedAt: string[] = [];
  let plannerFailures = 0;

  // Scenario knobs.
  let planners = 1;
  let duplicateInvoke = false;
  let killProb = 0;
  let deadlineMs: (() => number) | undefined;
  let handlerDelayMs = 0;
  let faultFraction = 0;
  let poisonEvery = 0;
  let pattern = false;
  /** broker-restart: the restart (stop + start on the same dir and port), started from a processor. */
  let restart: Promise<void> | undefined;
  let restartMs = 0;
  let restartAfterChunks = 0;
  let chunksHandled = 0;
  let inFlight = 0;
  /** Invocations running when the restart began, and those of them that still finished their range. */
  const across = { running: 0, done: 0 };
  /** topic-deleted: the matching topic deleted mid-run. */
  let deletedTopic: string | undefined;
  /** forged-payload: forged payloads sent each round before the genuine invocations. */
  let forge: ForgeTally | undefined;
  /** skewed-clock: processors and planners on clocks far from the store's, and deliveries per record. */
  let skew: SkewedClocks | undefined;
  const failover: FailoverLog = { dead: [], runs: [] };
  switch (scenario) {
    case 'baseline':
      break;
    case 'processor-kill':
      killProb = 0.5;
      break;
    case 'duplicate-invoke':
      duplicateInvoke = true;
      break;
    case 'planners-2':
      planners = 2;
      break;
    case 'planners-3':
      planners = 3;
      break;
    case 'planner-kill':
      // Planner loops only (test/chaos/loops.ts), no one-shot runs.
      planners = 0;
      break;
    case 'partitions-added':
      pattern = true;
      spec.partitions = 2;
      break;
    case 'retention-continue':
    case 'retention-fail':
      spec.config = { ...spec.config, failOnDataLoss: scenario === 'retention-fail', maxOffsetsPerTrigger: undefined };
      break;
    case 'dynamodb-faults':
      faultFraction = 0.2;
      break;
    case 'deadline':
      spec.config = { ...spec.config, maxOffsetsPerTrigger: undefined, maxAttempts: 30 };
      handlerDelayMs = 25;
      deadlineMs = () => 1000 + 300 + Math.floor(rng() * 600);
      break;
    case 'poison-record':
      poisonEvery = 37;
      spec.config = { ...spec.config, maxAttempts: 3 };
      break;
    case 'broker-restart':
      // Slow chunks, so processors are mid-range while the broker is down.
      handlerDelayMs = 20;
      restartAfterChunks = 3 + Math.floor(rng() * 4);
      break;
    case 'topic-deleted':
      pattern = true;
      spec.partitions = 2;
      break;
    case 'forged-payload':
      // Before payloads were checked by the lease write, three forgeries exhausted a range.
      spec.config = { ...spec.config, maxAttempts: 3 };
      forge = { sent: 0, refused: 0, otherOutcomes: [], roundsChanged: 0, rounds: 0 };
      break;
    case 'skewed-clock':
      handlerDelayMs = 10;
      skew = skewedClocks(process.env.DYNAMODB_ENDPOINT as string, env.ledgerTable, 1500);
      break;
    case 'leader-killed':
      // Six partitions spread their leaders over the three brokers; small ranges leave lag behind the kill.
      spec.partitions = 6;
      spec.perPartition = 40;
      spec.config = { ...spec.config, maxOffsetsPerTrigger: 60 };
      break;
  }

  const faulty = faultFraction > 0 ? faultyDynamo(process.env.DYNAMODB_ENDPOINT as string, rng, faultFraction, faults) : undefined;
  const ledger = createDynamoLedger({ client: faulty ?? env.ddb, tableName: env.ledgerTable });
  const cleanLedger = createDynamoLedger({ client: env.ddb, tableName: env.ledgerTable });
  const sinkTable = await createScenarioTable(env, 'sink');
  const auditTable = await createScenarioTable(env, 'audit');
  const audit = createAuditLog({ tableName: auditTable, client: env.ddb });

  await createScenarioTopics(env, [{ topic: topic1, numPartitions: spec.partitions }]);
  const mk = (suffix: 'eo' | 'al'): StreamConfig =>
    parseStreamConfig(
      {
        id: `${id}-${suffix}`,
        kafka: {
          brokers: (opts.broker?.brokers ?? opts.cluster?.brokers ?? (process.env.KAFKA_BROKERS as string)).split(','),
          ...opts.broker?.kafka,
        },
        ...(pattern ? { topicPattern: `${id}-t[0-9]+` } : { topics: [topic1] }),
        handler:
          suffix === 'eo'
            ? { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable }
            : { module: 'audit-log', mode: 'at-least-once' },
        ...Object.fromEntries(Object.entries(spec.config).filter(([, v]) => v !== undefined)),
      },
      `chaos ${scenario}`,
    );
  const streams = [mk('eo'), mk('al')];

  let producer = env.producer;
  /**
   * topic-deleted: the topic to be deleted gets a producer of its own, disconnected once the topic is
   * gone. kafkajs never forgets a topic it has produced to: every later metadata refresh of that
   * producer would ask for the deleted topic and fail ("This server does not host this
   * topic-partition"), so the shared producer would break every scenario after this one.
   */
  let doomedProducer: Producer | undefined;
  const produce = async (topic: string, partition: number, n: number): Promise<void> => {
    const batch = Array.from({ length: n }, () => {
      const nid = nextId++;
      return { id: nid, poison: poisonEvery > 0 && nid % poisonEvery === 0 };
    });
    const sender = topic === deletedTopic && doomedProducer ? doomedProducer : producer;
    const [meta] = await sender.send({
      topic,
      messages: batch.map((b) => ({
        key: `r-${b.id}`,
        value: b.poison ? `not json ${b.id}` : JSON.stringify({ amount: b.id }),
        partition,
      })),
    });
    const base = Number(meta?.baseOffset);
    // kafkajs drops messages for a partition its metadata does not know yet, without an error.
    if (meta?.partition !== partition || !Number.isSafeInteger(base))
      throw new Error(`chaos harness: produce to ${topic}/${partition} was not acknowledged`);
    batch.forEach((b, i) => produced.push({ topic, partition, offset: base + i, ...b }));
  };
  if (scenario === 'topic-deleted') {
    // The second matching topic exists from the start; it is deleted mid-run.
    deletedTopic = `${id}-t2`;
    await createScenarioTopics(env, [{ topic: deletedTopic, numPartitions: 2 }]);
    doomedProducer = env.kafka.producer();
    await doomedProducer.connect();
    topics.push(deletedTopic);
  }
  for (const t of topics) for (let p = 0; p < spec.partitions; p++) await produce(t, p, spec.perPartition);

  // Handlers: the real ones, wrapped for delay and the "killed after the handler, before the commit" point.
  const handlerFor = (stream: StreamConfig, dead: { v: boolean }, killAfterHandler: () => boolean): RecordsHandler => {
    const inner: RecordsHandler = stream.handler?.module === 'running-totals' ? runningTotals : audit;
    const wrap = async (records: HandlerRecord[], ctx: Parameters<RecordsHandler['handle']>[1]) => {
      if (dead.v) throw new StoreError('chaos: the process was killed');
      if (handlerDelayMs) await new Promise((r) => setTimeout(r, handlerDelayMs));
      if (skew)
        for (const r of records)
          skew.handed.set(`${stream.id}/${r.idempotencyKey}`, (skew.handed.get(`${stream.id}/${r.idempotencyKey}`) ?? 0) + 1);
      const out = await (inner.handle as (r: HandlerRecord[], c: typeof ctx) => unknown)(records, ctx);
      if (killAfterHandler()) {
        dead.v = true;
        throw new StoreError('chaos: processor killed after the handler, before the commit');
      }
      return out;
    };
    const fold = inner.mode === 'dynamodb-exactly-once' ? inner.fold : undefined;
    if (!fold) return { ...inner, handle: wrap } as RecordsHandler;
    // Folded batches call map per record: the same kill and counting hooks, record by record.
    const map: typeof fold.map = (r, ctx) => {
      if (dead.v) throw new StoreError('chaos: the process was killed');
      if (skew) skew.handed.set(`${stream.id}/${r.idempotencyKey}`, (skew.handed.get(`${stream.id}/${r.idempotencyKey}`) ?? 0) + 1);
      return fold.map(r, ctx);
    };
    return { ...inner, handle: wrap, fold: { ...fold, map } } as RecordsHandler;
  };

  let invocations = 0;
  let processorErrors = 0;
  const statuses: Record<string, number> = {};

  const invoke = async (stream: StreamConfig, range: RangePayload, clocks?: ProcessorClocks): Promise<void> => {
    invocations++;
    const dead = { v: false };
    const kill = killProb > 0 && kills.processor < 12 && rng() < killProb;
    const points = [...PROCESSOR_STEPS, 'handler-returned'] as const;
    const killAt = kill ? points[Math.floor(rng() * points.length)] : undefined;
    const nth = 1 + Math.floor(rng() * 2);
    let seen = 0;
    const hit = (step: string): boolean => {
      if (killAt !== step || dead.v) return false;
      if (++seen < nth) return false;
      kills.processor++;
      killedAt.push(step);
      return true;
    };
    const reader = takeReader(env);
    const start = clocks?.clock() ?? Date.now();
    const before = !restart;
    inFlight++;
    try {
      const res = await processRange(
        {
          ledger: kill ? killable(ledger, dead) : ledger,
          readerFor: async () => reader,
          handlerFor: (s) => handlerFor(s, dead, () => hit('handler-returned')),
          ...(clocks && { ledger: clocks.ledger, clock: clocks.clock, storeClock: clocks.storeClock }),
          maxChunkRecords: 25,
          retryBaseMs: 5,
          // Half the invocations write folded batches in marked groups of 1-3 (kill points between them).
          fold:
            rng() < 0.5 ? { atomicMaxWrites: 0, writeGroupSize: 1 + Math.floor(rng() * 3), maxRecords: 40 + Math.floor(rng() * 80) } : {},
          afterStep: async (step) => {
            if (step === 'leased' && clocks?.whileLeased) await clocks.whileLeased();
            if (opts.broker && step === 'handled' && !restart && ++chunksHandled >= restartAfterChunks) {
              // Not awaited: this processor and the others keep reading while the broker goes down.
              const r0 = Date.now();
              across.running = inFlight;
              restart = opts.broker.restart().then(() => {
                restartMs = Date.now() - r0;
              });
              restart.catch(() => undefined);
            }
            if (hit(step)) {
              dead.v = true;
              throw new Error(`chaos: processor killed at ${step}`);
            }
          },
        },
        { stream, range, deadlineAtMs: start + (deadlineMs ? deadlineMs() : 60_000) },
      );
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (before && restart && res.status === 'done') across.done++;
    } catch {
      processorErrors++;
    } finally {
      inFlight--;
      env.readers.push(reader);
    }
  };

  const plan = async (stream: StreamConfig, queue: Array<{ stream: StreamConfig; range: RangePayload }>): Promise<void> => {
    const planStartedAt = Date.now();
    await planStream(
      {
        ledger,
        metadataFor: (s) => env.metadata.forStream(s),
        dispatcher: {
          async dispatch(ranges) {
            for (const range of ranges) {
              queue.push({ stream, range });
              if (duplicateInvoke) queue.push({ stream, range });
            }
            return ranges.map(() => ({ ok: true as const }));
          },
        },
        plannerLeaseMs: 1500,
        ownerToken: randomUUID(),
      },
      stream,
      { dryRun: false, nowMs: skew ? await skew.ahead.storeClock() : Date.now() },
    ).then(
      (rep) => {
        if (rep.status === 'failed') plannerFailures++;
        if (scenario === 'leader-killed') failover.runs.push(failoverRun(rep));
      },
      () => {
        plannerFailures++;
        if (scenario === 'leader-killed') {
          const failedRun = { ...failoverRun(emptyReport(stream.id, false)), status: 'failed' };
          failover.runs.push({ ...failedRun, atMs: planStartedAt, durationMs: Date.now() - planStartedAt });
        }
      },
    );
  };

  /** Every partition caught up with the log end, or stopped on purpose (failed / range parked). */
  const complete = async (): Promise<boolean> => {
    const ends = new Map<string, number>();
    for (const t of topics) for (const o of await env.admin.fetchTopicOffsets(t)) ends.set(`${t}/${o.partition}`, Number(o.high));
    for (const s of streams) {
      const parts = await cleanLedger.readPartitions(s.id);
      if (parts.length < ends.size) return false;
      const open = await cleanLedger.readOpenRanges(s.id);
      for (const p of parts) {
        if (p.status !== 'active') continue;
        if (!ends.has(`${p.topic}/${p.partition}`)) return false;
        const parked = open.some(
          (r) => r.topic === p.topic && r.partition === p.partition && r.status === 'parked' && r.from === p.committed,
        );
        if (!parked && p.committed < (ends.get(`${p.topic}/${p.partition}`) ?? 0)) return false;
      }
    }
    return true;
  };

  const budget = opts.budgetMs ?? spec.budgetMs;
  let rounds = 0;
  let finished = false;
  // planners-2/3, planner-kill: planner loops on a schedule beside the rounds, their ranges processed as dispatched.
  const loopInput = { streams, ledger, cleanLedger, rng, metadata: env.metadata };
  const loops: LoopDriver | undefined = startLoops(scenario, loopInput, (s, r) =>
    invoke(s, r, { ledger, ...(loops as LoopDriver).clocks }),
  );
  /** Mid-run events happen once, after the first round, and before the run may count as complete. */
  const hasEvent =
    scenario === 'partitions-added' ||
    scenario === 'retention-continue' ||
    scenario === 'retention-fail' ||
    scenario === 'broker-restart' ||
    scenario === 'topic-deleted' ||
    scenario === 'leader-killed' ||
    loops !== undefined;
  let eventDone = !hasEvent;
  while (Date.now() - t0 < budget) {
    // Scenario events between rounds.
    if (scenario === 'partitions-added' && !eventDone && rounds >= 1) {
      eventDone = true;
      injected = 'partition added to the topic (2 -> 3) and a second matching topic (2 partitions) created mid-run';
      await env.admin.createPartitions({ topicPartitions: [{ topic: topic1, count: 3 }] });
      const topic2 = `${id}-t2`;
      await createScenarioTopics(env, [{ topic: topic2, numPartitions: 2 }]);
      topics.push(topic2);
      for (;;) {
        const o = await env.admin.fetchTopicOffsets(topic1);
        if (o.length === 3) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      // A producer connected after the change knows the new partition (kafkajs caches metadata).
      producer = env.kafka.producer();
      await producer.connect();
      await produce(topic1, 2, 60);
      await produce(topic1, 0, 20);
      await produce(topic2, 0, 40);
      await produce(topic2, 1, 40);
    }
    if ((scenario === 'retention-continue' || scenario === 'retention-fail') && !eventDone && rounds >= 1) {
      eventDone = true;
      // Planner path: the cursor is behind the log start when the planner runs.
      await produce(topic1, 1, 60);
      await env.admin.fetchTopicMetadata({ topics: [topic1] }); // kafkajs's deleteTopicRecords needs it cached
      const p1 = produced.filter((r) => r.partition === 1);
      const cut = (p1.at(-1)?.offset ?? 0) - 29;
      await env.admin.deleteTopicRecords({ topic: topic1, partitions: [{ partition: 1, offset: String(cut) }] });
    }

    if (scenario === 'leader-killed' && opts.cluster && !eventDone && rounds >= 1) {
      // Between rounds: no processor is reading, so the next planner runs meet the dead leader first.
      eventDone = true;
      const before = await env.admin.fetchTopicMetadata({ topics: [topic1] });
      failover.victim = await opts.cluster.killLeaderOf(topic1, 0);
      failover.killedAtMs = Date.now();
      failover.dead = (before.topics[0]?.partitions ?? [])
        .filter((p) => p.leader === failover.victim)
        .map((p) => p.partitionId)
        .sort();
    }
    const queue: Array<{ stream: StreamConfig; range: RangePayload }> = [];
    await Promise.all(streams.flatMap((s) => Array.from({ length: planners }, () => plan(s, queue))));
    if (scenario === 'topic-deleted' && deletedTopic && !eventDone && rounds >= 1) {
      // Ranges of the topic are planned (in flight) when it goes; the other topic carries on.
      eventDone = true;
      await doomedProducer?.disconnect();
      doomedProducer = undefined;
      await env.admin.deleteTopics({ topics: [deletedTopic], timeout: 10_000 });
      topics.splice(topics.indexOf(deletedTopic), 1);
      for (;;) {
        const names = await env.admin.listTopics();
        if (!names.includes(deletedTopic)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await produce(topic1, 0, 30);
      await produce(topic1, 1, 30);
      const planned = queue.filter((q) => q.range.topic === deletedTopic).length;
      injected = `a matching topic (2 partitions) deleted after planning round ${rounds + 1} (${planned} of its ranges planned, not yet read); the other topic got 60 more records`;
    }
    if ((scenario === 'retention-continue' || scenario === 'retention-fail') && rounds === 0) {
      // Processor path: planned ranges whose first offsets retention deletes before they are read.
      await env.admin.fetchTopicMetadata({ topics: [topic1] });
      await env.admin.deleteTopicRecords({ topic: topic1, partitions: [{ partition: 0, offset: '40' }] });
      injected = `retention deleted p0 [0, 40) after planning and the last 30 unread of 60 new p1 records before planning (failOnDataLoss=${scenario === 'retention-fail'})`;
    }
    // Processors run in any order, several at once (Lambda async invokes).
    if (forge) await sendForgedPayloads(env, ledger, queue, forge);
    const order = queue
      .map((q) => ({ q, k: rng() }))
      .sort((a, b) => a.k - b.k)
      .map((x) => x.q);
    const s = skew;
    await mapWithConcurrency(order, 8, (q) =>
      s
        ? // Each range: a processor running behind takes the lease; one running ahead is invoked while it is held.
          invoke(q.stream, q.range, { ...s.behind, whileLeased: () => invoke(q.stream, q.range, s.ahead) })
        : invoke(q.stream, q.range),
    );
    if (restart) {
      // The broker is back before the next planner round (the processors above rode through or failed).
      await restart;
      eventDone = true;
    }
    if (loops) eventDone = loops.satisfied();
    rounds++;
    // leader-killed: the log ends cannot be read from a dead leader until re-election; not complete yet.
    const done = scenario === 'leader-killed' ? complete().catch(() => false) : complete();
    if (eventDone && (await done)) {
      finished = true;
      break;
    }
    await new Promise((r) => setTimeout(r, queue.length ? 50 : 300));
  }
  if (!finished) problems.push(`did not complete within ${budget} ms (${rounds} rounds)`);
  const loopCheck = await loops?.stop();
  problems.push(...(loopCheck?.problems ?? []));

  switch (scenario) {
    case 'processor-kill':
      injected = `${kills.processor} processor kills at seeded points (${[...new Set(killedAt)].sort().join(', ')}); ledger writes stop at the kill`;
      break;
    case 'duplicate-invoke':
      injected = `every dispatched range invoked twice at once (${statuses['held-elsewhere'] ?? 0} held elsewhere, ${statuses['already-done'] ?? 0} already done)`;
      break;
    case 'planners-2':
    case 'planners-3':
      injected = `${planners} one-shot planner runs at once every round, beside ${loopCheck?.injected}`;
      break;
    case 'planner-kill':
      injected = loopCheck?.injected ?? '';
      break;
    case 'dynamodb-faults':
      injected = `${faults.injected} ledger requests failed before sending (20% of requests, throttling or InternalServerError, SDK maxAttempts 2); ${processorErrors} processor invocations and ${plannerFailures} planner runs failed after the SDK's retry and were retried by the system`;
      break;
    case 'deadline':
      injected = `deadline 1.3-1.9 s after start, 25 ms per chunk: ${statuses.partial ?? 0} invocations stopped part-done at the deadline`;
      if (!statuses.partial) problems.push('no invocation reached its deadline');
      break;
    case 'poison-record':
      injected = `every ${poisonEvery}th record is not JSON (running-totals rejects it)`;
      break;
    case 'forged-payload': {
      const f = forge as ForgeTally;
      injected = `${f.sent} forged payloads (a planned from with a wrong until, 3 per dispatched range, maxAttempts 3) sent before the genuine invocations: ${f.refused} refused with ValidationError; a full ledger scan before and after them equal in ${f.rounds - f.roundsChanged} of ${f.rounds} rounds`;
      if (f.refused !== f.sent)
        problems.push(`${f.sent - f.refused} forged payloads were not refused: ${f.otherOutcomes.slice(0, 3).join('; ')}`);
      if (f.roundsChanged) problems.push(`forged payloads changed the ledger in ${f.roundsChanged} rounds`);
      if (!f.sent) problems.push('no payload was forged');
      break;
    }
    case 'skewed-clock': {
      const k = skew as SkewedClocks;
      const twice = [...k.handed.values()].filter((n) => n > 1).length;
      injected = `every range taken by a processor whose clock runs ${k.behindMs / 1000} s behind, and invoked again while leased on one ${k.aheadMs / 1000} s ahead (lease 1.5 s), planners ${k.aheadMs / 1000} s ahead; leases judged on DynamoDB's clock (Date headers): ${statuses['held-elsewhere'] ?? 0} of ${invocations / 2} contenders held off, ${twice} records handed to a handler twice`;
      if (twice) problems.push(`${twice} records were handed to a handler twice (two lease holders)`);
      if (!statuses['held-elsewhere']) problems.push('no contender met a held lease');
      k.close();
      break;
    }
    case 'leader-killed': {
      const figures = failoverFigures(failover, spec.partitions, opts.cluster?.startMs ?? 0);
      injected = `${figures.injected}; ${processorErrors} processor invocations failed and were re-dispatched`;
      problems.push(...figures.problems);
      break;
    }
    case 'broker-restart':
      injected = restart
        ? `private broker (streams over SASL_SSL, SCRAM-SHA-512) stopped (SIGTERM) and started again on the same data dir and port after ${restartAfterChunks} handled chunks (stop + start ${restartMs} ms): ${across.running} invocations were reading, ${across.done} of them rode through to done; ${processorErrors} processor invocations failed and were re-dispatched, ${plannerFailures} planner runs failed`
        : 'no restart happened';
      if (!restart) problems.push('the broker was never restarted');
      break;
  }

  // ---- Checks -------------------------------------------------------------------------------
  const [eo, al] = streams as [StreamConfig, StreamConfig];
  const snapEo = await readLedgerSnapshot(env.ddb, env.ledgerTable, eo.id);
  const snapAl = await readLedgerSnapshot(env.ddb, env.ledgerTable, al.id);
  const violations = [...checkInvariants(snapEo), ...checkInvariants(snapAl)];
  const deadLetters = await cleanLedger.listDeadLetters(eo.id);
  const dlKeys = new Set(deadLetters.map((d) => `${d.topic}/${d.partition}/${d.offset}`));
  const lostIn = (snap: typeof snapEo, r: Produced) =>
    snap.dataLoss.some((l) => l.topic === r.topic && l.partition === r.partition && r.offset >= l.from && r.offset < l.until);
  const partOf = (snap: typeof snapEo, r: Produced): PartitionState | undefined =>
    snap.partitions.find((p) => p.topic === r.topic && p.partition === r.partition);

  const sink = await scanTotals(env.ddb, sinkTable);
  const auditKeys = new Set((await scanItems(env.ddb, auditTable)).map((i) => i.pk as string));

  let expected = 0;
  let applied = 0;
  let duplicates = 0;
  let losses = 0;
  let dataLoss = 0;
  let stopped = 0;
  let retired = 0;
  let auditLosses = 0;
  /** A partition of the topic this scenario deleted, retired by the planner: records at or past its committed offset were never read. */
  const retiredPart = (snap: typeof snapEo, r: Produced): boolean => r.topic === deletedTopic && partOf(snap, r)?.status === 'retired';
  const byId = new Map(produced.map((r) => [`r-${r.id}`, r]));
  for (const [k, v] of sink) {
    const r = byId.get(k);
    if (!r) problems.push(`sink holds ${k}, which was never produced`);
    else if (r.poison) problems.push(`sink holds poison record ${k}`);
    else if (v.total !== r.id * v.count) problems.push(`sink total of ${k} is ${v.total}, expected ${r.id} x ${v.count}`);
    duplicates += Math.max(0, v.count - 1);
  }
  for (const r of produced) {
    const key = `${r.topic}/${r.partition}/${r.offset}`;
    const inSink = sink.has(`r-${r.id}`);
    if (inSink) applied++;
    if (lostIn(snapEo, r)) {
      dataLoss++;
      if (inSink) problems.push(`record ${key} is in a recorded data-loss span but was applied`);
    } else if (r.offset >= (partOf(snapEo, r)?.committed ?? 0)) {
      if (retiredPart(snapEo, r)) retired++;
      else stopped++;
    } else if (r.poison) {
      if (!dlKeys.has(key)) problems.push(`poison record ${key} is not dead-lettered`);
    } else {
      expected++;
      if (!inSink) losses++;
    }
    // Audit log: every record below the audit stream's committed offset and not recorded lost.
    if (!lostIn(snapAl, r) && r.offset < (partOf(snapAl, r)?.committed ?? 0) && !auditKeys.has(key)) auditLosses++;
  }
  if (stopped > 0 && scenario !== 'retention-fail') problems.push(`${stopped} records not reached although the run completed`);
  for (const snap of [snapEo, snapAl]) {
    const registered = scenario === 'partitions-added' ? 5 : scenario === 'topic-deleted' ? 4 : spec.partitions;
    if (snap.partitions.length < registered) problems.push(`only ${snap.partitions.length} partitions registered`);
  }
  if (scenario === 'topic-deleted') {
    for (const snap of [snapEo, snapAl]) {
      const name = snap.meta?.stream ?? '?';
      for (const p of snap.partitions) {
        const k = `${p.topic}/${p.partition}`;
        const ranges = snap.ranges.filter((r) => r.topic === p.topic && r.partition === p.partition);
        if (p.topic === deletedTopic) {
          if (p.status !== 'retired' || !p.reason?.includes('TOPIC_DELETED'))
            problems.push(`${name}: ${k} of the deleted topic is ${p.status} (${p.reason ?? 'no reason'}), not retired with TOPIC_DELETED`);
          // Everything it had planned ends done, or parked because the partition is gone.
          for (const r of ranges) {
            if (r.status !== 'done' && !(r.status === 'parked' && r.lastError?.includes('PARTITION_DELETED'))) {
              problems.push(`${name}: range ${k} [${r.from}, ${r.until}) of the deleted topic ended ${r.status} (${r.lastError ?? ''})`);
            }
          }
        } else {
          const end = produced.filter((r) => r.topic === p.topic && r.partition === p.partition).length;
          if (p.status !== 'active' || p.committed !== end)
            problems.push(`${name}: surviving ${k} is ${p.status} at ${p.committed}, expected active at ${end}`);
        }
      }
      if (!snap.ranges.some((r) => r.topic === deletedTopic && r.status === 'parked'))
        problems.push(`${name}: no in-flight range of the deleted topic was parked (the deletion hit nothing in flight)`);
    }
    if (!produced.some((r) => r.topic === deletedTopic && retiredPart(snapEo, r))) problems.push('deleted topic: no retired partition');
  } else if (retired) problems.push(`${retired} records on retired partitions`);

  // Scenario-specific expectations.
  if (scenario === 'retention-continue') {
    if (dataLoss !== 70) problems.push(`expected 70 records in recorded data-loss spans, found ${dataLoss}`);
  } else if (scenario === 'retention-fail') {
    if (dataLoss !== 0) problems.push(`failOnDataLoss=true recorded data loss (${dataLoss} records)`);
    if (stopped === 0) problems.push('failOnDataLoss=true: no partition stopped');
    for (const snap of [snapEo, snapAl]) {
      const p0 = snap.ranges.find((r) => r.partition === 0 && r.status === 'parked');
      const p1 = snap.partitions.find((p) => p.partition === 1);
      if (!p0?.lastError?.includes('DATA_LOSS')) problems.push(`${snap.meta?.stream}: p0 range not parked with DATA_LOSS`);
      if (p1?.status !== 'failed' || !p1.reason?.includes('DATA_LOSS'))
        problems.push(`${snap.meta?.stream}: p1 not failed with DATA_LOSS (status ${p1?.status})`);
    }
  } else if (dataLoss) problems.push(`unexpected data loss recorded: ${dataLoss} records`);
  if (scenario === 'poison-record') {
    const poison = produced.filter((r) => r.poison).length;
    if (deadLetters.length !== poison) problems.push(`expected ${poison} dead letters, found ${deadLetters.length}`);
  } else if (deadLetters.length) problems.push(`unexpected dead letters: ${deadLetters.length}`);

  const result: ScenarioResult = {
    scenario,
    seed,
    injected,
    produced: produced.length,
    expected,
    applied,
    duplicates,
    losses,
    auditLosses,
    auditDuplicates: audit.duplicates(),
    dataLoss,
    deadLetters: deadLetters.length,
    stopped,
    retired,
    violations,
    problems,
    rounds,
    invocations,
    processorErrors,
    statuses,
    wallMs: Date.now() - t0,
    ok: false,
  };
  if (process.env.CHAOS_DEBUG) {
    const missing = produced.filter((r) => !r.poison && !sink.has(`r-${r.id}`));
    console.log(
      JSON.stringify(
        {
          missing: missing.slice(0, 5),
          ranges: snapEo.ranges.filter((r) => missing.some((m) => m.topic === r.topic && m.partition === r.partition)),
          parts: snapEo.partitions,
        },
        null,
        1,
      ),
    );
  }
  result.ok =
    problems.length === 0 && violations.length === 0 && duplicates === 0 && losses === 0 && auditLosses === 0 && applied === expected;
  faulty?.destroy();
  if (producer !== env.producer) await producer.disconnect();
  await doomedProducer?.disconnect();
  return result;
}

type ForgeTally = { sent: number; refused: number; otherOutcomes: string[]; roundsChanged: number; rounds: number };

/**
 * forged-payload: sends, for every range just dispatched, three payloads naming its `from` with a
 * wrong `until` (one past it, far past it, inside it), one at a time, and compares a full scan of
 * both streams' ledger items before and after: a forgery must be refused and change nothing.
 */
async function sendForgedPayloads(
  env: ChaosEnv,
  ledger: Ledger,
  queue: Array<{ stream: StreamConfig; range: RangePayload }>,
  tally: ForgeTally,
): Promise<void> {
  const scan = async () =>
    JSON.stringify(
      await Promise.all([...new Set(queue.map((q) => q.stream.id))].sort().map((s) => readLedgerSnapshot(env.ddb, env.ledgerTable, s))),
    );
  const before = await scan();
  const untouchable: RangeReader = {
    read: () => {
      throw new Error('a forged payload reached the reader');
    },
    close: async () => undefined,
  } as unknown as RangeReader;
  const refuse: RecordsHandler = {
    mode: 'at-least-once',
    handle: () => {
      throw new Error('a forged payload reached the handler');
    },
  };
  for (const { stream, range } of queue) {
    const wrong = [range.until + 1, range.until + 1_000_000, range.from + 1 === range.until ? range.until + 2 : range.from + 1];
    for (const until of wrong) {
      tally.sent++;
      try {
        const res = await processRange(
          { ledger, readerFor: async () => untouchable, handlerFor: () => refuse },
          { stream, range: { ...range, until }, deadlineAtMs: Date.now() + 60_000 },
        );
        tally.otherOutcomes.push(`${range.topic}/${range.partition} [${range.from}, ${until}): ${res.status}`);
      } catch (err) {
        if (err instanceof ValidationError) tally.refused++;
        else tally.otherOutcomes.push(`${range.topic}/${range.partition} [${range.from}, ${until}): ${(err as Error).message}`);
      }
    }
  }
  tally.rounds++;
  if ((await scan()) !== before) tally.roundsChanged++;
}

type ProcessorClocks = { ledger: Ledger; clock: () => number; storeClock: StoreClock; whileLeased?: () => Promise<void> };
type SkewedClocks = {
  ahead: ProcessorClocks;
  behind: ProcessorClocks;
  aheadMs: number;
  behindMs: number;
  handed: Map<string, number>;
  close(): void;
};

/**
 * skewed-clock: two "containers" (own DynamoDB client, own store clock) whose local clocks run
 * 3 leases ahead and 1 lease behind the machine's (the emulator's `Date` header is the machine clock).
 */
function skewedClocks(endpoint: string, tableName: string, leaseMs: number): SkewedClocks {
  const container = (offsetMs: number): ProcessorClocks & { client: DynamoDBClient } => {
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const clock = () => Date.now() + offsetMs;
    return {
      client,
      clock,
      ledger: createDynamoLedger({ client, tableName }),
      storeClock: createDynamoStoreClock({ client, tableName, localClock: clock }),
    };
  };
  const ahead = container(3 * leaseMs);
  const behind = container(-leaseMs);
  return {
    ahead,
    behind,
    aheadMs: 3 * leaseMs,
    behindMs: leaseMs,
    handed: new Map(),
    close: () => [ahead, behind].forEach((c) => c.client.destroy()),
  };
}

/** The RELIABILITY.md table. */
export function reportMarkdown(results: ScenarioResult[], meta: { seed: number; wallMs: number; command: string }): string {
  const rows = results.map(
    (r) =>
      `| ${r.scenario} | ${r.injected} | ${r.produced} | ${r.applied}/${r.expected} applied once${r.deadLetters ? `, ${r.deadLetters} dead-lettered` : ''}${r.dataLoss ? `, ${r.dataLoss} in recorded data-loss spans` : ''}${r.stopped ? `, ${r.stopped} held by stopped partitions` : ''}${r.retired ? `, ${r.retired} never read on retired partitions of the deleted topic` : ''} | ${r.duplicates} (audit log: ${r.auditDuplicates} redeliveries) | ${r.losses} (audit log: ${r.auditLosses}) | ${r.violations.length} | ${r.ok ? 'pass' : `FAIL: ${[...r.problems, ...r.violations.map((v) => `${v.invariant} ${v.partition}: ${v.message}`)].join('; ')}`} |`,
  );
  return [
    '# Reliability',
    '',
    `Generated by \`${meta.command}\` (test/chaos/chaos.test.ts); do not edit by hand. Seed ${meta.seed}; ${results.length} scenarios in ${(meta.wallMs / 1000).toFixed(1)} s against the local Kafka broker and DynamoDB emulator.`,
    '',
    'Each scenario runs two streams over the same topics: `running-totals` (exactly-once into a DynamoDB sink, every record a unique key) and `audit-log` (at-least-once). The run is driven to completion (planner rounds, processors, retries), then the sink is compared record by record with what was produced and the ledger is checked for invariants I1 (tiling), I2 (cursor and progress bounds) and I6 (nothing silently skipped).',
    '',
    '| scenario | injected | records produced | exactly-once sink | duplicates in sink | losses | invariant violations | result |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    '"duplicates in sink" counts extra applications in the exactly-once sink (must be 0); the audit log may see redeliveries (at least once) and must lose nothing. "losses" counts records neither applied, nor dead-lettered, nor inside a data-loss span the ledger recorded, nor behind a partition stopped on purpose (failOnDataLoss=true), nor (topic-deleted only) at or past the committed offset of a partition of the deleted topic that the planner retired. Invariant violations come from `checkInvariants` (test/chaos/invariants.ts) over both streams\' ledger snapshots.',
    '',
    'A longer soak loops every scenario with fresh seeds: `npm run chaos -- --minutes 30 [--seed n]` (prints a JSON summary; exit 1 on any failure).',
    '',
    '`broker-restart` runs against a private broker started for the scenario (the shared test broker is never restarted) and restarts it on the same data dir and port while processors read.',
    '',
    '`leader-killed` runs against a private 3-broker cluster started for the scenario and kills the leader of some partitions between two planner rounds, so the following planner runs meet the dead leader before the controller fences it.',
    '',
    "`planners-2`, `planners-3` and `planner-kill` run the planner as its schedule does, in loops (test/chaos/loops.ts): a delivery every 2 s, each invocation ticking both streams every trigger interval for 4 s unless the next one asks it to hand over. `planners-2` and `planners-3` deliver each schedule 2 or 3 times (up to 150 ms apart) and run 2 or 3 one-shot planner runs at once every round beside the loops; no two invocations' ticks of a stream may interleave. `planner-kill` runs loops only and kills two of them mid-loop, at a seeded tick and step (nothing the killed invocation calls answers from then on); rather than wait out the loop lease (30 s at least), the store time the loops and processors read moves on past it, and the next delivery must take each dead loop over after its lease expired and tick.",
    '',
  ].join('\n');
}
