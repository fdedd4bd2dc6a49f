/** Clients for the services of the current test run, from KAFKA_BROKERS / DYNAMODB_ENDPOINT. */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel } from 'kafkajs';

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests through jest (global setup starts the local stack)`);
  return v;
}

export function testKafka(clientId = 'test'): Kafka {
  return new Kafka({ clientId, brokers: required('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING });
}

export function testDynamo(): DynamoDBClient {
  return new DynamoDBClient({
    endpoint: required('DYNAMODB_ENDPOINT'),
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}

/** A name no other test (or earlier run against the same services) uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}
