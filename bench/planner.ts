/**
 * `npm run bench:planner`: one planner over many partitions (default 500 topics x 20 = 10,000)
 * against the real broker and the DynamoDB emulator, dispatching into a recorder (no processors).
 * Measures a registration run, an idle run and a full run (one new record in every partition): DynamoDB
 * and Kafka requests, wall time and the time waiting on the emulator, the process's CPU time, and its
 * peak resident set and heap (the planner's memory need, with the bench's own clients beside it).
 * The last line printed is one JSON object with the figures.
 *
 * Flags: --topics N --partitions N --keep. Uses KAFKA_BROKERS / DYNAMODB_ENDPOINT when set (and
 * deletes its topics and ledger table at the end, unless --keep), otherwise starts a private local
 * stack and removes it at the end.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { parseStreamConfig } from '../lib/config/schema';
import { createRecordingDispatcher } from '../lib/dispatch/dispatcher.local';
import { createKafka } from '../lib/kafka/client';
import { createMetadataCache } from '../lib/kafka/metadata-cache';
import { createKafkajsMetadata } from '../lib/kafka/metadata.kafkajs';
import { createDynamoLedger } from '../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../lib/ledger/table';
import type { KafkaMetadata } from '../lib/ports/kafka-metadata';
import { planStream, type PlannerDeps } from '../lib/planner/run';
import { dynamoClientFromEnv, LOCAL_EMULATOR_LIMITS } from '../lib/runtime/compose';
import { wholeNumberOption } from '../lib/cli/args';
import { benchArgs, benchLog, benchProgram, runBench } from './cli';
import { sampleMemory } from './memory';
import { withStack, type BenchStack } from './stack';

const log = benchLog('planner');

/**
 * Counts the DynamoDB commands sent through `client` (once each, the SDK's own retries aside) and the
 * wall time with at least one in flight (transactions overlap), to tell the emulator's cost from the
 * planner's own.
 */
function instrument(client: DynamoDBClient): { requests: () => number; busyMs: () => number } {
  let requests = 0;
  let busyMs = 0;
  let inFlight = 0;
  let busySince = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      requests++;
      if (inFlight++ === 0) busySince = performance.now();
      try {
        return await next(args);
      } finally {
        if (--inFlight === 0) busyMs += performance.now() - busySince;
      }
    },
    { step: 'initialize', name: 'benchTimer' },
  );
  return { requests: () => requests, busyMs: () => busyMs };
}

/** Creates the bench's topics, 50 per request. */
async function createTopics(admin: Admin, names: string[], partitions: number): Promise<void> {
  for (let i = 0; i < names.length; i += 50) {
    await admin.createTopics({
      topics: names
        .slice(i, i + 50)
        .map((topic) => ({ topic, numPartitions: partitions, configEntries: [{ name: 'segment.bytes', value: String(1024 * 1024) }] })),
      // kafkajs's waitForLeaders throws on the first topic not yet hosted; waitForLeaders below waits instead.
      waitForLeaders: false,
      timeout: 120_000,
    });
  }
}

/**
 * Warm-up: connects, and waits until every new partition's leader answers ListOffsets (a freshly
 * created partition briefly replies NOT_LEADER_OR_FOLLOWER), so the runs measure planning.
 */
