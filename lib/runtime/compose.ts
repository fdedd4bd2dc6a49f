/**
 * The one composition root: the adapters every entry point uses (DynamoDB client, ledger, store
 * clock, Kafka metadata cache, range readers, group-offset committers, handlers), with their
 * per-cluster caches. The Lambda runtime keeps them for the container's life; the CLI and the local
 * runtime close them when they are done (`close`). Endpoints come from the environment, so the same
 * adapters run against AWS or the local stack (DYNAMODB_ENDPOINT, KAFKA_BROKERS in the stream config,
 * AWS_ENDPOINT_URL_GLUE for Glue schema registries).
 */
import { createDynamoLedgerMigration, type LedgerMigration } from '../ledger/migrate.dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DeploymentConfig, KafkaConnectionConfig, StreamConfig } from '../config/schema';
import { resolveHandler } from '../handlers';
import { createKafka, type CreateKafkaDeps, type KafkaLogFn } from '../kafka/client';
import { createMetadataCache, type MetadataCache } from '../kafka/metadata-cache';
import { createKafkajsGroupCommitter } from '../kafka/group-offsets.kafkajs';
import type { SecretResolver } from '../kafka/secrets';
import { createKafkajsMetadata } from '../kafka/metadata.kafkajs';
import { createKafkajsRangeReader } from '../kafka/range-reader.kafkajs';
import { createDynamoStoreClock } from '../ledger/clock.dynamodb';
import { createDynamoLedger, MARKED_WRITE_CONCURRENCY } from '../ledger/ledger.dynamodb';
import { DEFAULT_FOLD_BUDGET } from '../processor/fold-committer';
import type { GroupOffsetCommitter } from '../ports/group-offsets';
import type { Ledger, StoreClock } from '../ports/ledger';
import type { RangeReader } from '../ports/range-reader';
import type { RecordsHandler } from '../processor/handler-api';
import type { FailureDestinations } from '../ports/failure-destination';
import { awsRequestHandler, dropIdleSockets, releaseAgents } from './aws-sockets';
import type { ConnectionLimits } from '../connection-limits';
import { closeDestinations, createStreamDestinations } from './destinations';
import { createSchemaRegistries, type SchemaRegistries } from '../schemas/registries';

/** What a DynamoDB client's HTTP handler is told: sockets kept alive, at most `maxSockets` per host. */
export type DynamoClientOptions = {
  /** Sockets per host (the SDK's default is 50); size it with `dynamoSocketsFor` where many processors share one client. */
  maxSockets?: number;
  /** Where the HTTP handler's warnings go (default: the console). */
  logger?: { warn(message: string): void };
  /**
   * Closes a kept-alive socket idle this long (default: kept until the client is destroyed). The
   * local runtime sizes its pool for every processor's marked writes at once; like warm Lambdas,
   * it should not hold that pool open between bursts.
   */
  idleSocketMs?: number;
  /**
   * How long a connection may take to open, and stay silent with a request waiting (default: the
   * functions' limits); the local emulator's are LOCAL_EMULATOR_LIMITS.
   */
  limits?: ConnectionLimits;
};

/**
 * Requests one processor may have in flight: a folded batch's marked writes, DEFAULT_FOLD_BUDGET's
 * groups in flight times the writes of a group in flight (the DynamoDB ledger's MARKED_WRITE_CONCURRENCY).
 */
const REQUESTS_PER_PROCESSOR = DEFAULT_FOLD_BUDGET.writeConcurrency * MARKED_WRITE_CONCURRENCY;

/**
 * Sockets for one client shared by `maxConcurrency` in-process processors, a planner run (up to 8
 * transactions at once) and a few for the store clock and the view: requests never wait for a
 * socket, so the SDK never warns that its socket usage is at capacity.
 */
export function dynamoSocketsFor(maxConcurrency: number): number {
  return maxConcurrency * REQUESTS_PER_PROCESSOR + 16;
}

/** How long the local runtime's DynamoDB client keeps an idle socket (its planner ticks every second or so). */
const LOCAL_IDLE_SOCKET_MS = 1000;

/**
 * What a request to the local emulator may meet: it serves one request at a time, so under a burst
 * (a thousand partitions registering, sixteen processors committing) a new connection waits to be
 * accepted and a request waits its turn, in silence, for seconds, where DynamoDB answers in
 * milliseconds. What sends many requests at once to it (the local runtime, the benchmarks) waits this
 * long; the functions keep their limits (lib/connection-limits.ts).
 */
