/** The topics of a many-partition benchmark, created on the run's stack, with the clients that fill them. */
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import type { DeploymentConfigInput } from '../lib/config/schema';
import type { BenchStack } from './stack';

export type BusyTopics = {
  brokers: string[];
  /** The run's name: the stream's id, and its topics' common prefix (`<prefix>-000`, ...). */
  prefix: string;
  names: string[];
  admin: Admin;
  producer: Producer;
  /** A deployment of one no-op stream over these topics (by pattern, 1 s trigger), its ledger in `ledgerTable`. */
  config(ledgerTable: string): DeploymentConfigInput;
  /** Disconnects the clients (the topics go with the run's clean-up). */
  close(): Promise<void>;
};

/** Creates `topics` topics of `partitions` partitions each, recorded for the run's clean-up, and waits for their leaders. */
export async function createBusyTopics(
  stack: BenchStack,
  o: { what: string; clientId: string; topics: number; partitions: number },
): Promise<BusyTopics> {
  const brokers = stack.brokers.split(',');
  const prefix = stack.name(o.what);
  const names = Array.from({ length: o.topics }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
  stack.topics(names);
  // Creating a thousand partitions on one broker takes longer than kafkajs's default 30 s.
  const kafka = new Kafka({ clientId: o.clientId, brokers, logLevel: logLevel.NOTHING, requestTimeout: 120_000 });
  const admin = kafka.admin();
  const producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  await admin.createTopics({
    topics: names.map((topic) => ({ topic, numPartitions: o.partitions })),
    waitForLeaders: true,
    timeout: 120_000,
  });
  const close = async (): Promise<void> => {
    await Promise.allSettled([admin.disconnect(), producer.disconnect()]);
  };
  const config = (ledgerTable: string): DeploymentConfigInput => ({
    ledgerTable,
    streams: [
      {
        id: prefix,
        kafka: { brokers },
        topicPattern: `${prefix}-.*`,
        triggerIntervalMs: 1000,
        handler: { module: 'noop', mode: 'at-least-once' },
      },
    ],
  });
  return { brokers, prefix, names, admin, producer, config, close };
}
