/**
 * The benchmarks' services: the shared ones named by KAFKA_BROKERS and DYNAMODB_ENDPOINT when both
 * are set, otherwise a private stack started for the run and removed after it; the names of what a
 * run creates on them (`bench-<what>-<time>-<hex>`, recorded for the clean-up at its end); and the
 * benchmark topics and ledger tables.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { LOCAL_DIR } from '../infra/local/stack/dirs';
import { startStack, stopStack } from '../infra/local/stack/parts';
import type { StackState } from '../infra/local/stack/state';
import { ensureLedgerTable } from '../lib/ledger/table';
import { exitCleanups } from '../lib/local/exit-cleanup';
import { noResources, type CreatedResources } from '../lib/local/tool-cleanup';
import { toolResourceName } from '../lib/local/tool-names';
import { dynamoClientFromEnv, LOCAL_EMULATOR_LIMITS } from '../lib/runtime/compose';
import { cleanUpSharedStack } from './cleanup';

/** The services a run uses, and what it creates on them. */
export type BenchStack = {
  brokers: string;
  /** A fresh name, `bench-<what>-<time>-<hex>`, recorded as a topic the run creates. */
  topic(what: string): string;
  /** Likewise for a DynamoDB table. */
  table(what: string): string;
  /** Likewise for a consumer group (Kafka's performance tools commit offsets in one). */
  group(what: string): string;
  /** A fresh name not recorded: a stream id (its ledger items go with the ledger table), or a base for several names. */
  name(what: string): string;
  /** Records topics named otherwise (a base plus a suffix), before they are created. */
  topics(names: readonly string[]): void;
  /** Everything recorded so far. */
  readonly created: CreatedResources;
};

/**
 * Runs `body` on the environment's services or a private stack. When it ends (done, failed, or cut
 * short by Ctrl-C or SIGTERM) what it recorded is deleted from a shared stack, unless `keep`; a
 * private stack is removed whole.
 */
export async function withStack<T>(
  log: (line: string) => void,
  opts: { keep: boolean },
  body: (stack: BenchStack) => Promise<T>,
): Promise<T> {
  let priv: StackState | undefined;
  if (!process.env.KAFKA_BROKERS || !process.env.DYNAMODB_ENDPOINT) {
    priv = await startStack({ dir: join(LOCAL_DIR, 'bench', String(process.pid)), ownerPid: process.pid, log });
    process.env.KAFKA_BROKERS = priv.kafkaBrokers;
    process.env.DYNAMODB_ENDPOINT = priv.dynamodbEndpoint;
  }
  const { stack, end } = benchStack(process.env.KAFKA_BROKERS);
  const endOfRun = async (): Promise<void> => {
    end();
    if (!priv) return cleanUpSharedStack({ brokers: stack.brokers, created: stack.created, keep: opts.keep, log });
    if (opts.keep) log('--keep keeps nothing on a private stack: it is removed with everything on it');
    await stopStack(priv, log);
    rmSync(priv.dir, { recursive: true, force: true });
  };
  return exitCleanups.around(endOfRun, () => body(stack));
}

/**
 * A run's names on the services at `brokers`, recorded as they are made. After `end()` (the clean-up
 * has begun: a signal cut the run short) asking for one throws, so the run creates nothing more that
 * the clean-up would miss.
 */
function benchStack(brokers: string): { stack: BenchStack; end(): void } {
  const created = noResources();
  let ended = false;
  const record = (into: string[], names: readonly string[]): void => {
    if (ended) throw new Error(`the run is ending: ${names[0]} is not created`);
    into.push(...names);
  };
  const named = (into: string[]) => (what: string) => {
    const name = toolResourceName('bench', what);
    record(into, [name]);
    return name;
  };
  const stack: BenchStack = {
    brokers,
    topic: named(created.topics),
    table: named(created.tables),
    group: named(created.groups),
    name: (what) => toolResourceName('bench', what),
    topics: (names) => record(created.topics, names),
    created,
  };
  return { stack, end: () => void (ended = true) };
}

/** Creates the topic and waits until every partition has a leader. */
export async function createBenchTopic(admin: Admin, topic: string, partitions: number): Promise<void> {
  await admin.createTopics({
    topics: [{ topic, numPartitions: partitions, configEntries: [{ name: 'segment.bytes', value: String(512 * 1024 * 1024) }] }],
    waitForLeaders: false,
  });
  for (let i = 0; ; i++) {
    const offsets = await admin.fetchTopicOffsets(topic).catch(() => []);
    if (offsets.length === partitions) return;
    if (i > 300) throw new Error(`topic ${topic} has no leaders after 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The high watermark of each partition, by partition number. */
export async function endOffsetsOf(admin: Admin, topic: string): Promise<number[]> {
  const offsets = await admin.fetchTopicOffsets(topic);
  const ends: number[] = [];
  for (const o of offsets) ends[o.partition] = Number(o.high);
  return ends;
}

/** A run's fresh topic and ledger table, and the clients that made them (open while the body runs). */
export type BenchTopic = { topic: string; ledgerTable: string; admin: Admin; dynamo: DynamoDBClient };

/**
 * Runs `body` on a fresh topic of `partitions` partitions and a fresh ledger table, named
 * `bench-<name>-...` and `bench-<name>-ledger-...`; the stack's clean-up deletes both.
 */
export async function withBenchTopic<T>(
  stack: BenchStack,
  name: string,
  partitions: number,
  body: (run: BenchTopic) => Promise<T>,
): Promise<T> {
  const topic = stack.topic(name);
  const ledgerTable = stack.table(`${name}-ledger`);
  const admin = new Kafka({ clientId: `bench-${name}`, brokers: stack.brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  const dynamo = dynamoClientFromEnv(process.env, { limits: LOCAL_EMULATOR_LIMITS });
  try {
    await admin.connect();
    await Promise.all([createBenchTopic(admin, topic, partitions), ensureLedgerTable(dynamo, ledgerTable)]);
    return await body({ topic, ledgerTable, admin, dynamo });
  } finally {
    await admin.disconnect();
    dynamo.destroy();
  }
}
