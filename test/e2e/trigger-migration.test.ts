/**
 * A team leaving Lambda's Kafka trigger, end to end on the local stack through the same composition a
 * local run uses (composeAdapters + the local runner): Avro values written through a real
 * Confluent-compatible registry (the stack's Apicurio) by the producer-side library, with a schema
 * evolution mid-topic; a filter pattern; poison records (an unknown schema id, a corrupt payload)
 * landing in an SQS queue and an S3 bucket as well as the ledger; and a start from the committed
 * offsets of the consumer group the stream replaces, partition by partition. The drain is exact:
 * the sink holds exactly the totals of the records at or after each partition's start that decode
 * and match, and every poison record after the start is in the ledger, the queue and the bucket.
 */
import { GetObjectCommand, ListObjectsV2Command, S3Client, CreateBucketCommand } from '@aws-sdk/client-s3';
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { parseDeploymentConfig } from '../../lib/config/schema';
import type { FailureRecord } from '../../lib/destinations/message';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { foldHandler } from '../../lib/processor/handler-api';
import { composeAdapters } from '../../lib/runtime/compose';
import { createLocalRunner, runnerDepsFrom } from '../../lib/runtime/local';
import { createSinkTable, createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { REGISTRY_START_TIMEOUT_MS, testRegistry } from '../support/registry';

const ddb = testDynamo();
const aws = {
  endpoint: process.env.DYNAMODB_ENDPOINT!,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
};
const sqs = new SQSClient(aws);
const s3 = new S3Client({ ...aws, forcePathStyle: true });
const kafka = testKafka('trigger-migration');
const admin = kafka.admin();
const producer = kafka.producer();

const PARTITIONS = 3;
const PER_PARTITION = 30;
/** Offsets (the same in each partition) whose values cannot be decoded: an unknown schema id, then a corrupt payload. */
const UNKNOWN_ID_AT = 20;
const CORRUPT_AT = 25;
/** What the replaced application had committed: partition 2 has no commit and starts at the fallback (earliest). */
const GROUP_OFFSETS: Record<number, number | undefined> = { 0: 10, 1: 22, 2: undefined };

const V1 = {
  type: 'record',
  name: 'Payment',
  namespace: 'test.migration',
  fields: [
    { name: 'account', type: 'string' },
    { name: 'amount', type: 'int' },
    { name: 'kind', type: 'string' },
  ],
};
const V2 = { ...V1, fields: [...V1.fields, { name: 'currency', type: 'string', default: 'EUR' }] };

type Payment = { account: string; amount: number; kind: string; currency?: string };
const paymentAt = (p: number, i: number): Payment => ({
  account: `acct-${(i + p) % 4}`,
  amount: 100 * p + i + 1,
  kind: i % 3 === 0 ? 'refund' : 'payment',
});

beforeAll(async () => {
  await Promise.all([admin.connect(), producer.connect()]);
}, REGISTRY_START_TIMEOUT_MS);
afterAll(async () => {
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  for (const c of [ddb, sqs, s3]) c.destroy();
});

/** Produces every partition's records: offsets 0-14 written with schema v1, 15-29 with v2, two of them poison. */
async function produce(registry: SchemaRegistry, topic: string): Promise<void> {
  const subject = `${topic}-value`;
  const { id: v1 } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(V1) }, { subject });
  const { id: v2 } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(V2) }, { subject });
  expect(v2).not.toBe(v1);
  for (let p = 0; p < PARTITIONS; p++) {
    const messages = [];
    for (let i = 0; i < PER_PARTITION; i++) {
      const pay = paymentAt(p, i);
      let value: Buffer;
      if (i === UNKNOWN_ID_AT) value = Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0, 2, 4, 6]);
      else if (i === CORRUPT_AT)
        value = Buffer.concat([(await registry.encode(v2, { ...pay, currency: 'USD' })).subarray(0, 5), Buffer.from([0xff, 0xff])]);
      else if (i < 15) value = await registry.encode(v1, pay);
      else value = await registry.encode(v2, { ...pay, currency: 'USD' });
      messages.push({ key: pay.account, value, partition: p });
    }
    await producer.send({ topic, messages });
  }
}

/** The replaced application's commits, through the group coordinator (no member is active). */
async function commitGroup(group: string, topic: string): Promise<void> {
  const partitions = Object.entries(GROUP_OFFSETS).flatMap(([p, o]) =>
    o === undefined ? [] : [{ partition: Number(p), offset: String(o) }],
  );
  await admin.setOffsets({ groupId: group, topic, partitions });
  const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  expect(committed[0]!.partitions.filter((x) => x.offset !== '-1').length).toBe(2);
}

/** The expected sink: per account, the payments (not refunds) at or after each partition's start that decode. */
function expectedTotals(): Record<string, number> {
  const out: Record<string, number> = {};
  for (let p = 0; p < PARTITIONS; p++) {
    for (let i = GROUP_OFFSETS[p] ?? 0; i < PER_PARTITION; i++) {
      const pay = paymentAt(p, i);
      if (i === UNKNOWN_ID_AT || i === CORRUPT_AT || pay.kind !== 'payment') continue;
      out[pay.account] = (out[pay.account] ?? 0) + pay.amount;
    }
  }
  return out;
}

/** `topic/partition/offset` of every poison record at or after its partition's start. */
function expectedPoison(topic: string): string[] {
  const out: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    for (const i of [UNKNOWN_ID_AT, CORRUPT_AT]) if (i >= (GROUP_OFFSETS[p] ?? 0)) out.push(`${topic}/${p}/${i}`);
  }
  return out.sort();
}

