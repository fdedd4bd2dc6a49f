/**
 * Schema decoding on the real processor path (planner, processRange, the broker, the ledger on the
 * emulator) with records written by the registries' own producer-side libraries:
 *
 * - AWS Glue: the schemas live in the local stack's emulator (moto's Glue API), and records are
 *   written by AWS's Glue serializer (Java, test/support/glue-serde.ts), which registers each schema
 *   version itself. Avro across a schema evolution (two versions in one range, zlib-compressed and
 *   not), Protobuf (a message that is not the file's first, so Glue's message index is exercised)
 *   and JSON Schema.
 * - Undecodable records between good ones (an unknown schema version id, a corrupt payload, a
 *   payload that is not Glue-framed, JSON its schema does not validate) are dead-lettered with their
 *   reason, the range completes, and the records after them reach the handler.
 * - `npm start -- --config` reads Glue schemas from the local stack's emulator by itself, and an
 *   exactly-once handler file folds decoded values into its sink table.
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { CreateRegistryCommand, GlueClient } from '@aws-sdk/client-glue';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseStreamConfig, type StreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { runConfigFile } from '../../lib/local/run-config';
import { planStream } from '../../lib/planner/run';
import type { HandlerRecord, RecordsHandler } from '../../lib/processor/handler-api';
import { processRange } from '../../lib/processor/process-range';
import { recordStagesFor } from '../../lib/processor/record-stages';
import { createSchemaRegistries } from '../../lib/schemas/registries';
import { glueSerialize, type GlueSerdeInput } from '../support/glue-serde';
import { createTopicsReady, uniqueName } from '../support/env';
import { processorTestBed } from '../support/processor-bed';
import { ORDER_V1, ORDER_V2 } from '../support/order-schemas';

const { ddb, admin, producer, metadata, reader, ledger } = processorTestBed('decode');

const endpoint = process.env.DYNAMODB_ENDPOINT!;
const REGION = 'us-east-1';
const glue = new GlueClient({ endpoint, region: REGION, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
// The processor's registries as the local runtime makes them: Glue through AWS_ENDPOINT_URL_GLUE.
const registries = createSchemaRegistries({ env: { AWS_ENDPOINT_URL_GLUE: endpoint } });

afterAll(() => {
  glue.destroy();
});

/** A stream over a fresh one-partition topic decoding values as `value` says; `run` plans and processes its range. */
async function setup(value: StreamConfigInput['value']) {
  const id = uniqueName('dec');
  const topic = `${id}-events`;
  await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
  const stream: StreamConfig = parseStreamConfig(
    {
      id,
      kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
      topics: [topic],
      handler: { module: 'noop', mode: 'at-least-once' },
      value,
    },
    'test',
  );
  const seen: HandlerRecord[] = [];
  const handler: RecordsHandler = { mode: 'at-least-once', handle: (records) => void seen.push(...records) };
  const run = async () => {
    const dispatcher = createRecordingDispatcher();
    await planStream({ ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 60_000 }, stream, {
      dryRun: false,
      nowMs: Date.now(),
    });
    expect(dispatcher.dispatched).toHaveLength(1);
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
  const produce = (values: Buffer[]) => producer.send({ topic, messages: values.map((value) => ({ value })) });
  return { id, topic, seen, run, produce, deadLetters: () => ledger.listDeadLetters(id) };
}

async function glueRegistry(): Promise<{ endpoint: string; region: string; registryName: string }> {
  const registryName = uniqueName('reg');
  await glue.send(new CreateRegistryCommand({ RegistryName: registryName }));
  return { endpoint, region: REGION, registryName };
}

/** The schema version id a Glue-framed value names (bytes 2-17). */
function versionIdOf(bytes: Buffer): string {
  const hex = bytes.subarray(2, 18).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

describe('Glue Schema Registry records, written by the Glue serializer', () => {
  it('decodes Avro across a schema evolution, zlib or not, and dead-letters what cannot be decoded while the range goes on', async () => {
    const registry = await glueRegistry();
    const avro = (schema: object, value: object, compression: 'NONE' | 'ZLIB' = 'NONE'): GlueSerdeInput => ({
      format: 'AVRO',
      schemaName: 'orders-value',
      schema: JSON.stringify(schema),
      value,
      compression,
    });
    const [a, b, c, d] = await glueSerialize(registry, [
      avro(ORDER_V1, { id: 'o-1', cents: 100 }),
      avro(ORDER_V1, { id: 'o-2', cents: 200 }, 'ZLIB'),
      avro(ORDER_V2, { id: 'o-3', cents: 300, note: { string: 'gift' } }),
      avro(ORDER_V2, { id: 'o-4', cents: 400, note: null }, 'ZLIB'),
    ]);
    expect([a![1], b![1]]).toEqual([0, 5]); // the serializer's compression byte: none, zlib
    const v1 = versionIdOf(a!);
    const v2 = versionIdOf(c!);
    expect(v2).not.toBe(v1);
    expect(versionIdOf(b!)).toBe(v1);
    const unknownId = Buffer.concat([a!.subarray(0, 2), Buffer.from(randomUUID().replace(/-/g, ''), 'hex'), a!.subarray(18)]);
    const corrupt = a!.subarray(0, a!.length - 2);
    const notGlue = Buffer.from('{"id":"o-x","cents":1}');

    const t = await setup({ format: 'avro', registry: { glue: { registryName: registry.registryName, region: REGION } } });
    await t.produce([a!, unknownId, b!, corrupt, c!, notGlue, d!]);
    expect(await t.run()).toMatchObject({ status: 'done', records: 4, deadLetters: 3, progress: 7 });

    expect(t.seen.map((r) => [r.offset, r.decoded?.value, r.decoded?.valueSchema?.version])).toEqual([
      [0, { id: 'o-1', cents: 100 }, 1],
      [2, { id: 'o-2', cents: 200 }, 1],
      [4, { id: 'o-3', cents: 300, note: 'gift' }, 2],
      [6, { id: 'o-4', cents: 400, note: null }, 2],
    ]);
    expect(t.seen[0]!.decoded?.valueSchema).toEqual({ registry: 'glue', id: v1, format: 'avro', name: 'orders-value', version: 1 });
    expect(t.seen[0]!.value).toEqual(a); // the raw bytes stay beside the decoded value
    const where = `UNDECODABLE: value (glue registry ${registry.registryName} (${REGION}))`;
    expect((await t.deadLetters()).map((dl) => [dl.offset, dl.cause, dl.error])).toEqual([
      [
        1,
        'undecodable',
        expect.stringMatching(
          new RegExp(`^${escape(where)}: unknown schema version id ${versionIdOf(unknownId)} \\(EntityNotFoundException`),
        ),
      ],
      [3, 'undecodable', `${where}: not Avro of its schema (truncated buffer)`],
      [5, 'undecodable', `${where}: header version byte 123, expected 3 (not a Glue schema registry payload)`],
    ]);
  });

  it("decodes Protobuf messages by Glue's message index, including one that is not the file's first", async () => {
    const registry = await glueRegistry();
    const proto = `syntax = "proto3";
package shop.v1;
message Order {
  string id = 1;
  map<string, string> tags = 2;
  message Line { string sku = 1; int32 qty = 2; }
}
message Refund { string order_id = 1; int64 cents = 2; Reason reason = 3; enum Reason { OTHER = 0; DAMAGED = 1; } }
`;
    const values = await glueSerialize(registry, [
      {
        format: 'PROTOBUF',
        schemaName: 'refunds',
        schema: proto,
        message: 'shop.v1.Refund',
        value: { order_id: 'o-1', cents: 250, reason: 'DAMAGED' },
      },
      { format: 'PROTOBUF', schemaName: 'refunds', schema: proto, message: 'shop.v1.Order.Line', value: { sku: 'a', qty: 3 } },
      { format: 'PROTOBUF', schemaName: 'refunds', schema: proto, message: 'shop.v1.Order', value: { id: 'o-2' } },
    ]);
    const t = await setup({ format: 'protobuf', registry: { glue: { registryName: registry.registryName, region: REGION } } });
    await t.produce(values);
    expect(await t.run()).toMatchObject({ status: 'done', records: 3, deadLetters: 0 });
    expect(t.seen.map((r) => [r.decoded?.valueSchema?.message, r.decoded?.value])).toEqual([
      ['shop.v1.Refund', { order_id: 'o-1', cents: '250', reason: 'DAMAGED' }],
      ['shop.v1.Order.Line', { sku: 'a', qty: 3 }],
      ['shop.v1.Order', { id: 'o-2', tags: {} }],
    ]);
  });

  it('decodes JSON Schema records and dead-letters a value its schema does not validate', async () => {
    const registry = await glueRegistry();
    const schema = JSON.stringify({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { id: { type: 'string' }, cents: { type: 'integer' } },
      required: ['id', 'cents'],
    });
    const [good] = await glueSerialize(registry, [{ format: 'JSON', schemaName: 'orders-json', schema, value: { id: 'o-1', cents: 5 } }]);
    // The serializer refuses to write an invalid value; a producer without it (or a bug) can: same header, other JSON.
    const invalid = Buffer.concat([good!.subarray(0, 18), Buffer.from('{"id":"o-2","cents":"five"}')]);
    const t = await setup({ format: 'json-schema', registry: { glue: { registryName: registry.registryName, region: REGION } } });
    await t.produce([good!, invalid, good!]);
    expect(await t.run()).toMatchObject({ status: 'done', records: 2, deadLetters: 1 });
    expect(t.seen.map((r) => r.decoded?.value)).toEqual([
      { id: 'o-1', cents: 5 },
      { id: 'o-1', cents: 5 },
    ]);
    const [dl] = await t.deadLetters();
    expect(dl).toMatchObject({
      offset: 1,
      cause: 'undecodable',
      error: expect.stringMatching(/: does not validate against its JSON Schema: value\/cents must be integer$/),
    });
  });
});

describe('npm start -- --config with a Glue registry', () => {
  const dir = mkdtempSync(join(tmpdir(), 'schema-decoding-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("decodes values from the local stack's Glue emulator and hands them to the handler file, exactly once into its sink", async () => {
    const registry = await glueRegistry();
    const values = await glueSerialize(
      registry,
      [1, 2, 3, 4, 5].map((i) => ({
        format: 'AVRO' as const,
        schemaName: 'orders-value',
        schema: JSON.stringify(ORDER_V1),
        value: { id: `o-${i % 2}`, cents: i * 100 },
      })),
    );
    const topic = uniqueName('dec-run');
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    await producer.send({ topic, messages: [...values, Buffer.from('not a glue record at all')].map((value) => ({ value })) });
    writeFileSync(
      join(dir, 'cents.ts'),
      `export default { mode: 'dynamodb-exactly-once', handle: (rs: Array<{ decoded: { value: { id: string; cents: number } } }>) =>
        rs.map((r) => ({ update: { key: { id: r.decoded.value.id }, expression: 'ADD cents :c', values: { ':c': r.decoded.value.cents } } })) };\n`,
    );
    const sink = uniqueName('dec-cents');
    const file = join(dir, 'streams.json');
    writeFileSync(
      file,
      JSON.stringify({
        ledgerTable: uniqueName('dec-run-ledger'),
        streams: [
          {
            id: 'orders',
            kafka: { brokers: ['not-used.example.com:9092'] },
            topics: [topic],
            triggerIntervalMs: 1000,
            processor: { timeoutMs: 30_000 },
            handler: { module: './cents.ts', mode: 'dynamodb-exactly-once', sinkTable: { name: sink, key: { partitionKey: 'id' } } },
            value: { format: 'avro', registry: { glue: { registryName: registry.registryName, region: REGION } } },
          },
        ],
      }),
    );
    const { AWS_ENDPOINT_URL_GLUE: _unset, AWS_ENDPOINT_URL: _none, ...env } = process.env;
    const res = await runConfigFile(
      { configFile: file, untilCaughtUp: true, json: true, progress: 'off', timeoutMs: 30_000, maxConcurrency: 4 },
      { kafkaBrokers: process.env.KAFKA_BROKERS!, dynamodbEndpoint: endpoint, env, out: () => undefined, err: () => undefined },
    );
    expect(res.exitCode).toBe(0);
    expect(res.summary).toMatchObject({ caughtUp: true, records: 5, deadLetters: 1 });
    const items = (await ddb.send(new ScanCommand({ TableName: sink, ConsistentRead: true }))).Items ?? [];
    expect(Object.fromEntries(items.map((i) => unmarshall(i)).map((i) => [i.id, i.cents]))).toEqual({ 'o-0': 600, 'o-1': 900 });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
