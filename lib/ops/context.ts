/**
 * The operations context: the same adapters the Lambdas use (DynamoDB ledger, kafkajs metadata and
 * range reader, handler registry), built for one CLI or local-runtime process. Endpoints and
 * credentials come from the environment (DYNAMODB_ENDPOINT for the local stack, else the AWS SDK's
 * default chain), so every operation runs unchanged against the local stack or AWS.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DeploymentConfig, StreamConfig } from '../config/schema';
import { resolveHandler } from '../handlers';
import { createKafka, type KafkaLogFn } from '../kafka/client';
import { createMetadataCache, type MetadataCache } from '../kafka/metadata-cache';
import { createKafkajsMetadata } from '../kafka/metadata.kafkajs';
import { createKafkajsRangeReader } from '../kafka/range-reader.kafkajs';
import { createDynamoStoreClock } from '../ledger/clock.dynamodb';
import { createDynamoLedger } from '../ledger/ledger.dynamodb';
import type { Ledger, StoreClock } from '../ports/ledger';
import type { RangeReader } from '../ports/range-reader';
import type { RecordsHandler } from '../processor/handler-api';
import { dynamoClientFromEnv } from '../runtime/aws';

export type OpsContext = {
  config: DeploymentConfig;
  env: NodeJS.ProcessEnv;
  dynamo: DynamoDBClient;
  ledger: Ledger;
  /** DynamoDB's time, for every lease decision (operator leases, the local runner's planner and processors). */
  storeClock: StoreClock;
  metadata: MetadataCache;
  /** One range reader per cluster connection, for one read at a time (peek, re-drive). */
  readerFor(stream: StreamConfig): Promise<RangeReader>;
  /** A new range reader the caller owns and closes (the local runner's pool). */
  createReader(stream: StreamConfig): Promise<RangeReader>;
  handlerFor(stream: StreamConfig): RecordsHandler;
  close(): Promise<void>;
};

export type OpsContextOptions = {
  /** Where kafkajs's own log lines go (default: kafkajs's JSON lines on the console). */
  kafkaLog?: KafkaLogFn;
};

/** Builds the context for a validated config; `close()` releases every connection it opened. */
export function createOpsContext(
  config: DeploymentConfig,
  env: NodeJS.ProcessEnv = process.env,
  dynamo: DynamoDBClient = dynamoClientFromEnv(env),
  options: OpsContextOptions = {},
): OpsContext {
  const readers = new Map<string, Promise<RangeReader>>();
  const handlers = new Map<string, RecordsHandler>();
  const kafkaDeps = { log: options.kafkaLog };
  const metadata = createMetadataCache(async (cfg) => createKafkajsMetadata(await createKafka(cfg, kafkaDeps)));
  return {
    config,
    env,
    dynamo,
    ledger: createDynamoLedger({ client: dynamo, tableName: config.ledgerTable }),
    storeClock: createDynamoStoreClock({ client: dynamo, tableName: config.ledgerTable }),
    metadata,
    readerFor(stream) {
      const key = JSON.stringify(stream.kafka);
      let r = readers.get(key);
      if (!r) {
        r = createKafka(stream.kafka, kafkaDeps).then((kafka) => createKafkajsRangeReader(kafka));
        r.catch(() => readers.delete(key));
        readers.set(key, r);
      }
      return r;
    },
    createReader: async (stream) => createKafkajsRangeReader(await createKafka(stream.kafka, kafkaDeps)),
    handlerFor(stream) {
      // Keyed by stream id: a replay may differ from its source only in the sink table.
      let h = handlers.get(stream.id);
      if (!h) {
        h = resolveHandler(stream, { dynamo, env });
        handlers.set(stream.id, h);
      }
      return h;
    },
    async close() {
      await Promise.allSettled([...readers.values()].map(async (r) => (await r).close()));
      readers.clear();
      await metadata.closeAll().catch(() => undefined);
      dynamo.destroy();
    },
  };
}
