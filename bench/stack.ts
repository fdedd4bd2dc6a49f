/**
 * The benchmarks' services: the shared ones named by KAFKA_BROKERS and DYNAMODB_ENDPOINT when both
 * are set, otherwise a private stack started for the run and removed after it; and the benchmark
 * topics and ledger tables on them.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { LOCAL_DIR, startStack, stopStack, type StackState } from '../infra/local/stack';
import { ensureLedgerTable } from '../lib/ledger/table';
import { dynamoClientFromEnv } from '../lib/runtime/compose';

/** Runs `body` with the broker list, on the environment's services or a private stack. */
export async function withStack<T>(log: (line: string) => void, body: (brokers: string) => Promise<T>): Promise<T> {
  let stack: StackState | undefined;
  if (!process.env.KAFKA_BROKERS || !process.env.DYNAMODB_ENDPOINT) {
    stack = await startStack({ dir: join(LOCAL_DIR, 'bench', String(process.pid)), ownerPid: process.pid, log });
    process.env.KAFKA_BROKERS = stack.kafkaBrokers;
    process.env.DYNAMODB_ENDPOINT = stack.dynamodbEndpoint;
  }
  try {
    return await body(process.env.KAFKA_BROKERS);
  } finally {
    if (stack) {
      await stopStack(stack, log);
      rmSync(stack.dir, { recursive: true, force: true });
    }
  }
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
export type BenchTopic = { runId: string; topic: string; ledgerTable: string; admin: Admin; dynamo: DynamoDBClient };

/**
 * Runs `body` on a fresh topic of `partitions` partitions and a fresh ledger table, named
 * `bench-<name>-<runId>` and `bench-<name>-ledger-<runId>`; deletes both afterwards.
 */
export async function withBenchTopic<T>(
  name: string,
  brokers: string,
  partitions: number,
  body: (run: BenchTopic) => Promise<T>,
): Promise<T> {
  const runId = Date.now().toString(36);
  const topic = `bench-${name}-${runId}`;
  const ledgerTable = `bench-${name}-ledger-${runId}`;
  const admin = new Kafka({ clientId: `bench-${name}`, brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  const dynamo = dynamoClientFromEnv(process.env);
  try {
    await admin.connect();
    await Promise.all([createBenchTopic(admin, topic, partitions), ensureLedgerTable(dynamo, ledgerTable)]);
    return await body({ runId, topic, ledgerTable, admin, dynamo });
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    await dynamo.send(new DeleteTableCommand({ TableName: ledgerTable })).catch(() => undefined);
    dynamo.destroy();
  }
}
