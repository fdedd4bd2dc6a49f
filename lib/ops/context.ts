/**
 * The operations context: the Lambdas' own adapters (`composeAdapters`: DynamoDB ledger, kafkajs
 * metadata and range reader, handler registry), built for one CLI or local-runtime process and
 * released by `close()`. Endpoints and credentials come from the environment (DYNAMODB_ENDPOINT for
 * the local stack, else the AWS SDK's default chain), so every operation runs unchanged against the
 * local stack or AWS.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DeploymentConfig } from '../config/schema';
import type { KafkaLogFn } from '../kafka/client';
import { composeAdapters, type Adapters } from '../runtime/compose';

/** What operations use of the adapters; `close()` releases every connection and the DynamoDB client. */
export type OpsContext = Pick<
  Adapters,
  'config' | 'env' | 'dynamo' | 'ledger' | 'storeClock' | 'metadata' | 'readerFor' | 'createReader' | 'handlerFor' | 'close'
> &
  Partial<Pick<Adapters, 'groupCommitterFor' | 'dropGroupCommitter' | 'destinationsFor' | 'registries' | 'ledgerMigration'>>;

export type OpsContextOptions = {
  /** Where kafkajs's own log lines go (default: kafkajs's JSON lines on the console). */
  kafkaLog?: KafkaLogFn;
};

/** Builds the context for a validated config (a given `dynamo` is destroyed by `close()` too). */
export function createOpsContext(
  config: DeploymentConfig,
  env: NodeJS.ProcessEnv = process.env,
  dynamo?: DynamoDBClient,
  options: OpsContextOptions = {},
): OpsContext {
  return composeAdapters({ config, env, dynamo, kafkaLog: options.kafkaLog });
}
