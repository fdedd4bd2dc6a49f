/**
 * Failure destinations on the real local stack: dead letters of the real planner and processor path
 * delivered to SQS, SNS (read through a subscribed queue), S3 (the emulator serves all three) and a
 * Kafka topic on the broker; a destination that is down or a topic that does not exist leaves the
 * delivery pending in the ledger while the range completes, and a later planner run delivers it; a
 * redelivery overwrites its S3 object; a record over SQS's limit is sent as a reference to its S3
 * object, and a stream keeping only coordinates puts no record anywhere. SQS is never long-polled: the emulator serves one request at a time.
 */
import { createServer } from 'node:net';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { CreateQueueCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { runCli } from '../../lib/cli/program';
import { parseStreamConfig, type StreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createKafkajsDestination, IDEMPOTENCY_KEY_HEADER } from '../../lib/destinations/destination.kafkajs';
import type { FailureRecord } from '../../lib/destinations/message';
import { createS3Destination } from '../../lib/destinations/destination.s3';
import { createSnsDestination } from '../../lib/destinations/destination.sns';
import { createSqsDestination, queueUrlOf } from '../../lib/destinations/destination.sqs';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { planStream } from '../../lib/planner/run';
import type { FailureDestination, FailureDestinations } from '../../lib/ports/failure-destination';
import type { RecordsHandler } from '../../lib/processor/handler-api';
import { processRange, type ProcessResult } from '../../lib/processor/process-range';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

const ACCOUNT = '123456789012'; // the emulator's default account
const REGION = 'us-east-1';
const aws = () => ({
  endpoint: process.env.DYNAMODB_ENDPOINT!,
  region: REGION,
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});
const ddb = testDynamo();
const sqs = new SQSClient(aws());
const sns = new SNSClient(aws());
const s3 = new S3Client({ ...aws(), forcePathStyle: true });
const ledgerTable = uniqueName('dest-ledger');
const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });
const kafka = testKafka('destinations-it');
const admin = kafka.admin();
const producer = kafka.producer();
const metadata = createMetadataCache();
const reader = createKafkajsRangeReader(kafka);
const toClose: FailureDestination[] = [];

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect(), producer.connect()]);
});
afterAll(async () => {
  await Promise.all(toClose.map((d) => d.close?.()));
  await Promise.all([metadata.closeAll(), reader.close(), admin.disconnect(), producer.disconnect()]);
  for (const c of [ddb, sqs, sns, s3]) c.destroy();
});

/** Rejects every record whose value starts with "poison" (at least once: nothing else to do). */
const picky: RecordsHandler = {
  mode: 'at-least-once',
  handle: async (records) => {
    for (const r of records) if (r.value?.toString().startsWith('poison')) throw new Error(`poison at offset ${r.offset}`);
  },
};

