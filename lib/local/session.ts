/**
 * What the two kinds of local run (`npm start`'s demo and `npm start -- --config <file>`) set up
 * and read the same way: their dependencies, the live view with a DynamoDB client sized for the
 * processors, the runner wired to the second Ctrl-C, and one stream's offsets against the ledger's.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { StreamConfig } from '../config/schema';
import { topicSelector } from '../config/topics';
import type { OpsContext } from '../ops/context';
import type { PartitionOffsets } from '../ports/kafka-metadata';
import type { PartitionState, RangeState } from '../ports/ledger-state';
import { partitionKey } from '../ranges';
import { dynamoClientFromEnv, localDynamoClientOptions } from '../runtime/compose';
import { createProgressView, type ProgressView } from './progress';
import { createLocalRunner, runnerDepsFrom, type LocalRunner } from '../runtime/local';

/** What a local run is given by `npm start`. */
export type LocalRunDeps = {
  /** Brokers every stream reads from locally. */
  kafkaBrokers: string;
  dynamodbEndpoint: string;
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
  /** Aborted on the first Ctrl-C: stop cleanly. */
  signal?: AbortSignal;
  /** Aborted on the second Ctrl-C: abort processors at once (they still stop at a chunk boundary). */
  hardSignal?: AbortSignal;
  /** Terminal width, for the live view. */
  columns?: () => number | undefined;
  /** Called once set-up is done and the run starts (from then on the run reports its own stopping). */
  onRunning?: () => void;
};

/** The run's live view (on stdout for a terminal, else stderr) and a DynamoDB client warning into it. */
export function createViewAndDynamo(
  opts: { progress: 'tty' | 'lines' | 'off'; maxConcurrency: number },
  deps: LocalRunDeps,
  env: NodeJS.ProcessEnv,
): { view: ProgressView; dynamo: DynamoDBClient } {
  const view = createProgressView(opts.progress === 'tty' ? deps.out : deps.err, opts.progress, { columns: deps.columns });
  // Sockets for every processor slot, the planner and the view: no request waits for a socket.
  const dynamo = dynamoClientFromEnv(env, {
    ...localDynamoClientOptions(opts.maxConcurrency),
    logger: { warn: (m) => view.event(m) },
  });
  return { view, dynamo };
}

/** The local runner over `streams`, logging into the view; the second Ctrl-C aborts its processors. */
export function createViewedRunner(
  ops: Parameters<typeof runnerDepsFrom>[0],
  view: ProgressView,
  streams: StreamConfig[],
  maxConcurrency: number,
  hardSignal?: AbortSignal,
): LocalRunner {
  const runner = createLocalRunner({ ...runnerDepsFrom(ops, (l) => view.event(l)), maxConcurrency }, streams);
  hardSignal?.addEventListener('abort', () => runner.abort(), { once: true });
  return runner;
}

/** One stream's offsets in Kafka, its partitions and open ranges in the ledger, and the partitions by key. */
export async function readStreamOffsets(
  ops: Pick<OpsContext, 'metadata' | 'ledger'>,
  stream: StreamConfig,
): Promise<{ offsets: PartitionOffsets[]; parts: PartitionState[]; open: RangeState[]; byKey: Map<string, PartitionState> }> {
  const kafka = await ops.metadata.forStream(stream);
  const topics = await kafka.describeTopics(topicSelector(stream));
  const [offsets, parts, open] = await Promise.all([
    kafka.fetchOffsets(topics, stream.isolationLevel),
    ops.ledger.readPartitions(stream.id),
    ops.ledger.readOpenRanges(stream.id),
  ]);
  return { offsets, parts, open, byKey: new Map(parts.map((p) => [partitionKey(p.topic, p.partition), p])) };
}

/** Waits `ms`, or less once `signal` aborts. */
export async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  // timers/promises drops its abort listener when the timer fires (a hand-rolled one piles them up on a long run).
  await delay(ms, undefined, { signal }).catch(() => undefined);
}
