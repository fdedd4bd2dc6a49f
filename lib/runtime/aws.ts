/**
 * Composition root for the Lambda functions: SDK clients and adapters built once per container and
 * reused by warm invocations. Endpoints come from the environment, so the same code runs against
 * AWS or the local stack (DYNAMODB_ENDPOINT, KAFKA_BROKERS in the stream config).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { loadDeploymentConfig } from '../config/load';
import type { DeploymentConfig } from '../config/schema';
import { createLambdaDispatcher } from '../dispatch/dispatcher.lambda';
import { ValidationError } from '../errors';
import type { Admin } from 'kafkajs';
import type { StreamConfig } from '../config/schema';
import { resolveHandler } from '../handlers';
import { createKafka, type CreateKafkaDeps, type KafkaLogFn } from '../kafka/client';
import { createMetadataCache, type MetadataCache } from '../kafka/metadata-cache';
import { createKafkajsMetadata } from '../kafka/metadata.kafkajs';
import { createKafkajsRangeReader } from '../kafka/range-reader.kafkajs';
import type { RecordsHandler } from '../processor/handler-api';
import type { RangeReader } from '../ports/range-reader';
import { createDynamoStoreClock } from '../ledger/clock.dynamodb';
import { createDynamoLedger } from '../ledger/ledger.dynamodb';
import type { Dispatcher } from '../ports/dispatcher';
import type { Ledger, StoreClock } from '../ports/ledger';

/** A DynamoDB client for AWS, or for DYNAMODB_ENDPOINT (local stack) when set. */
export function dynamoClientFromEnv(env: NodeJS.ProcessEnv = process.env): DynamoDBClient {
  const endpoint = env.DYNAMODB_ENDPOINT;
  return new DynamoDBClient(
    endpoint
      ? {
          endpoint,
          region: env.AWS_REGION ?? 'us-east-1',
          credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
        }
      : {},
  );
}

export type Runtime = {
  config: DeploymentConfig;
  dynamo: DynamoDBClient;
  ledger: Ledger;
  /** DynamoDB's time: every lease decision uses it (never this container's own clock). */
  storeClock: StoreClock;
  metadata: MetadataCache;
  dispatcher(): Dispatcher;
  /** The range reader for a stream's cluster (connections reused across warm invocations). */
  readerFor(stream: StreamConfig): Promise<RangeReader>;
  handlerFor(stream: StreamConfig): RecordsHandler;
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
  const kafkaDeps: CreateKafkaDeps = { log: options.kafkaLog };
  const config = loadDeploymentConfig(env);
  const dynamo = dynamoClientFromEnv(env);
  let dispatcher: Dispatcher | undefined;
  const readers = new Map<string, Promise<RangeReader>>();
  const admins = new Map<string, Promise<Admin>>();
  const handlers = new Map<string, RecordsHandler>();
  const perCluster = <T>(cache: Map<string, Promise<T>>, stream: StreamConfig, make: () => Promise<T>): Promise<T> => {
    const key = JSON.stringify(stream.kafka);
    let v = cache.get(key);
    if (!v) {
      v = make();
      v.catch(() => cache.delete(key));
      cache.set(key, v);
    }
    return v;
  };
  cached = {
    config,
    dynamo,
    ledger: createDynamoLedger({ client: dynamo, tableName: config.ledgerTable }),
    storeClock: createDynamoStoreClock({ client: dynamo, tableName: config.ledgerTable }),
    metadata: createMetadataCache(async (cfg) => createKafkajsMetadata(await createKafka(cfg, kafkaDeps))),
    readerFor: (stream) => perCluster(readers, stream, async () => createKafkajsRangeReader(await createKafka(stream.kafka, kafkaDeps))),
    handlerFor(stream) {
      let h = handlers.get(stream.id);
      if (!h) {
        h = resolveHandler(stream, { dynamo, env });
        handlers.set(stream.id, h);
      }
      return h;
    },
    async commitGroupOffset(stream, group, topic, partition, offset) {
      const commit = async (): Promise<void> => {
        const admin = await perCluster(admins, stream, async () => {
          const a = (await createKafka(stream.kafka, kafkaDeps)).admin();
          await a.connect();
          return a;
        });
        await admin.setOffsets({ groupId: group, topic, partitions: [{ partition, offset: String(offset) }] });
      };
      try {
        await commit();
      } catch {
        // kafkajs's admin keeps every topic it ever set offsets for among the topics its metadata
        // refreshes ask for; once one of them is deleted, every later refresh fails with
        // UNKNOWN_TOPIC_OR_PARTITION. A fresh admin starts with none: drop this one, try once more.
        const key = JSON.stringify(stream.kafka);
        const stale = admins.get(key);
        admins.delete(key);
        void stale?.then((a) => a.disconnect()).catch(() => undefined);
        await commit();
      }
    },
    async close() {
      await Promise.allSettled([...readers.values()].map(async (r) => (await r).close()));
      await Promise.allSettled([...admins.values()].map(async (a) => (await a).disconnect()));
      readers.clear();
      admins.clear();
    },
    dispatcher() {
      const functionName = env.PROCESSOR_FUNCTION_NAME;
      if (!functionName) throw new ValidationError('PROCESSOR_FUNCTION_NAME is not set: the planner cannot dispatch ranges');
      return (dispatcher ??= createLambdaDispatcher({ client: new LambdaClient({}), functionName }));
    },
  };
  return cached;
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