async function newQueue(): Promise<{ arn: string; url: string }> {
  const name = uniqueName('dlq');
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  return { arn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`, url: QueueUrl! };
}

/** Every message now in the queue (short polls until one comes back empty), deleted as read. */
async function drain(url: string): Promise<Array<{ body: FailureRecord; attributes: Record<string, string | undefined> }>> {
  const out = [];
  for (;;) {
    const res = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: ['All'] }),
    );
    if (!res.Messages?.length) return out;
    for (const m of res.Messages) {
      const attributes = Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue]));
      out.push({ body: JSON.parse(m.Body!) as FailureRecord, attributes });
      await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
    }
  }
}

/** Waits until the queue holds `n` messages, then reads them all. */
async function receive(url: string, n: number) {
  const count = async (): Promise<number> => {
    const res = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }));
    return Number(res.Attributes?.ApproximateNumberOfMessages);
  };
  await waitFor(`${n} messages in ${url}`, count, { until: (m) => m >= n, timeoutMs: 20_000 });
  return drain(url);
}

/** Every record of partition 0 of `topic`, read by the processor's own reader. */
async function readTopic(topic: string) {
  const [p] = await admin.fetchTopicOffsets(topic);
  const out = [];
  for await (const chunk of reader.read({ topic, partition: 0, from: 0, until: Number(p!.high), isolationLevel: 'read_uncommitted' }))
    out.push(...chunk.records);
  return out;
}

/** The operations CLI, in-process, over a config of `stream` alone on this test's ledger. */
async function cli(stream: StreamConfig, argv: string[]): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const config = { ledgerTable, streams: [stream] };
  const code = await runCli(
    argv,
    { out: (t) => out.push(t), err: (t) => out.push(t) },
    { env: process.env, loadConfig: () => ({ config, env: process.env }) },
  );
  return { code, out: out.join('') };
}

/** A port on which nothing listens (found free, then closed again). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/**
 * A stream over a fresh one-partition topic holding `values`, its dead letters delivered to
 * `onFailure`; `run` plans it and runs each dispatched range with `destinations`, `retry` is a
 * later planner run (an hour ahead: every backoff has passed) with the destinations given then.
 */
function setup(onFailure: NonNullable<StreamConfigInput['onFailure']>, values: string[]) {
  return setupWith(onFailure, values, {});
}

/** `setup` with more stream settings (`deadLetters`, ...). */
async function setupWith(onFailure: NonNullable<StreamConfigInput['onFailure']>, values: string[], extra: Partial<StreamConfigInput>) {
  const id = uniqueName('dest');
  const topic = `${id}-in`;
  await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
  await producer.send({ topic, messages: values.map((value, i) => ({ key: `key-${i}`, value, partition: 0 })) });
  const stream: StreamConfig = parseStreamConfig(
    {
      id,
      kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
      topics: [topic],
      handler: { module: 'noop', mode: 'at-least-once' },
      maxAttempts: 2,
      onFailure,
      ...extra,
    },
    'test',
  );
  const dispatcher = createRecordingDispatcher();
  const planDeps = (destinations?: FailureDestinations) => ({
    ledger,
    dispatcher,
    metadataFor: (s: StreamConfig) => metadata.forStream(s),
    plannerLeaseMs: 60_000,
    ...(destinations ? { destinationsFor: async () => destinations } : {}),
  });
  const run = async (destinations: FailureDestinations): Promise<ProcessResult[]> => {
    await planStream(planDeps(), stream, { dryRun: false, nowMs: Date.now() });
    const results = [];
    for (const range of dispatcher.dispatched.splice(0)) {
      results.push(
        await processRange(
          { ledger, readerFor: async () => reader, handlerFor: () => picky, retryBaseMs: 1, destinationsFor: async () => destinations },
          { stream, range, deadlineAtMs: Date.now() + 120_000 },
        ),
      );
    }
    return results;
  };
  const retry = (destinations: FailureDestinations) =>
    planStream(planDeps(destinations), stream, { dryRun: false, nowMs: Date.now() + 3_600_000 });
  const pending = () => ledger.readPendingDeliveries({ stream: id });
  return { id, topic, stream, run, retry, pending };
}

const sqsDestination = (arn: string, endpoint = aws().endpoint) =>
  createSqsDestination(new SQSClient({ ...aws(), endpoint, maxAttempts: 1 }), arn);

describe('failure destinations on the local stack', () => {
  it('delivers each dead letter to SQS, SNS, S3 and a Kafka topic as documented', async () => {
    const queue = await newQueue();
    const snsQueue = await newQueue();
    const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: uniqueName('dl-topic') }));
    await sns.send(new SubscribeCommand({ TopicArn, Protocol: 'sqs', Endpoint: snsQueue.arn, Attributes: { RawMessageDelivery: 'true' } }));
    const bucket = uniqueName('dl-bucket');
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const dlt = uniqueName('dlt');
    await createTopicsReady(admin, [{ topic: dlt, numPartitions: 1 }]);
    const onFailure = { sqs: queue.arn, sns: TopicArn!, s3: { bucket, prefix: 'failed/' }, kafka: { topic: dlt } };
    const t = await setup(onFailure, ['ok', 'poison', 'ok', 'poison', 'ok']);
    const kafkaDestination = createKafkajsDestination(testKafka('dlt-producer'), { topic: dlt, maxMessageBytes: 1_000_000 });
    toClose.push(kafkaDestination);
    const destinations: FailureDestinations = {
      sqs: sqsDestination(queue.arn),
      sns: createSnsDestination(new SNSClient(aws()), TopicArn!),
      s3: createS3Destination(new S3Client({ ...aws(), forcePathStyle: true }), { bucket, prefix: 'failed/' }),
      kafka: kafkaDestination,
    };

    const [res] = await t.run(destinations);
    expect(res).toMatchObject({ status: 'done', deadLetters: 2, deliveries: { delivered: 8, failed: 0, errors: [] } });
    expect(await t.pending()).toEqual([]);
    const keys = [`${t.topic}/0/1`, `${t.topic}/0/3`];

    // SQS: the failure record, with the idempotency key and stream as message attributes.
    const fromSqs = await receive(queue.url, 2);
    expect(fromSqs.map((m) => m.attributes['idempotency-key']).sort()).toEqual(keys);
    expect(fromSqs.every((m) => m.attributes.stream === t.id)).toBe(true);
    const first = fromSqs.find((m) => m.body.deadLetter.offset === 1)!.body;
    expect(first).toMatchObject({
      version: '1.0',
      requestContext: { requestId: keys[0], condition: 'RetryAttemptsExhausted', approximateInvokeCount: 2 },
      responseContext: { functionError: 'Unhandled', errorMessage: expect.stringMatching(/poison at offset 1$/) },
      KafkaBatchInfo: {
        batchSize: 1,
        bootstrapServers: process.env.KAFKA_BROKERS,
        recordInfo: { topic: t.topic, partition: 0, offset: '1' },
      },
      deadLetter: {
        stream: t.id,
        topic: t.topic,
        partition: 0,
        offset: 1,
        idempotencyKey: keys[0],
        cause: 'handler',
        attempts: 2,
        kept: 'record',
      },
      payload: { records: { [`${t.topic}-0`]: [expect.objectContaining({ offset: 1, key: b64('key-1'), value: b64('poison') })] } },
    });
    expect(Date.parse(first.timestamp)).toBe(first.deadLetter.deadLetteredAtMs);

    // SNS, through a queue subscribed with raw delivery: the same document.
    const fromSns = await receive(snsQueue.url, 2);
    expect(fromSns.map((m) => m.body).sort((a, b) => a.deadLetter.offset - b.deadLetter.offset)).toEqual(
      fromSqs.map((m) => m.body).sort((a, b) => a.deadLetter.offset - b.deadLetter.offset),
    );

    // S3: one object per dead letter at its derived key, holding the record whole.
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'failed/' }));
    expect(listed.Contents?.map((o) => o.Key).sort()).toEqual([
      `failed/${t.id}/${t.topic}/000000/00000000000000000001.json`,
      `failed/${t.id}/${t.topic}/000000/00000000000000000003.json`,
    ]);
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: listed.Contents![0]!.Key! }));
    expect(object.ContentType).toBe('application/json');
    expect(object.Metadata).toEqual({ 'idempotency-key': keys[0], stream: t.id });
    const stored = JSON.parse(await object.Body!.transformToString()) as FailureRecord;
    expect(stored).toEqual(first);

    // Kafka: the dead record's key, the failure record as value, the idempotency key as a header.
    const produced = await readTopic(dlt);
    expect(produced.map((r) => r.key?.toString())).toEqual(['key-1', 'key-3']);
    expect(produced.map((r) => r.headers.find((h) => h.key === IDEMPOTENCY_KEY_HEADER)?.value?.toString())).toEqual(keys);
    expect(JSON.parse(produced[0]!.value!.toString())).toEqual(first);
  });

  it('sends SQS a reference to the S3 object for a record over its limit, and no destination the record when only coordinates are kept', async () => {
    const queue = await newQueue();
    const bucket = uniqueName('dl-bucket');
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const destinations = (): FailureDestinations => ({
      sqs: sqsDestination(queue.arn),
      s3: createS3Destination(new S3Client({ ...aws(), forcePathStyle: true }), { bucket, prefix: '' }),
    });
    const big = `poison-${'x'.repeat(300 * 1024)}`;
    const t = await setup({ sqs: queue.arn, s3: { bucket } }, [big]);
    expect((await t.run(destinations()))[0]).toMatchObject({ deadLetters: 1, deliveries: { delivered: 2, failed: 0 } });
    const [message] = await receive(queue.url, 1);
    const objectKey = `${t.id}/${t.topic}/000000/00000000000000000000.json`;
    expect(message!.body.payload).toBeUndefined();
    expect(message!.body.payloadRef).toEqual({
      s3: { bucket, key: objectKey },
      deadLetter: { stream: t.id, topic: t.topic, partition: 0, offset: 0 },
    });
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: objectKey }));
    const whole = JSON.parse(await object.Body!.transformToString()) as FailureRecord;
    // The ledger keeps 200 KB of the value; the object holds it whole.
    expect(Buffer.from(whole.payload!.records[`${t.topic}-0`]![0]!.value!, 'base64').toString()).toBe(big);

    const secret = 'poison-card-4111111111111111';
    const c = await setupWith({ sqs: queue.arn, s3: { bucket, prefix: 'pii/' } }, [secret], { deadLetters: { keep: 'coordinates' } });
    expect((await c.run(destinations()))[0]).toMatchObject({ deadLetters: 1, deliveries: { delivered: 2 } });
    const [bare] = await receive(queue.url, 1);
    expect(bare!.body).toMatchObject({ deadLetter: { kept: 'coordinates', offset: 0 } });
    expect(bare!.body.payload).toBeUndefined();
    expect(bare!.body.payloadRef).toBeUndefined();
    const stored = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `pii/${c.id}/${c.topic}/000000/00000000000000000000.json` }));
    const text = await stored.Body!.transformToString();
    for (const leaked of [secret, 'key-0', Buffer.from(secret).toString('base64'), Buffer.from('key-0').toString('base64')]) {
      expect(text).not.toContain(leaked);
      expect(JSON.stringify(bare!.body)).not.toContain(leaked);
    }
  });

  it('keeps a delivery to an unreachable SQS endpoint pending; the range completes and a later planner run delivers it once', async () => {
    const queue = await newQueue();
    const t = await setup({ sqs: queue.arn }, ['poison', 'ok']);
    const down = sqsDestination(queue.arn, `http://127.0.0.1:${await closedPort()}`);
    const [res] = await t.run({ sqs: down });
    // The fault fired: the first attempt failed against the dead endpoint.
    expect(res).toMatchObject({ status: 'done', deadLetters: 1, deliveries: { delivered: 0, failed: 1 } });
    expect(res!.deliveries!.errors[0]).toMatch(new RegExp(`^${t.topic}/0/0 -> SQS queue ${queue.arn}: .*ECONNREFUSED`));
    expect(await t.pending()).toEqual([
      expect.objectContaining({
        topic: t.topic,
        partition: 0,
        offset: 0,
        destination: 'sqs',
        attempts: 1,
        lastError: expect.stringContaining('ECONNREFUSED'),
      }),
    ]);
    expect((await ledger.readPartitions(t.id))[0]).toMatchObject({ committed: 2 });
    expect(await drain(queue.url)).toEqual([]);
    // The CLI shows what is owed: the destination with its failed attempt, and the last error.
    const listed = await cli(t.stream, ['dead-letters', t.id]);
    expect(listed.out).toContain('1 delivery(ies) to failure destinations pending');
    expect(listed.out).toMatch(new RegExp(`${t.topic}/0/0 .* sqs\\(1\\) `));
    expect(listed.out).toMatch(/last delivery error: SQS queue .*ECONNREFUSED/);
    expect(JSON.parse((await cli(t.stream, ['status', t.id, '--json'])).out).totals).toMatchObject({ deadLetters: 1, undelivered: 1 });

    const later = await t.retry({ sqs: sqsDestination(queue.arn) });
    expect(later.deliveries).toMatchObject({ delivered: 1, failed: 0 });
    expect(await t.pending()).toEqual([]);
    const got = await receive(queue.url, 1);
    expect(got.map((m) => m.attributes['idempotency-key'])).toEqual([`${t.topic}/0/0`]);
    expect(JSON.parse((await cli(t.stream, ['status', t.id, '--json'])).out).totals).toMatchObject({ deadLetters: 1, undelivered: 0 });
    // Nothing left to retry: the next run delivers nothing again.
    expect((await t.retry({ sqs: sqsDestination(queue.arn) })).deliveries).toMatchObject({ delivered: 0, failed: 0 });
    expect(await drain(queue.url)).toEqual([]);
  });

  it('keeps a delivery to a Kafka topic that does not exist pending (never auto-created) until the topic is created', async () => {
    const dlt = uniqueName('dlt-missing');
    const t = await setup({ kafka: { topic: dlt } }, ['ok', 'poison']);
    const destination = createKafkajsDestination(testKafka('dlt-missing'), { topic: dlt, maxMessageBytes: 1_000_000 });
    toClose.push(destination);
    const [res] = await t.run({ kafka: destination });
    expect(res).toMatchObject({ status: 'done', deadLetters: 1, deliveries: { delivered: 0, failed: 1 } });
    expect(res!.deliveries!.errors[0]).toMatch(new RegExp(`Kafka topic ${dlt}: .*UNKNOWN_TOPIC_OR_PARTITION: the topic does not exist`));
    expect((await admin.listTopics()).includes(dlt)).toBe(false);
    expect(await t.pending()).toEqual([expect.objectContaining({ offset: 1, destination: 'kafka', attempts: 1 })]);

    await createTopicsReady(admin, [{ topic: dlt, numPartitions: 1 }]);
    const later = await t.retry({ kafka: destination });
    expect(later.deliveries).toMatchObject({ delivered: 1, failed: 0 });
    const produced = await readTopic(dlt);
    expect(produced.map((r) => r.key?.toString())).toEqual(['key-1']);
    expect(await t.pending()).toEqual([]);
  });

  it('overwrites the S3 object when a dead letter is delivered again', async () => {
    const bucket = uniqueName('dl-bucket');
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const t = await setup({ s3: { bucket, prefix: '' } }, ['poison']);
    const real = createS3Destination(new S3Client({ ...aws(), forcePathStyle: true }), { bucket, prefix: '' });
    let puts = 0;
    // The object is written, then the acknowledgement is lost: the delivery stays pending and is made again.
    const lossy: FailureDestination = {
      ...real,
      async deliver(d) {
        await real.deliver(d);
        puts += 1;
        if (puts === 1) throw new Error('simulated lost acknowledgement');
      },
    };
    const [res] = await t.run({ s3: lossy });
    expect(res).toMatchObject({ status: 'done', deliveries: { delivered: 0, failed: 1 } });
    expect(puts).toBe(1);
    const later = await t.retry({ s3: lossy });
    expect(later.deliveries).toMatchObject({ delivered: 1 });
    expect(puts).toBe(2);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
    expect(listed.Contents?.map((o) => o.Key)).toEqual([`${t.id}/${t.topic}/000000/00000000000000000000.json`]);
    expect(await t.pending()).toEqual([]);
  });
});

function b64(s: string): string {
  return Buffer.from(s).toString('base64');
}

// The queue URL the adapter derives addresses the queue the emulator created.
test('queue URLs from ARNs', () => {
  expect(queueUrlOf(`arn:aws:sqs:${REGION}:${ACCOUNT}:q`)).toBe(`https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/q`);
});