export const LOCAL_EMULATOR_LIMITS: ConnectionLimits = { connectMs: 10_000, silentMs: 30_000 };

/** The client options of a local runtime running `maxConcurrency` processors in one process (npm start, benches, chaos). */
export function localDynamoClientOptions(maxConcurrency: number): Pick<DynamoClientOptions, 'maxSockets' | 'idleSocketMs' | 'limits'> {
  return { maxSockets: dynamoSocketsFor(maxConcurrency), idleSocketMs: LOCAL_IDLE_SOCKET_MS, limits: LOCAL_EMULATOR_LIMITS };
}

/**
 * A DynamoDB client for AWS, or for DYNAMODB_ENDPOINT (local stack) when set: connections and
 * timeouts from aws-sockets.ts (a request whose connection goes silent fails in seconds and is retried).
 */
export function dynamoClientFromEnv(env: NodeJS.ProcessEnv = process.env, opts: DynamoClientOptions = {}): DynamoDBClient {
  const endpoint = env.DYNAMODB_ENDPOINT;
  const handler = awsRequestHandler({
    ...(opts.maxSockets !== undefined && { maxSockets: opts.maxSockets }),
    ...(opts.idleSocketMs !== undefined && { idleSocketMs: opts.idleSocketMs }),
    ...(opts.limits && { limits: opts.limits }),
  });
  const client = new DynamoDBClient({
    ...(endpoint
      ? {
          endpoint,
          region: env.AWS_REGION ?? 'us-east-1',
          credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
        }
      : {}),
    requestHandler: { ...handler, ...(opts.logger && { logger: opts.logger }) },
  });
  // The agents are ours (the SDK leaves an agent it was given alone): a destroyed client's go with it.
  const destroy = client.destroy.bind(client);
  client.destroy = () => {
    destroy();
    releaseAgents(handler);
  };
  return client;
}

export type ComposeOptions = {
  config: DeploymentConfig;
  env: NodeJS.ProcessEnv;
  /** The DynamoDB client to build on (default: one for the environment); `close` destroys it either way. */
  dynamo?: DynamoDBClient;
  /** Where kafkajs's own log lines go (default: kafkajs's JSON lines on the console). */
  kafkaLog?: KafkaLogFn;
  /** Where Kafka secrets are read (default: the process's caching resolver over Secrets Manager, SSM and the environment). */
  resolveSecret?: SecretResolver;
};

export type Adapters = {
  config: DeploymentConfig;
  env: NodeJS.ProcessEnv;
  dynamo: DynamoDBClient;
  ledger: Ledger;
  /** DynamoDB's time: every lease decision uses it (never this process's own clock). */
  storeClock: StoreClock;
  /** Moves a stream's ledger written by an earlier release to the current layout (`kafka-direct migrate-ledger`). */
  ledgerMigration: LedgerMigration;
  metadata: MetadataCache;
  /** One range reader per cluster connection, reused (warm invocations, peek, re-drive). */
  readerFor(stream: StreamConfig): Promise<RangeReader>;
  /** A new range reader the caller owns and closes (the local runner's pool). */
  createReader(stream: StreamConfig): Promise<RangeReader>;
  /** The stream's handler, one per stream id: a replay may differ from its source only in the sink table. */
  handlerFor(stream: StreamConfig): RecordsHandler;
  /** The schema registries the streams' `value` / `key` settings name, one client and schema cache each. */
  registries: SchemaRegistries;
  /** A group offset committer per cluster connection. */
  groupCommitterFor(stream: StreamConfig): Promise<GroupOffsetCommitter>;
  /** Forgets (and closes in the background) the cluster's committer: the next `groupCommitterFor` makes a fresh one. */
  dropGroupCommitter(stream: StreamConfig): void;
  /** The stream's failure destinations (`onFailure`), made once per stream and reused (a Kafka producer stays connected). */
  destinationsFor(stream: StreamConfig): Promise<FailureDestinations>;
  /** Closes the cached readers and committers; metadata and the DynamoDB client stay (a warm container's). */
  closeConnections(): Promise<void>;
  /**
   * Forgets every kept connection at once (connection-reuse.ts: a container thawed after a long
   * freeze): the Kafka clients are closed in the background, idle AWS sockets destroyed; returns how many of those.
   */
  dropConnections(): number;
  /** Releases everything: readers, admins, metadata connections and the DynamoDB client. */
  close(): Promise<void>;
};

