/**
 * The Lambda runtime: the shared adapters (`composeAdapters`) built once per container and reused by
 * warm invocations, plus what only the Lambdas need (the Lambda dispatcher, group-offset commits).
 */
import { LambdaClient } from '@aws-sdk/client-lambda';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { loadDeploymentConfig } from '../config/load';
import type { DeploymentConfig, StreamConfig } from '../config/schema';
import { createLambdaDispatcher } from '../dispatch/dispatcher.lambda';
import { plannerDispatcher } from '../dispatch/segment-routing';
import { ValidationError } from '../errors';
import type { KafkaLogFn } from '../kafka/client';
import type { MetadataCache } from '../kafka/metadata-cache';
import type { RecordsHandler } from '../processor/handler-api';
import type { RangeReader } from '../ports/range-reader';
import type { Dispatcher } from '../ports/dispatcher';
import type { ChainTick, TickQueue } from '../ports/tick-queue';
import { TICK_QUEUE_URL_ENV } from '../planner/loop-timing';
import { awsRequestHandler, dropIdleSockets } from './aws-sockets';
import { destinationClientConfig } from './destinations';
import type { Ledger, StoreClock } from '../ports/ledger';
import type { FailureDestinations } from '../ports/failure-destination';
import { composeAdapters } from './compose';
import { commitGroupOffset } from './group-offsets';

export { dynamoClientFromEnv } from './compose';

export type Runtime = {
  config: DeploymentConfig;
  dynamo: DynamoDBClient;
  ledger: Ledger;
  /** DynamoDB's time: every lease decision uses it (never this container's own clock). */
  storeClock: StoreClock;
  metadata: MetadataCache;
  /** The planner's dispatcher: the processor, and the segments function for continuous streams when the stack has one. */
  dispatcher(): Dispatcher;
  /** A continuous segment's dispatcher of its successor: this very function (its own name from the context). */
  segmentDispatcher(functionName: string): Dispatcher;
  /** The planner's tick queue (the tick chain's), when the stack gave it one. */
  tickQueue(): TickQueue | undefined;
  /** The range reader for a stream's cluster (connections reused across warm invocations). */
  readerFor(stream: StreamConfig): Promise<RangeReader>;
  /** A new range reader with connections of its own, which the caller closes (a continuous segment's partitions). */
  createReader(stream: StreamConfig): Promise<RangeReader>;
  handlerFor(stream: StreamConfig): RecordsHandler;
  /** The stream's failure destinations (`onFailure`), kept for the container's life. */
  destinationsFor(stream: StreamConfig): Promise<FailureDestinations>;
  /** Forgets every kept connection (a container thawed after a long freeze); returns the AWS sockets closed. */
  dropConnections(): number;
  /** Commits an offset to a Kafka consumer group that has no members (standard lag tooling). */
  commitGroupOffset(stream: StreamConfig, group: string, topic: string, partition: number, offset: number): Promise<void>;
  close(): Promise<void>;
};

let cached: Runtime | undefined;

/** The methods of a Powertools-like logger that kafkajs's log lines are routed to. */
export type LevelLogger = Record<'error' | 'warn' | 'info' | 'debug', (message: string, extra: Record<string, unknown>) => void>;

/** Routes kafkajs's log lines (WARN and ERROR) into a function's structured logger, under `kafka`. */
export function kafkaLogTo(logger: LevelLogger): KafkaLogFn {
  return (level, message, context) => logger[level](`kafkajs: ${message}`, { kafka: context });
}

/** The runtime of this container, created on first use (config errors surface on every invocation). */
export function awsRuntime(env: NodeJS.ProcessEnv = process.env, options: { kafkaLog?: KafkaLogFn } = {}): Runtime {
  if (cached) return cached;
  const adapters = composeAdapters({ config: loadDeploymentConfig(env), env, kafkaLog: options.kafkaLog });
  let dispatcher: Dispatcher | undefined;
  let segmentDispatcher: Dispatcher | undefined;
  let tickQueue: TickQueue | undefined;
  cached = {
    config: adapters.config,
    dynamo: adapters.dynamo,
    ledger: adapters.ledger,
    storeClock: adapters.storeClock,
    metadata: adapters.metadata,
    readerFor: adapters.readerFor,
    createReader: adapters.createReader,
    handlerFor: adapters.handlerFor,
    destinationsFor: adapters.destinationsFor,
    dropConnections: adapters.dropConnections,
    commitGroupOffset: (stream, group, topic, partition, offset) =>
      commitGroupOffset(adapters, stream, group, { topic, partition, offset }),
    // A warm container keeps its metadata connections and DynamoDB client (`resetAwsRuntime` releases them).
    close: adapters.closeConnections,
    dispatcher() {
      const functionName = env.PROCESSOR_FUNCTION_NAME;
      if (!functionName) throw new ValidationError('PROCESSOR_FUNCTION_NAME is not set: the planner cannot dispatch ranges');
      if (dispatcher) return dispatcher;
      const client = new LambdaClient({ requestHandler: awsRequestHandler() });
      // Continuous streams' segments go to the segments function when the stack has one (SEGMENT_FUNCTION_NAME).
      return (dispatcher = plannerDispatcher(env, adapters.config, {
        processor: functionName,
        create: (name) => createLambdaDispatcher({ client, functionName: name }),
      }));
    },
    segmentDispatcher(functionName) {
      return (segmentDispatcher ??= createLambdaDispatcher({
        client: new LambdaClient({ requestHandler: awsRequestHandler() }),
        functionName,
      }));
    },
    tickQueue() {
      const queueUrl = env[TICK_QUEUE_URL_ENV];
      if (!queueUrl) return undefined;
      return (tickQueue ??= lazySqsTickQueue(env, queueUrl));
    },
  };
  return cached;
}

/** The SQS tick queue, its SDK client loaded on the first tick sent (a processor's cold start pays for none). */
function lazySqsTickQueue(env: NodeJS.ProcessEnv, queueUrl: string): TickQueue {
  let queue: Promise<TickQueue> | undefined;
  const load = async (): Promise<TickQueue> => {
    const [{ SQSClient }, { createSqsTickQueue }] = await Promise.all([
      import('@aws-sdk/client-sqs'),
      import('../dispatch/tick-queue.sqs'),
    ]);
    return createSqsTickQueue(new SQSClient(destinationClientConfig(env, 'SQS')), queueUrl);
  };
  return { sendTick: async (tick: ChainTick, delayMs: number) => (await (queue ??= load())).sendTick(tick, delayMs) };
}

/**
 * Drops what this container kept (connection-reuse.ts): the runtime's Kafka clients if it has one, and
 * every idle AWS socket. Returns the sockets closed.
 */
export function dropContainerConnections(): number {
  return cached ? cached.dropConnections() : dropIdleSockets();
}

/** Closes and forgets the cached runtime (tests that change the environment, local shutdown). */
export async function resetAwsRuntime(): Promise<void> {
  const rt = cached;
  cached = undefined;
  if (!rt) return;
  await rt.metadata.closeAll();
  await rt.close();
  rt.dynamo.destroy();
}
