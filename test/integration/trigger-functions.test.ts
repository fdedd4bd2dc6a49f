/**
 * Functions written for Lambda's Kafka trigger, unchanged (test/fixtures/trigger-functions/), run
 * through `handler.triggerFunction` by `npm start -- --config` (runConfigFile: the real planner and
 * processor on the local broker and the DynamoDB emulator): an `MSKHandler` whose events are compared
 * field by field with the records produced (keys, values and headers byte-exact, null keys and
 * values, repeated header names), Powertools' `kafkaConsumer` with JSON and with Avro values, a
 * partial batch response (the records before the failed one count, the rest are retried from it),
 * and a function throwing on a poison record (dead-lettered, the others handled once).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as avro from 'avsc';
import type { MSKEvent } from 'aws-lambda';
import type { IHeaders } from 'kafkajs';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { runConfigFile, type RunConfigSummary } from '../../lib/local/run-config';
import { ORDER_SCHEMA } from '../fixtures/trigger-functions/powertools-avro';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

jest.setTimeout(180_000);

const FIXTURES = resolve(__dirname, '..', 'fixtures', 'trigger-functions');
const CLUSTER_ARN = 'arn:aws:kafka:us-east-1:123456789012:cluster/orders/11111111-2222-3333-4444-555555555555-1';
const ddb = testDynamo();
const kafka = testKafka('trigger-functions-test');
const admin = kafka.admin();
const producer = kafka.producer({ allowAutoTopicCreation: false });
const dir = mkdtempSync(join(tmpdir(), 'trigger-functions-'));
const calls = () => (globalThis as unknown as { __triggerCalls?: Record<string, unknown[]> }).__triggerCalls ?? {};

type Produced = { partition: number; key: Buffer | null; value: Buffer | null; headers?: IHeaders };

beforeAll(async () => {
  await Promise.all([admin.connect(), producer.connect()]);
});
afterAll(async () => {
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function topicWith(messages: Produced[], partitions = 2): Promise<string> {
  const topic = uniqueName('trigger-fn');
  await createTopicsReady(admin, [{ topic, numPartitions: partitions }]);
  await producer.send({ topic, messages });
  return topic;
}

/** Runs one stream of `fixture`'s function over `topic` until caught up. */
async function run(topic: string, fixture: string, stream: Record<string, unknown> = {}): Promise<RunConfigSummary> {
  const file = join(dir, `${uniqueName('streams')}.json`);
  const { triggerFunction, ...rest } = stream;
  const config = {
    ledgerTable: uniqueName('trigger-fn-ledger'),
    streams: [
      {
        id: 'legacy',
        kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
        topics: [topic],
        triggerIntervalMs: 1000,
        maxAttempts: 3,
        processor: { timeoutMs: 30_000 },
        handler: { module: join(FIXTURES, `${fixture}.ts`), mode: 'at-least-once', triggerFunction: triggerFunction ?? {} },
        ...rest,
      },
    ],
  };
  writeFileSync(file, JSON.stringify(config));
  const res = await runConfigFile(
    { configFile: file, untilCaughtUp: true, json: true, progress: 'off', timeoutMs: 60_000, maxConcurrency: 4 },
    {
      kafkaBrokers: process.env.KAFKA_BROKERS!,
      dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT!,
      env: process.env,
      out: () => undefined,
      err: () => undefined,
    },
  );
  expect(res.summary).toMatchObject({ caughtUp: true, parked: [], failedPartitions: [] });
  expect(res.exitCode).toBe(0);
  return { ...res.summary, ledgerTable: config.ledgerTable };
}

const b64 = (b: Buffer | null): string | null => (b === null ? null : b.toString('base64'));

