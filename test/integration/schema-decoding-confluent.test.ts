/**
 * Schema decoding against a real Confluent-compatible registry (the local stack's Apicurio Registry,
 * its /apis/ccompat/v7 API, with HTTP basic auth) on the real processor path, with records written by
 * @kafkajs/confluent-schema-registry's `encode` (the producer-side library; the schemas registered
 * through it too): Avro across a schema evolution, JSON Schema, Protobuf with an imported reference;
 * an unknown schema id, a corrupt payload and an invalid JSON value dead-lettered while the range
 * goes on; a registry refusing the password or not answering failing the attempt instead.
 *
 * The library's Protobuf `encode` writes no message indexes (Confluent's serializers do): its records
 * are shown to be dead-lettered, and records framed as Confluent's Java serializer frames them (the
 * library's payload with the message index path put in) to decode.
 */
import { createServer, type AddressInfo } from 'node:net';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import * as protobuf from 'protobufjs';
import { parseStreamConfig, type StreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { createSecretResolver, type SecretResolver } from '../../lib/kafka/secrets';
import { readSecretsManager } from '../../lib/kafka/secrets.aws';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { planStream } from '../../lib/planner/run';
import type { HandlerRecord, RecordsHandler } from '../../lib/processor/handler-api';
import { processRange } from '../../lib/processor/process-range';
import { recordStagesFor } from '../../lib/processor/record-stages';
import { createSchemaRegistries } from '../../lib/schemas/registries';
import { confluentMessageIndexes } from '../../lib/schemas/wire';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { ORDER_V1, ORDER_V2 } from '../support/order-schemas';
import { REGISTRY_START_TIMEOUT_MS, testRegistry, type TestRegistry } from '../support/registry';

const ddb = testDynamo();
const ledgerTable = uniqueName('decode-cf-ledger');
const kafka = testKafka('schema-decoding-confluent-it');
const admin = kafka.admin();
const producer = kafka.producer();
const metadata = createMetadataCache();
const reader = createKafkajsRangeReader(kafka);
const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });
const PASSWORD_REF = { env: 'TEST_REGISTRY_PASSWORD' };

let registry: TestRegistry;
let USER: { username: string; password: string };
let client: SchemaRegistry;

