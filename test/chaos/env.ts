/** The chaos environment: the clients, ledger table and reader pool scenarios share, and what they created. */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { createMetadataCache, type MetadataCache } from '../../lib/kafka/metadata-cache';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { noResources, removeResources, type CreatedResources, type Removal } from '../../lib/local/tool-cleanup';
import { toolResourceName } from '../../lib/local/tool-names';
import type { RangeReader } from '../../lib/ports/range-reader';

export type ChaosEnv = {
  kafka: Kafka;
  /** The client range readers use, when the streams reach the broker otherwise than `kafka` (broker-restart: SASL_SSL). */
  readerKafka?: Kafka;
  admin: Admin;
  producer: Producer;
  /** A clean client (sink checks, audit log, tables). */
  ddb: DynamoDBClient;
  ledgerTable: string;
  metadata: MetadataCache;
  readers: RangeReader[];
  allReaders: RangeReader[];
  /** Topics and tables made through this environment, to delete: its ledger table, or a running scenario's own. */
  created: CreatedResources;
};

/** An environment on `kafka` with a fresh ledger table, recorded in `created`. */
export async function openChaosEnv(kafka: Kafka, ddb: DynamoDBClient, created = noResources()): Promise<ChaosEnv> {
  const admin = kafka.admin();
  const producer = kafka.producer();
  const ledgerTable = toolResourceName('chaos', 'ledger');
  created.tables.push(ledgerTable);
  await Promise.all([admin.connect(), producer.connect(), ensureLedgerTable(ddb, ledgerTable)]);
  return { kafka, admin, producer, ddb, ledgerTable, metadata: createMetadataCache(), readers: [], allReaders: [], created };
}

/** Deletes what the environment recorded (its ledger table), then closes its clients. */
export async function closeChaosEnv(env: ChaosEnv): Promise<Removal> {
  const removal = await removeResources(env.created, { admin: env.admin, dynamo: env.ddb });
  await disconnectChaosEnv(env);
  return removal;
}

/** Closes the clients of the environment (its readers too); deletes nothing. */
export async function disconnectChaosEnv(env: ChaosEnv): Promise<void> {
  await Promise.allSettled([
    env.metadata.closeAll(),
    ...env.allReaders.map((r) => r.close()),
    env.admin.disconnect(),
    env.producer.disconnect(),
  ]);
}