/** Every message in the queue now (short polls: the emulator serves one request at a time), deleted as read. */
async function drainQueue(url: string): Promise<Array<{ body: FailureRecord; key?: string }>> {
  const out = [];
  for (;;) {
    const res = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: ['All'] }),
    );
    if (!res.Messages?.length) return out;
    for (const m of res.Messages) {
      out.push({ body: JSON.parse(m.Body!) as FailureRecord, key: m.MessageAttributes?.['idempotency-key']?.StringValue });
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
}

/** Sums each decoded payment into its account's sink item (an exactly-once fold). */
const decodedTotals = foldHandler<number>({
  map(r) {
    const v = r.decoded?.value as Payment | undefined;
    if (!v) throw new Error(`record ${r.idempotencyKey} reached the handler undecoded`);
    return { key: { pk: v.account }, value: v.amount };
  },
  combine: (a, b) => a + b,
  write: (item, n) => ({ update: { ...item, expression: 'ADD #total :n', names: { '#total': 'total' }, values: { ':n': n } } }),
});

describe('leaving the Kafka trigger', () => {
  it('drains Avro from a registry, filtered, poison to SQS and S3, from the replaced group offsets, exactly', async () => {
    const registryInfo = await testRegistry('open');
    const registry = new SchemaRegistry({ host: registryInfo.url });
    const id = uniqueName('mig');
    const topic = `${id}-payments`;
    const group = `${id}-legacy-app`;
    await createTopicsReady(admin, [{ topic, numPartitions: PARTITIONS }]);
    await produce(registry, topic);
    await commitGroup(group, topic);

    const queueName = uniqueName('mig-dlq');
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: queueName }));
    const bucket = uniqueName('mig-dlq').toLowerCase();
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const sinkTable = await createSinkTable(ddb, 'mig-sink');
    const config = parseDeploymentConfig(
      {
        ledgerTable: uniqueName('mig-ledger'),
        streams: [
          {
            id,
            kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
            topics: [topic],
            startingOffsets: { fromGroup: group, fallback: 'earliest' },
            value: { format: 'avro', registry: { confluent: { url: registryInfo.url } } },
            filters: [{ value: { kind: ['payment'] } }],
            onFailure: { sqs: `arn:aws:sqs:us-east-1:123456789012:${queueName}`, s3: { bucket, prefix: 'failed/' } },
            handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
          },
        ],
      },
      'trigger migration test',
    );
    await ensureLedgerTable(ddb, config.ledgerTable);
    const env = { ...process.env, AWS_ENDPOINT_URL_SQS: aws.endpoint, AWS_ENDPOINT_URL_S3: aws.endpoint };
    const adapters = composeAdapters({ config, env });
    const runner = createLocalRunner({ ...runnerDepsFrom(adapters), handlerFor: () => decodedTotals }, config.streams);
    try {
      // Drain: plan and process until every partition is committed to its end (bounded).
      const deadline = Date.now() + 90_000;
      for (;;) {
        await runner.planOnce();
        await runner.idle();
        const parts = await adapters.ledger.readPartitions(id);
        if (parts.length === PARTITIONS && parts.every((p) => p.committed === PER_PARTITION)) break;
        if (Date.now() > deadline)
          throw new Error(`not drained: ${JSON.stringify(parts.map((p) => [p.partition, p.startOffset, p.committed]))}`);
      }
      const parts = await adapters.ledger.readPartitions(id);
      expect(Object.fromEntries(parts.map((p) => [p.partition, p.startOffset]))).toEqual({ 0: 10, 1: 22, 2: 0 });

      const sink = (await ddb.send(new ScanCommand({ TableName: sinkTable, ConsistentRead: true }))).Items!.map((i) => unmarshall(i));
      expect(Object.fromEntries(sink.map((i) => [i.pk as string, i.total as number]))).toEqual(expectedTotals());
      const stats = runner.stats();
      expect(stats.byStatus.error ?? 0).toBe(0);
      expect(stats.filtered).toBeGreaterThan(0);

      const letters = await adapters.ledger.listDeadLetters(id);
      const poison = expectedPoison(topic);
      expect(letters.map((d) => `${d.topic}/${d.partition}/${d.offset}`).sort()).toEqual(poison);
      expect(letters.every((d) => d.cause === 'undecodable')).toBe(true);

      const messages = await drainQueue(QueueUrl!);
      expect(messages.map((m) => m.key).sort()).toEqual(poison);
      expect(messages.every((m) => m.body.payload !== undefined || m.body.payloadRef !== undefined)).toBe(true);
      const objects = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'failed/' }));
      expect(objects.Contents?.length).toBe(poison.length);
      const first = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: objects.Contents![0]!.Key! }));
      const stored = JSON.parse(await first.Body!.transformToString()) as FailureRecord;
      expect(stored.payload).toBeDefined();

      // Nothing is applied twice: another run over the drained stream changes nothing.
      await runner.planOnce();
      await runner.idle();
      const again = (await ddb.send(new ScanCommand({ TableName: sinkTable, ConsistentRead: true }))).Items!.map((i) => unmarshall(i));
      expect(Object.fromEntries(again.map((i) => [i.pk as string, i.total as number]))).toEqual(expectedTotals());
    } finally {
      await runner.stop();
      await adapters.close();
    }
  }, 180_000);
});