/** Builds the adapters for a validated config; nothing connects until first use. */
export function composeAdapters(options: ComposeOptions): Adapters {
  const { config, env } = options;
  const dynamo = options.dynamo ?? dynamoClientFromEnv(env);
  // A connection may serve several streams; they are named when its MSK IAM role cannot be assumed.
  const kafkaDeps = (kafka: KafkaConnectionConfig): CreateKafkaDeps => ({
    log: options.kafkaLog,
    resolveSecret: options.resolveSecret,
    streams: config.streams.filter((s) => JSON.stringify(s.kafka) === JSON.stringify(kafka)).map((s) => s.id),
  });
  const readers = perClusterCache<RangeReader>();
  const committers = perClusterCache<GroupOffsetCommitter>();
  const handlers = new Map<string, RecordsHandler>();
  const destinations = new Map<string, Promise<FailureDestinations>>();
  const metadata = createMetadataCache(async (cfg) => createKafkajsMetadata(await createKafka(cfg, kafkaDeps(cfg))));
  // Forgotten before they are closed: a call made meanwhile gets a new client, never one being closed.
  const closeConnections = async (): Promise<void> => {
    const [r, c, d] = [readers.values(), committers.values(), [...destinations.values()]];
    readers.clear();
    committers.clear();
    destinations.clear();
    await Promise.allSettled(r.map(async (x) => (await x).close()));
    await Promise.allSettled(c.map(async (x) => (await x).close()));
    await Promise.allSettled(d.map(async (x) => closeDestinations(await x)));
  };
  return {
    config,
    env,
    dynamo,
    ledger: createDynamoLedger({ client: dynamo, tableName: config.ledgerTable }),
    storeClock: createDynamoStoreClock({ client: dynamo, tableName: config.ledgerTable }),
    ledgerMigration: createDynamoLedgerMigration({ client: dynamo, tableName: config.ledgerTable }),
    metadata,
    readerFor: (stream) =>
      readers.get(stream, async () => createKafkajsRangeReader(await createKafka(stream.kafka, kafkaDeps(stream.kafka)))),
    createReader: async (stream) => createKafkajsRangeReader(await createKafka(stream.kafka, kafkaDeps(stream.kafka))),
    handlerFor(stream) {
      let h = handlers.get(stream.id);
      if (!h) {
        h = resolveHandler(stream, { dynamo, env, configDir: config.configDir });
        handlers.set(stream.id, h);
      }
      return h;
    },
    destinationsFor(stream) {
      let d = destinations.get(stream.id);
      if (!d) {
        d = createStreamDestinations(stream, env, () => createKafka(stream.kafka, kafkaDeps(stream.kafka)));
        // A failure (a Kafka secret unreadable) is not kept: the next dead letter tries again.
        d.catch(() => destinations.delete(stream.id));
        destinations.set(stream.id, d);
      }
      return d;
    },
    registries: createSchemaRegistries({ env, ...(options.resolveSecret && { resolveSecret: options.resolveSecret }) }),
    groupCommitterFor: (stream) =>
      committers.get(stream, async () => createKafkajsGroupCommitter(await createKafka(stream.kafka, kafkaDeps(stream.kafka)))),
    dropGroupCommitter(stream) {
      void committers
        .take(stream)
        ?.then((c) => c.close())
        .catch(() => undefined);
    },
    closeConnections,
    dropConnections() {
      void closeConnections().catch(() => undefined);
      void metadata.closeAll().catch(() => undefined);
      return dropIdleSockets();
    },
    async close() {
      await closeConnections();
      await metadata.closeAll().catch(() => undefined);
      dynamo.destroy();
    },
  };
}

/** Promises keyed by a stream's cluster connection; a rejected one is forgotten so the next call retries. */
function perClusterCache<T>() {
  const cache = new Map<string, Promise<T>>();
  const keyOf = (stream: StreamConfig) => JSON.stringify(stream.kafka);
  return {
    get(stream: StreamConfig, make: () => Promise<T>): Promise<T> {
      const key = keyOf(stream);
      let v = cache.get(key);
      if (!v) {
        v = make();
        v.catch(() => cache.delete(key));
        cache.set(key, v);
      }
      return v;
    },
    take(stream: StreamConfig): Promise<T> | undefined {
      const key = keyOf(stream);
      const v = cache.get(key);
      cache.delete(key);
      return v;
    },
    values: () => [...cache.values()],
    clear: () => cache.clear(),
  };
}
