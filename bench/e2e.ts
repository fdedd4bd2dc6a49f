/**
 * `npm run bench:e2e`: the end-to-end benchmark. Produces once, with Kafka's Java producer, a topic of
 * `--partitions` partitions holding `--records` records of ~512 B JSON `{"account","amount","pad"}`
 * keyed by one of `--accounts` accounts; then, `--runs` times, drains it (a) exactly-once with the
 * `running-totals` handler into a fresh sink table, checked account by account against what was
 * produced, (b) with the no-op at-least-once handler, both through the local runtime (planner loop and
 * in-process processors) with a fresh stream id each, and (c) with Kafka's ConsumerPerformance.
 *
 * Progress goes to stderr, with one `detail` JSON line per drain (ledger writes, planner ticks,
 * processor-seconds: the cost model's inputs). The last line of stdout is the result object:
 * {"records","consumerPerfRps","exactlyOnce":{"rps","ratio","wallMs","invocations","sinkWrites",
 * "writeUnitsPer1000","exact"},"atLeastOnce":{"rps","ratio","wallMs","invocations"},"peakRssMb"}.
 *
 * Uses KAFKA_BROKERS and DYNAMODB_ENDPOINT when both are set, else starts a private stack.
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel } from 'kafkajs';
import { ensureKafkaJars, javaBinary } from '../infra/local/kafka';
import { CACHE_DIR } from '../infra/local/stack';
import { ensureLedgerTable } from '../lib/ledger/table';
import { dynamoClientFromEnv } from '../lib/runtime/compose';
import { javaProduceAccounts } from '../test/support/java';
import { costPerMillion } from './cost';
import { drainOnce } from './drain';
import { createBenchTopic, endOffsetsOf, withStack } from './stack';
import { consumerPerfRps, e2eResult, type E2eRun } from './stats';

/** The processor's memory as deployed (serverless.yml processorMemorySize), for the cost line. */
const PROCESSOR_MEMORY_GB = 1;

const log = (line: string): void => {
  process.stderr.write(`[bench:e2e] ${line}\n`);
};

/** The workload of the issue that asked for this benchmark; flags shrink it for development. */
const E2E_DEFAULTS = { records: 2_000_000, accounts: 10_000, partitions: 10, runs: 1, triggerIntervalMs: 1000 } as const;

function parseFlags(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      records: { type: 'string', default: String(E2E_DEFAULTS.records) },
      accounts: { type: 'string', default: String(E2E_DEFAULTS.accounts) },
      partitions: { type: 'string', default: String(E2E_DEFAULTS.partitions) },
      runs: { type: 'string', default: String(E2E_DEFAULTS.runs) },
      'drain-timeout-ms': { type: 'string', default: String(3 * 3600_000) },
    },
  });
  const n = (name: keyof typeof values): number => {
    const v = Number(values[name]);
    if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a whole number >= 1, not ${values[name]}`);
    return v;
  };
  return {
    records: n('records'),
    accounts: n('accounts'),
    partitions: n('partitions'),
    runs: n('runs'),
    drainTimeoutMs: n('drain-timeout-ms'),
  };
}

/** Kafka's ConsumerPerformance over the whole topic in a fresh group: its whole-run nMsg.sec. */
function runConsumerPerf(brokers: string, topic: string, records: number, group: string): number {
  const res = spawnSync(
    javaBinary(),
    ['-Xmx512m', '-cp', `${ensureKafkaJars(CACHE_DIR)}/*`, 'org.apache.kafka.tools.ConsumerPerformance'].concat([
      '--bootstrap-server',
      brokers,
      '--topic',
      topic,
      '--messages',
      String(records),
      '--timeout',
      '60000',
      '--group',
      group,
    ]),
    { encoding: 'utf8', timeout: 30 * 60_000, maxBuffer: 16 * 1024 * 1024 },
  );
  if (res.status !== 0) throw new Error(`ConsumerPerformance failed (${res.status ?? res.signal}): ${res.stderr?.slice(-2000)}`);
  return consumerPerfRps(res.stdout);
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  await withStack(log, async (brokers) => {
    const runId = Date.now().toString(36);
    const topic = `bench-e2e-${runId}`;
    const ledgerTable = `bench-e2e-ledger-${runId}`;
    const admin = new Kafka({ clientId: 'bench-e2e', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
    const dynamo = dynamoClientFromEnv(process.env);
    try {
      await admin.connect();
      await Promise.all([createBenchTopic(admin, topic, flags.partitions), ensureLedgerTable(dynamo, ledgerTable)]);
      const tp = Date.now();
      const produced = await javaProduceAccounts(brokers, { topic, records: flags.records, accounts: flags.accounts, sizeBytes: 512 });
      const ends = await endOffsetsOf(admin, topic);
      const inTopic = ends.reduce((s, o) => s + o, 0);
      if (produced.sent !== flags.records || inTopic !== flags.records)
        throw new Error(`produced ${produced.sent}, the topic holds ${inTopic}, expected ${flags.records}`);
      log(`produced ${flags.records} records over ${Object.keys(produced.totals).length} accounts into ${topic} in ${Date.now() - tp} ms`);
      const runs: E2eRun[] = [];
      for (let run = 1; run <= flags.runs; run++) {
        const common = { brokers, ledgerTable, topic, endOffsets: () => ends, triggerIntervalMs: E2E_DEFAULTS.triggerIntervalMs, log };
        const drain = async (kind: 'eo' | 'alo') => {
          const figures = await drainOnce({
            ...common,
            timeoutMs: flags.drainTimeoutMs,
            streamId: `bench-${kind}-${runId}-${run}`,
            ...(kind === 'eo'
              ? { handler: 'running-totals', sinkTable: `bench-e2e-totals-${runId}-${run}`, expected: () => produced.totals }
              : { handler: 'noop' }),
          });
          log(`run ${run} ${kind === 'eo' ? 'exactly-once' : 'at-least-once'} detail ${JSON.stringify(figures)}`);
          const cost = Object.entries(costPerMillion(figures, PROCESSOR_MEMORY_GB)).map(([k, usd]) => [k, Number(usd.toFixed(6))]);
          log(
            `run ${run} cost per million records (docs/COST.md, ${PROCESSOR_MEMORY_GB} GB processors, USD): ${JSON.stringify(Object.fromEntries(cost))}`,
          );
          return figures;
        };
        const exactlyOnce = await drain('eo');
        const atLeastOnce = await drain('alo');
        const perf = runConsumerPerf(brokers, topic, flags.records, `bench-perf-${runId}-${run}`);
        log(`run ${run} ConsumerPerformance: ${Math.round(perf)} records/s (nMsg.sec, group join included)`);
        runs.push({ consumerPerfRps: perf, exactlyOnce, atLeastOnce });
      }
      log('goals: exactlyOnce.ratio >= 0.13, atLeastOnce.ratio >= 0.5, writeUnitsPer1000 <= 100, peakRssMb <= 512');
      process.stdout.write(`${JSON.stringify(e2eResult(flags.records, runs))}\n`);
    } finally {
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect();
      await dynamo.send(new DeleteTableCommand({ TableName: ledgerTable })).catch(() => undefined);
      dynamo.destroy();
    }
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`[bench:e2e] failed: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exitCode = 1;
});
