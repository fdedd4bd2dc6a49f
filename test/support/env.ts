/** Clients for the services of the current test run, from KAFKA_BROKERS / DYNAMODB_ENDPOINT. */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { createSinkTable as createPkSinkTable } from '../../lib/sink/table.dynamodb';
import { waitFor } from './wait-for';

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests through jest (global setup starts the local stack)`);
  return v;
}

export function testKafka(clientId = 'test'): Kafka {
  return new Kafka({ clientId, brokers: required('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING });
}

export function testDynamo(): DynamoDBClient {
  return new DynamoDBClient(emulatorClientConfig());
}

/**
 * Client settings for any AWS service of the emulator (DynamoDB, Glue, SQS, SNS, S3 on the one
 * endpoint, DYNAMODB_ENDPOINT): dummy credentials, and S3 by path (no bucket host names on loopback).
 */
export function emulatorClientConfig(): {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  forcePathStyle: boolean;
} {
  return {
    endpoint: required('DYNAMODB_ENDPOINT'),
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    forcePathStyle: true,
  };
}

/** A name no other test (or earlier run against the same services) uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

/**
 * Creates topics and waits until every partition's leader answers ListOffsets. kafkajs's own
 * `waitForLeaders` throws when another test's fresh topic is not yet hosted, so we poll instead.
 */
export async function createTopicsReady(
  admin: Admin,
  topics: Array<{ topic: string; numPartitions?: number; configEntries?: Array<{ name: string; value: string }> }>,
  timeoutMs = 30_000,
): Promise<void> {
  await admin.createTopics({ topics, waitForLeaders: false });
  // One deadline for all the topics: the time left goes to the next one.
  const deadline = Date.now() + timeoutMs;
  for (const { topic, numPartitions = 1 } of topics) {
    await waitFor(`all ${numPartitions} partitions of topic ${topic} to answer ListOffsets`, () => admin.fetchTopicOffsets(topic), {
      until: (offsets) => offsets.length === numPartitions,
      timeoutMs: Math.max(0, deadline - Date.now()),
    });
  }
}

/** Creates a sink table keyed by `pk` (string), like the running-totals example expects. */
export async function createSinkTable(ddb: DynamoDBClient, prefix = 'sink'): Promise<string> {
  const name = uniqueName(prefix);
  await createPkSinkTable(ddb, name);
  return name;
}