async function waitForLeaders(warm: KafkaMetadata, prefix: string, n: number): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      const discovered = await warm.describeTopics({ pattern: new RegExp(`${prefix}-.*`) });
      const found = discovered.reduce((s, t) => s + t.partitions.length, 0);
      if (found !== n) throw new Error(`${found} of ${n} partitions visible`);
      await warm.fetchOffsets(discovered, 'read_committed');
      return;
    } catch (err) {
      if (i >= 120) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

const program = benchProgram('planner', 'registration, idle and full planner runs over topics x partitions')
  .addOption(wholeNumberOption('--topics <n>', 'topics', 500))
  .addOption(wholeNumberOption('--partitions <n>', 'partitions per topic', 20));

async function main(): Promise<void> {
  const { topics, partitions, keep } = benchArgs<{ topics: number; partitions: number; keep: boolean }>(program);
  await withStack(log, { keep }, (stack) => benchPlanner(stack, topics, partitions));
}

/** Creates `topics` x `partitions`, then measures a registration, an idle and a full planner run. */
async function benchPlanner(stack: BenchStack, topics: number, partitions: number): Promise<void> {
  const brokers = stack.brokers.split(',');
  const kafka = new Kafka({ clientId: 'bench-planner', brokers, logLevel: logLevel.NOTHING, requestTimeout: 120_000 });
  const admin = kafka.admin();
  const producer = kafka.producer();
  // kafkajs logs every NOT_LEADER reply while the new partitions get leaders; count them (stderr
  // summary) instead of printing them on stdout, whose last line is the result.
  const kafkaLogs = new Map<string, number>();
  const countLog = (level: string, message: string, extra: Record<string, unknown>) => {
    const k = `${level}: ${message}${typeof extra.error === 'string' ? ` (${extra.error})` : ''}`;
    kafkaLogs.set(k, (kafkaLogs.get(k) ?? 0) + 1);
  };
  const flushKafkaLogs = (when: string) => {
    for (const [k, n] of kafkaLogs) log(`kafkajs ${when}: ${n} x ${k}`);
    kafkaLogs.clear();
  };
  const metadata = createMetadataCache(async (cfg) => createKafkajsMetadata(await createKafka(cfg, { log: countLog })));
  const ddb = dynamoClientFromEnv(process.env, { limits: LOCAL_EMULATOR_LIMITS });
  const dynamo = instrument(ddb);
  try {
    await admin.connect();
    await producer.connect();
    // One base name for the stream and its topics (`<base>-0042`): the stream's pattern matches them all.
    const prefix = stack.name('planner');
    const names = Array.from({ length: topics }, (_, i) => `${prefix}-${String(i).padStart(4, '0')}`);
    stack.topics(names);
    const tCreate = Date.now();
    await createTopics(admin, names, partitions);
    const n = topics * partitions;
    log(`created ${topics} topics x ${partitions} partitions = ${n} in ${Date.now() - tCreate} ms`);

    const tableName = stack.table('planner-ledger');
    await ensureLedgerTable(ddb, tableName);
    const ledger = createDynamoLedger({ client: ddb, tableName });
    const dispatcher = createRecordingDispatcher();
    const stream = parseStreamConfig({ id: prefix, kafka: { brokers, requestTimeoutMs: 120_000 }, topicPattern: `${prefix}-.*` }, 'bench');
    const deps: PlannerDeps = { ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 300_000 };
    const tWarm = Date.now();
    await waitForLeaders(await metadata.forStream(stream), prefix, n);
    log(`all ${n} partitions have leaders after ${Date.now() - tWarm} ms`);
    flushKafkaLogs('while leaders were elected');

    const measure = async (label: string) => {
      const d0 = dynamo.requests();
      const dms0 = dynamo.busyMs();
      const k0 = metadata.requestCount();
      const t0 = Date.now();
      const memory = sampleMemory(10);
      const cpu0 = process.cpuUsage();
      const rep = await planStream(deps, stream, { dryRun: false, nowMs: Date.now() });
      const cpu = process.cpuUsage(cpu0);
      const res = {
        wallMs: Date.now() - t0,
        dynamoRequests: dynamo.requests() - d0,
        kafkaRequests: metadata.requestCount() - k0,
        dynamoWaitMs: Math.round(dynamo.busyMs() - dms0),
        cpuMs: Math.round((cpu.user + cpu.system) / 1000),
        ...memory.stop(),
      };
      log(
        `${label}: ${JSON.stringify(res)} status=${rep.status} registered=${rep.registered} ranges=${rep.rangesPlanned} records=${rep.recordsPlanned} dispatched=${rep.dispatched}`,
      );
      if (rep.status !== 'planned') throw new Error(`${label} run did not plan: ${rep.reason}`);
      return { res, rep };
    };

    const reg = await measure('registration run');
    if (reg.rep.registered !== n) throw new Error(`registered ${reg.rep.registered} of ${n} partitions`);
    const idle = await measure('idle run');
    if (idle.rep.rangesPlanned !== 0) throw new Error('idle run planned ranges');

    const tProduce = Date.now();
    for (let i = 0; i < names.length; i += 100) {
      await producer.sendBatch({
        topicMessages: names.slice(i, i + 100).map((topic) => ({
          topic,
          messages: Array.from({ length: partitions }, (_, p) => ({ value: `r${p}`, partition: p })),
        })),
      });
    }
    log(`produced one record to each of ${n} partitions in ${Date.now() - tProduce} ms`);
    const full = await measure('full run');
    if (full.rep.rangesPlanned !== n || dispatcher.dispatched.length !== n) {
      throw new Error(`full run planned ${full.rep.rangesPlanned} and dispatched ${dispatcher.dispatched.length} of ${n}`);
    }
    flushKafkaLogs('during the measured runs');
    const goals = { idleDynamo: Math.ceil(n / 100) + 10, fullDynamo: Math.ceil(n / 25) + Math.ceil(n / 100) + 10 };
    const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
    log(
      `goals: idle <= ${goals.idleDynamo} DynamoDB requests (${met(idle.res.dynamoRequests <= goals.idleDynamo)}), ` +
        `full <= ${goals.fullDynamo} (${met(full.res.dynamoRequests <= goals.fullDynamo)}), ` +
        `full under 10 s on this machine (${met(full.res.wallMs < 10_000)}; ${full.res.dynamoWaitMs} ms of it waiting on the emulator)`,
    );
    process.stdout.write(`${JSON.stringify({ partitions: n, registration: reg.res, idle: idle.res, full: full.res })}\n`);
  } finally {
    await Promise.allSettled([metadata.closeAll(), admin.disconnect(), producer.disconnect()]);
    ddb.destroy();
  }
}

runBench('planner', main);
