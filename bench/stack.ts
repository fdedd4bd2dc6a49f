/**
 * The benchmarks' services: the shared ones named by KAFKA_BROKERS and DYNAMODB_ENDPOINT when both
 * are set, otherwise a private stack started for the run and removed after it (as bench/processor.ts);
 * and the benchmark topics on them.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Admin } from 'kafkajs';
import { LOCAL_DIR, startStack, stopStack, type StackState } from '../infra/local/stack';

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