describe("functions from Lambda's Kafka trigger, unchanged", () => {
  it('an MSKHandler gets the events the trigger builds: records by topic-partition, base64 keys and values, headers as byte lists', async () => {
    const produced: Produced[] = [
      { partition: 0, key: Buffer.from('k1'), value: Buffer.from('{"a":1}'), headers: { h: ['x', 'y'], other: 'z' } },
      { partition: 0, key: null, value: Buffer.from('no key') },
      { partition: 0, key: Buffer.from('tombstone'), value: null },
      { partition: 1, key: Buffer.from([0, 1, 2]), value: Buffer.from([0xff, 0x00, 0x10]) },
    ];
    const topic = await topicWith(produced);
    await run(topic, 'msk-handler', { triggerFunction: { eventSource: 'aws:kafka', eventSourceArn: CLUSTER_ARN } });
    const got = calls()['msk-handler'] as Array<{ event: MSKEvent; remainingMs: number; functionName: string }>;
    expect(got.length).toBeGreaterThanOrEqual(1);
    for (const c of got) {
      expect(c.event).toMatchObject({ eventSource: 'aws:kafka', eventSourceArn: CLUSTER_ARN, bootstrapServers: process.env.KAFKA_BROKERS });
      expect(c.remainingMs).toBeGreaterThan(0);
      expect(c.remainingMs).toBeLessThanOrEqual(30_000);
    }
    const records = got.flatMap((c) => Object.entries(c.event.records).flatMap(([k, rs]) => rs.map((r) => ({ k, r }))));
    expect(records.map(({ k, r }) => [k, r.partition, r.offset])).toEqual([
      [`${topic}-0`, 0, 0],
      [`${topic}-0`, 0, 1],
      [`${topic}-0`, 0, 2],
      [`${topic}-1`, 1, 0],
    ]);
    const byPartition = [produced.filter((p) => p.partition === 0), produced.filter((p) => p.partition === 1)];
    for (const { r } of records) {
      const p = byPartition[r.partition]![r.offset]!;
      expect(r.topic).toBe(topic);
      expect(r.timestampType).toBe('CREATE_TIME');
      expect(typeof r.timestamp).toBe('number');
      expect(r.key ?? null).toEqual(b64(p.key));
      expect(r.value ?? null).toEqual(b64(p.value));
    }
    // Headers: one object per header, in order, a repeated name repeated, values as byte lists.
    expect(records[0]!.r.headers).toEqual([{ h: [...Buffer.from('x')] }, { h: [...Buffer.from('y')] }, { other: [...Buffer.from('z')] }]);
    expect(records[1]!.r.headers).toEqual([]);
  });

  it("Powertools' kafkaConsumer decodes JSON and Avro values from the events", async () => {
    const orders = [
      { id: 'o1', amount: 5 },
      { id: 'o2', amount: 7 },
    ];
    const jsonTopic = await topicWith(
      orders.map((o, i) => ({ partition: i, key: Buffer.from(o.id), value: Buffer.from(JSON.stringify(o)) })),
    );
    await run(jsonTopic, 'powertools-json');
    const json = calls()['powertools-json'] as Array<{ key: string; value: unknown }>;
    expect(json.map((c) => c.value).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(orders);
    expect(json.map((c) => c.key).sort()).toEqual(['o1', 'o2']);

    const type = avro.Type.forSchema(JSON.parse(ORDER_SCHEMA) as avro.Schema);
    const avroTopic = await topicWith(orders.map((o, i) => ({ partition: i, key: Buffer.from(o.id), value: type.toBuffer(o) })));
    await run(avroTopic, 'powertools-avro');
    const decoded = calls()['powertools-avro'] as Array<{ key: string; value: unknown }>;
    expect(decoded.map((c) => c.value).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(orders);
  });

  it('a partial batch response: the records before the failed one count, and the function is called again from it', async () => {
    const values = ['a', 'b', 'flaky', 'c', 'd'];
    const topic = await topicWith(
      values.map((v) => ({ partition: 0, key: null, value: Buffer.from(v) })),
      1,
    );
    const summary = await run(topic, 'partial', { triggerFunction: { eventSource: 'aws:kafka', eventSourceArn: CLUSTER_ARN } });
    const handled = calls().partial as Array<{ partition: string; offset: number; value: string }>;
    // Each record handled exactly once, in order; nothing dead-lettered.
    expect(handled.filter((h) => h.partition === `${topic}-0`).map((h) => h.value)).toEqual(values);
    expect(summary.deadLetters).toBe(0);
    const ledger = createDynamoLedger({ client: ddb, tableName: summary.ledgerTable });
    expect((await ledger.readPartitions('legacy')).map((p) => p.committed)).toEqual([values.length]);
  });

  it('a function throwing on a poison record: the record is dead-lettered after its attempts, every other one handled once', async () => {
    const values = ['a', 'b', 'poison', 'c'];
    const topic = await topicWith(
      values.map((v) => ({ partition: 0, key: null, value: Buffer.from(v) })),
      1,
    );
    const summary = await run(topic, 'poison');
    const handled = calls().poison as Array<{ offset: number; value: string }>;
    expect(handled.map((h) => h.value)).toEqual(['a', 'b', 'c']);
    expect(summary.deadLetters).toBe(1);
    const ledger = createDynamoLedger({ client: ddb, tableName: summary.ledgerTable });
    const dead = await ledger.listDeadLetters('legacy');
    expect(dead).toEqual([
      expect.objectContaining({ offset: 2, attempts: 3, error: expect.stringContaining('cannot handle a poison record') }),
    ]);
  });
});
