/**
 * Prepares `sls invoke local --stage local ...` against the local stack (docs/deploy.md, "Invoke locally against the local stack"):
 * creates the local stage's ledger and running-totals tables in the DynamoDB emulator, a topic on
 * the local broker (optionally with some records), and writes the stage's streams config to
 * .local/deploy/streams.local.json, where serverless.yml's `local` stage looks for it.
 *
 *   eval "$(npm run -s local:up)" && export KAFKA_BROKERS DYNAMODB_ENDPOINT
 *   npx tsx infra/serverless/local-invoke-setup.ts [--topic local-events] [--partitions 3] [--produce 100]
 *   npx sls invoke local --stage local -f planner --data '{"dryRun":true}'
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Command } from 'commander';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { HelpRequestedError, parseArgv, wholeNumberOption } from '../../lib/cli/args';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { dynamoClientFromEnv } from '../../lib/runtime/aws';
import { createSinkTable } from '../../lib/sink/table.dynamodb';

/** serverless.yml's service name and the stage this prepares (resource names are `<service>-<stage>-...`). */
const PREFIX = 'kafka-lambda-direct-local';
const LOCAL_CONFIG_PATH = resolve(__dirname, '..', '..', '.local', 'deploy', 'streams.local.json');

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run  eval "$(npm run -s local:up)" && export KAFKA_BROKERS DYNAMODB_ENDPOINT  first`);
  }
  return value;
}

type Options = { brokers: string[]; topic: string; partitions: number; produce: number; ledgerTable: string; sinkTable: string };

const program = new Command('npx tsx infra/serverless/local-invoke-setup.ts')
  .description("prepare `sls invoke local --stage local` against the local stack: tables, a topic, the stage's streams config")
  .option('--topic <name>', 'the topic the stage reads', 'local-events')
  .addOption(wholeNumberOption('--partitions <n>', 'partitions of the topic, when it is created', 3))
  .addOption(wholeNumberOption('--produce <n>', 'records to produce into it', 0, 0));

/** Command-line options and the local stack's addresses from the environment. */
function readOptions(): Options {
  const { opts } = parseArgv<{ topic: string; partitions: number; produce: number }>(program, process.argv.slice(2));
  const brokers = required('KAFKA_BROKERS').split(',');
  required('DYNAMODB_ENDPOINT');
  return { brokers, ...opts, ledgerTable: `${PREFIX}-ledger`, sinkTable: `${PREFIX}-running-totals` };
}

/** The local stage's ledger and running-totals tables in the DynamoDB emulator (kept when they exist). */
async function createTables({ ledgerTable, sinkTable }: Options): Promise<void> {
  const dynamo = dynamoClientFromEnv();
  try {
    await ensureLedgerTable(dynamo, ledgerTable);
    await createSinkTable(dynamo, sinkTable);
  } finally {
    dynamo.destroy();
  }
}

/** Waits until every partition of the topic has a leader that answers ListOffsets (at most 30 s). */
async function waitForLeaders(admin: Admin, topic: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await admin.fetchTopicOffsets(topic)).length > 0) break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline) throw new Error(`topic ${topic} has no leader after 30 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `count` small JSON records over five keys. */
async function produceRecords(kafka: Kafka, topic: string, count: number): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    const messages = Array.from({ length: count }, (_, i) => ({ key: `account-${i % 5}`, value: JSON.stringify({ amount: i }) }));
    await producer.send({ topic, messages });
  } finally {
    await producer.disconnect();
  }
}

/** The topic on the local broker (created when missing), ready to read, with `produce` records added. */
async function prepareTopic({ brokers, topic, partitions, produce }: Options): Promise<void> {
  const kafka = new Kafka({ clientId: 'local-invoke-setup', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) {
      await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: false });
    }
    await waitForLeaders(admin, topic);
    if (produce > 0) await produceRecords(kafka, topic, produce);
  } finally {
    await admin.disconnect();
  }
}

/** The local stage's streams config, where serverless.yml's `local` stage reads it. */
function writeLocalConfig({ brokers, topic, ledgerTable, sinkTable }: Options): void {
  const config = {
    ledgerTable,
    streams: [
      {
        id: 'local',
        kafka: { brokers },
        topics: [topic],
        triggerIntervalMs: 60_000,
        processor: { timeoutMs: 300_000 },
        handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
      },
    ],
  };
  mkdirSync(dirname(LOCAL_CONFIG_PATH), { recursive: true });
  writeFileSync(LOCAL_CONFIG_PATH, `${JSON.stringify(config, null, 2)}\n`);
}

async function main(): Promise<void> {
  const options = readOptions();
  await createTables(options);
  await prepareTopic(options);
  writeLocalConfig(options);
  const { ledgerTable, sinkTable, topic, produce } = options;
  process.stderr.write(
    `[local-invoke] tables ${ledgerTable}, ${sinkTable}; topic ` +
      `${topic}${produce ? ` (+${produce} records)` : ''}; config ${LOCAL_CONFIG_PATH}\n` +
      `[local-invoke] now: npx sls invoke local --stage local -f planner --data '{"dryRun":true}'\n`,
  );
}

main().catch((err: unknown) => {
  if (err instanceof HelpRequestedError) {
    process.stdout.write(err.help);
    return;
  }
  process.stderr.write(`[local-invoke] error: ${(err as Error).message ?? String(err)}\n`);
  process.exitCode = 1;
});