beforeAll(async () => {
  // The run's guarded registry (started by the first file that asks, stopped by global teardown).
  registry = await testRegistry('basic-auth');
  USER = registry.basicAuth!;
  client = new SchemaRegistry({ host: registry.url, auth: USER });
  await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect(), producer.connect()]);
}, REGISTRY_START_TIMEOUT_MS);
afterAll(async () => {
  await Promise.all([metadata.closeAll(), reader.close(), admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
});

/** A stream decoding values from `url` (default: the local registry) with `password` read from the given variables. */
async function setup(
  value: Partial<NonNullable<StreamConfigInput['value']>> & { format: 'avro' | 'protobuf' | 'json-schema' },
  env: NodeJS.ProcessEnv | SecretResolver = { TEST_REGISTRY_PASSWORD: USER.password },
) {
  const id = uniqueName('deccf');
  const topic = `${id}-events`;
  await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
  const stream: StreamConfig = parseStreamConfig(
    {
      id,
      kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
      topics: [topic],
      handler: { module: 'noop', mode: 'at-least-once' },
      value: { registry: { confluent: { url: registry.url, username: USER.username, password: PASSWORD_REF } }, ...value },
    },
    'test',
  );
  const registries = createSchemaRegistries({ resolveSecret: typeof env === 'function' ? env : createSecretResolver({ env }) });
  const seen: HandlerRecord[] = [];
  const handler: RecordsHandler = { mode: 'at-least-once', handle: (records) => void seen.push(...records) };
  const dispatcher = createRecordingDispatcher();
  const run = async () => {
    if (dispatcher.dispatched.length === 0) {
      await planStream({ ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 60_000 }, stream, {
        dryRun: false,
        nowMs: Date.now(),
      });
    }
    return processRange(
      {
        ledger,
        readerFor: async () => reader,
        handlerFor: () => handler,
        maxChunkRecords: 4,
        stagesFor: (s, at) => recordStagesFor(s, { ...at, registries }),
      },
      { stream, range: dispatcher.dispatched[0]!, deadlineAtMs: Date.now() + 120_000 },
    );
  };
  const produce = (values: Buffer[]) => producer.send({ topic, messages: values.map((v) => ({ value: v })) });
  return { id, seen, run, produce, deadLetters: () => ledger.listDeadLetters(id), range: () => ledger.readOpenRanges(id) };
}

describe('Confluent-compatible registry (Apicurio), records written by @kafkajs/confluent-schema-registry', () => {
  it('decodes Avro across a schema evolution, dead-letters an unknown id and a corrupt payload, and the range goes on', async () => {
    const subject = uniqueName('orders-value');
    const { id: v1 } = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(ORDER_V1) }, { subject });
    const a = await client.encode(v1, { id: 'o-1', cents: 100 });
    const { id: v2 } = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(ORDER_V2) }, { subject });
    expect(v2).not.toBe(v1);
    const b = await client.encode(v2, { id: 'o-2', cents: 200, note: 'gift' });
    const c = await client.encode(v1, { id: 'o-3', cents: 300 });
    const unknown = Buffer.from(a);
    unknown.writeUInt32BE(987_654, 1);
    const corrupt = b.subarray(0, b.length - 3);

    const t = await setup({ format: 'avro' });
    await t.produce([a, unknown, b, corrupt, c]);
    expect(await t.run()).toMatchObject({ status: 'done', records: 3, deadLetters: 2, progress: 5 });
    expect(t.seen.map((r) => [r.offset, r.decoded?.value, r.decoded?.valueSchema])).toEqual([
      [0, { id: 'o-1', cents: 100 }, { registry: 'confluent', id: String(v1), format: 'avro' }],
      [2, { id: 'o-2', cents: 200, note: 'gift' }, { registry: 'confluent', id: String(v2), format: 'avro' }],
      [4, { id: 'o-3', cents: 300 }, { registry: 'confluent', id: String(v1), format: 'avro' }],
    ]);
    // The producer library decodes them the same way.
    for (const r of t.seen) expect(r.decoded?.value).toEqual({ ...(await client.decode(r.value!)) });
    const where = `UNDECODABLE: value (confluent registry ${registry.url})`;
    expect((await t.deadLetters()).map((dl) => [dl.offset, dl.cause, dl.error])).toEqual([
      [1, 'undecodable', expect.stringMatching(new RegExp(`^${escape(where)}: unknown schema id 987654 \\(40403`))],
      [3, 'undecodable', `${where}: not Avro of its schema (truncated buffer)`],
    ]);
  });

  it("reads the registry password from a Secrets Manager secret (the emulator's), once per container", async () => {
    const secrets = new SecretsManagerClient({
      endpoint: process.env.DYNAMODB_ENDPOINT,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      const secret = await secrets.send(
        new CreateSecretCommand({ Name: uniqueName('registry/app'), SecretString: JSON.stringify({ password: USER.password }) }),
      );
      let storeReads = 0;
      const resolve = createSecretResolver({ readSecretsManager: (id) => (storeReads++, readSecretsManager(secrets, id)) });
      const subject = uniqueName('secret-orders-value');
      const { id: v1 } = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(ORDER_V1) }, { subject });
      const password = { secretArn: secret.ARN!, field: 'password' };
      const t = await setup({ format: 'avro', registry: { confluent: { url: registry.url, username: USER.username, password } } }, resolve);
      await t.produce([await client.encode(v1, { id: 'o-1', cents: 1 }), await client.encode(v1, { id: 'o-2', cents: 2 })]);
      expect(await t.run()).toMatchObject({ status: 'done', records: 2, deadLetters: 0 });
      expect(t.seen.map((r) => r.decoded?.value)).toEqual([
        { id: 'o-1', cents: 1 },
        { id: 'o-2', cents: 2 },
      ]);
      expect(storeReads).toBe(1);
    } finally {
      secrets.destroy();
    }
  });

  it('decodes JSON Schema records and dead-letters a value that does not validate', async () => {
    const schema = JSON.stringify({
      type: 'object',
      properties: { id: { type: 'string' }, cents: { type: 'integer' } },
      required: ['id', 'cents'],
    });
    const { id } = await client.register({ type: SchemaType.JSON, schema }, { subject: uniqueName('orders-json') });
    const good = await client.encode(id, { id: 'o-1', cents: 5 });
    // encode validates; a producer that does not (or another library) can still write this:
    const invalid = Buffer.concat([good.subarray(0, 5), Buffer.from('{"id":"o-2"}')]);
    const t = await setup({ format: 'json-schema' });
    await t.produce([good, invalid, good]);
    expect(await t.run()).toMatchObject({ status: 'done', records: 2, deadLetters: 1 });
    expect(t.seen.map((r) => r.decoded?.value)).toEqual([
      { id: 'o-1', cents: 5 },
      { id: 'o-1', cents: 5 },
    ]);
    expect((await t.deadLetters())[0]?.error).toMatch(
      /: does not validate against its JSON Schema: value must have required property 'cents'$/,
    );
  });

  it("decodes Protobuf framed with Confluent's message indexes, resolving an imported reference; the library's index-less records are dead-lettered", async () => {
    const moneySubject = uniqueName('money');
    const money = 'syntax = "proto3";\npackage shop.common;\nmessage Money { int64 cents = 1; string currency = 2; }\n';
    await client.register({ type: SchemaType.PROTOBUF, schema: money }, { subject: moneySubject });
    const payments = `syntax = "proto3";
package shop.v1;
import "money.proto";
message Payment { string id = 1; shop.common.Money total = 2; }
message Refund { string payment_id = 1; shop.common.Money amount = 2; }
`;
    const { id } = await client.register(
      { type: SchemaType.PROTOBUF, schema: payments, references: [{ name: 'money.proto', subject: moneySubject, version: 1 }] },
      { subject: uniqueName('payments') },
    );
    // The library frames magic byte + id + message, without the message indexes Confluent's serializers write between.
    const payment = await client.encode(id, { id: 'p-1', total: { cents: 250, currency: 'EUR' } });
    const withIndexes = (path: number[], encoded: Buffer) =>
      Buffer.concat([encoded.subarray(0, 5), confluentMessageIndexes(path), encoded.subarray(5)]);
    // The library encodes only a file's first message: the Refund is encoded with protobufjs, which it uses.
    const root = protobuf.parse(money, { keepCase: true }).root;
    protobuf.parse(payments, root, { keepCase: true });
    const Refund = root.lookupType('shop.v1.Refund');
    const refundBody = Buffer.from(Refund.encode(Refund.fromObject({ payment_id: 'p-1', amount: { cents: 1000 } })).finish());

    const t = await setup({ format: 'protobuf' });
    await t.produce([
      withIndexes([0], payment),
      payment,
      Buffer.concat([payment.subarray(0, 5), confluentMessageIndexes([1]), refundBody]),
    ]);
    expect(await t.run()).toMatchObject({ status: 'done', records: 2, deadLetters: 1 });
    expect(t.seen.map((r) => [r.decoded?.valueSchema?.message, r.decoded?.value])).toEqual([
      ['shop.v1.Payment', { id: 'p-1', total: { cents: '250', currency: 'EUR' } }],
      ['shop.v1.Refund', { payment_id: 'p-1', amount: { cents: '1000', currency: '' } }],
    ]);
    expect((await t.deadLetters())[0]).toMatchObject({ offset: 1, cause: 'undecodable' });
  });

  it('fails the attempt, dead-lettering nothing, when the registry refuses the password or does not answer', async () => {
    const { id } = await client.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(ORDER_V1) },
      { subject: uniqueName('orders-auth') },
    );
    const record = await client.encode(id, { id: 'o-1', cents: 1 });

    const refused = await setup({ format: 'avro' }, { TEST_REGISTRY_PASSWORD: 'wrong' });
    await refused.produce([record]);
    await expect(refused.run()).rejects.toThrow(
      `stream ${refused.id}: value: confluent registry ${registry.url}: GET /schemas/ids/${id}: 401: credentials refused; check value.registry.confluent.username and value.registry.confluent.password`,
    );
    expect(await refused.deadLetters()).toEqual([]);
    expect((await refused.range())[0]).toMatchObject({ status: 'failed', progress: 0 });

    const down = await setup({
      format: 'avro',
      registry: { confluent: { url: `http://127.0.0.1:${await closedPort()}/apis/ccompat/v7` } },
    });
    await down.produce([record]);
    await expect(down.run()).rejects.toThrow(
      /GET \/schemas\/ids\/\d+: no answer \(fetch failed: ECONNREFUSED\); check value\.registry\.confluent\.url$/,
    );
    expect(await down.deadLetters()).toEqual([]);
    expect(down.seen).toEqual([]);
  });
});

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
