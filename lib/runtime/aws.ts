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
import { createMetadataCache, type MetadataCache } from '../kafka/metadata-cache';
import { createDynamoLedger } from '../ledger/ledger.dynamodb';
import type { Dispatcher } from '../ports/dispatcher';
import type { Ledger } from '../ports/ledger';

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
  metadata: MetadataCache;
  dispatcher(): Dispatcher;
};

let cached: Runtime | undefined;

/** The runtime of this container, created on first use (config errors surface on every invocation). */
export function awsRuntime(env: NodeJS.ProcessEnv = process.env): Runtime {
  if (cached) return cached;
  const config = loadDeploymentConfig(env);
  const dynamo = dynamoClientFromEnv(env);
  let dispatcher: Dispatcher | undefined;
  cached = {
    config,
    dynamo,
    ledger: createDynamoLedger({ client: dynamo, tableName: config.ledgerTable }),
    metadata: createMetadataCache(),
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
  rt.dynamo.destroy();
}
