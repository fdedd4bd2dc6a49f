/**
 * The real broker and emulator as a processor integration test file uses them: Kafka and DynamoDB
 * clients, a ledger table of the file's own, a metadata cache and a range reader; connected before the
 * file's tests and closed after them (the hooks are registered by the call, at the file's top level).
 */
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { testDynamo, testKafka, uniqueName } from './env';

/** Clients for a test file named `name` (used in the ledger table's and the Kafka client's names). */
export function processorTestBed(name: string) {
  const ddb = testDynamo();
  const ledgerTable = uniqueName(`${name}-ledger`);
  const kafka = testKafka(`${name}-it`);
  const admin = kafka.admin();
  const producer = kafka.producer();
  const metadata = createMetadataCache();
  const reader = createKafkajsRangeReader(kafka);
  const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });
  beforeAll(async () => {
    await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect(), producer.connect()]);
  });
  afterAll(async () => {
    await Promise.all([metadata.closeAll(), reader.close(), admin.disconnect(), producer.disconnect()]);
    ddb.destroy();
  });
  return { ddb, ledgerTable, kafka, admin, producer, metadata, reader, ledger };
}
