/**
 * The event Lambda's Kafka trigger builds, from our records: against sample events (their field values
 * copied here), byte-exact keys and values, what a null key, value or header value becomes, header
 * order and signed bytes, schema registry metadata and the registry header cut; the trigger's batches;
 * and the partial batch response.
 */
import { deflateSync } from 'node:zlib';
import * as avro from 'avsc';
import fc from 'fast-check';
import { ValidationError } from '../../../lib/errors';
import {
  batchItemFailureIndex,
  TRIGGER_MAX_PAYLOAD_BYTES,
  triggerBatches,
  triggerEvent,
  type TriggerEventSource,
  type TriggerInputRecord,
} from '../../../lib/handlers/trigger-event';
import type { SchemaRef } from '../../../lib/processor/handler-api';
import type { RecordHeader } from '../../../lib/ports/range-reader';
import { glueFrame } from '../../../lib/schemas/wire';

const b64 = (s: string) => Buffer.from(s, 'base64');

function rec(over: Partial<TriggerInputRecord> = {}): TriggerInputRecord {
  return {
    topic: 'mytopic',
    partition: 0,
    offset: 15,
    timestampMs: 1545084650987,
    timestampType: 'CreateTime',
    key: null,
    value: null,
    headers: [],
    ...over,
  };
}

const eventBytes = (records: readonly TriggerInputRecord[], source: TriggerEventSource) =>
  Buffer.byteLength(JSON.stringify(triggerEvent(records, source)));

// The Lambda Developer Guide's "with-msk" sample event, as Powertools copies it (packages/kafka/tests/events/default.json).
const MSK: TriggerEventSource = {
  eventSource: 'aws:kafka',
  eventSourceArn: 'arn:aws:kafka:us-east-1:0123456789019:cluster/SalesCluster/abcd1234-abcd-cafe-abab-9876543210ab-4',
  bootstrapServers:
    'b-2.demo-cluster-1.a1bcde.c1.kafka.us-east-1.amazonaws.com:9092,b-1.demo-cluster-1.a1bcde.c1.kafka.us-east-1.amazonaws.com:9092',
};
const HEADER_VALUE = [104, 101, 97, 100, 101, 114, 86, 97, 108, 117, 101];
const PRODUCT = 'ewogICJpZCI6IDEyMzQ1LAogICJuYW1lIjogInByb2R1Y3Q1IiwKICAicHJpY2UiOiA0NQp9';

describe('triggerEvent', () => {
  it("builds the with-msk sample event field by field (the record without a key has no key field, as in Powertools' copy)", () => {
    const headers: RecordHeader[] = [{ key: 'headerKey', value: Buffer.from(HEADER_VALUE) }];
    const records = [
      rec({ offset: 15, timestampMs: 1545084650987, key: b64('cmVjb3JkS2V5'), value: b64(PRODUCT), headers }),
      rec({ offset: 16, timestampMs: 1545084650988, key: null, value: b64(PRODUCT), headers }),
    ];
    const event = triggerEvent(records, MSK);
    expect(Object.keys(event)).toEqual(['eventSource', 'eventSourceArn', 'bootstrapServers', 'records']);
    expect(event.eventSource).toBe('aws:kafka');
    expect(event.eventSourceArn).toBe(MSK.eventSource === 'aws:kafka' ? MSK.eventSourceArn : '');
    expect(event.bootstrapServers).toBe(MSK.bootstrapServers);
    expect(Object.keys(event.records)).toEqual(['mytopic-0']);
    expect(event.records['mytopic-0']).toStrictEqual([
      {
        topic: 'mytopic',
        partition: 0,
        offset: 15,
        timestamp: 1545084650987,
        timestampType: 'CREATE_TIME',
        key: 'cmVjb3JkS2V5',
        value: PRODUCT,
        headers: [{ headerKey: HEADER_VALUE }],
      },
      {
        topic: 'mytopic',
        partition: 0,
        offset: 16,
        timestamp: 1545084650988,
        timestampType: 'CREATE_TIME',
        value: PRODUCT,
        headers: [{ headerKey: HEADER_VALUE }],
      },
    ]);
    // The guide's field order, as a JSON reader that cares would see it.
    expect(Object.keys(event.records['mytopic-0']![0]!)).toEqual([
      'topic',
      'partition',
      'offset',
      'timestamp',
      'timestampType',
      'key',
      'value',
      'headers',
    ]);
  });

  it("builds Powertools' captured MSK Serverless event (kafkaEventJson.json) exactly, and a self-managed one without an ARN", () => {
    const source = {
      eventSource: 'aws:kafka',
      eventSourceArn: 'arn:aws:kafka:eu-west-3:123456789012:cluster/powertools-kafka-esm/f138df86-9253-4d2a-b682-19e132396d4f-s3',
      bootstrapServers: 'boot-z3majaui.c3.kafka-serverless.eu-west-3.amazonaws.com:9098',
    } as const;
    const record = rec({
      topic: 'python-with-avro-doc',
      partition: 5,
      offset: 0,
      timestampMs: 1750547462087,
      key: Buffer.from('123'),
      value: Buffer.from('{"name": "Powertools", "age": 5}'),
    });
    const expected = {
      topic: 'python-with-avro-doc',
      partition: 5,
      offset: 0,
      timestamp: 1750547462087,
      timestampType: 'CREATE_TIME',
      key: 'MTIz',
      value: 'eyJuYW1lIjogIlBvd2VydG9vbHMiLCAiYWdlIjogNX0=',
      headers: [],
    };
    expect(triggerEvent([record], source)).toStrictEqual({ ...source, records: { 'python-with-avro-doc-5': [expected] } });
    const selfManaged = triggerEvent([record], { eventSource: 'SelfManagedKafka', bootstrapServers: 'k1:9092,k2:9092' });
    expect(selfManaged).toStrictEqual({
      eventSource: 'SelfManagedKafka',
      bootstrapServers: 'k1:9092,k2:9092',
      records: { 'python-with-avro-doc-5': [expected] },
    });
  });

  it('sends keys and values as the base64 of their exact bytes', () => {
    const bytes = Buffer.from([0x00, 0xff, 0x80, 0x7f, 0x0a, 0x00]);
    const event = triggerEvent([rec({ key: bytes, value: Buffer.alloc(0) })], MSK);
    const r = event.records['mytopic-0']![0]!;
    expect(r.key).toBe('AP+AfwoA');
    expect(Buffer.from(r.key!, 'base64').equals(bytes)).toBe(true);
    // An empty value is a value, unlike a null one.
    expect(r.value).toBe('');
  });

  it('leaves out the key of a record without one and the value of a tombstone (not null: absent)', () => {
    const event = triggerEvent([rec({ key: null, value: Buffer.from('v') }), rec({ offset: 16, key: Buffer.from('k'), value: null })], MSK);
    const [noKey, tombstone] = event.records['mytopic-0']!;
    expect('key' in noKey!).toBe(false);
    expect(noKey!.value).toBe('dg==');
    expect('value' in tombstone!).toBe(false);
    expect(tombstone!.key).toBe('aw==');
    expect(JSON.stringify(event)).not.toContain('null');
  });

  it('keeps every header in write order, repeated names as separate objects, a null value as {}', () => {
    const headers: RecordHeader[] = [
      { key: 'trace', value: Buffer.from('a') },
      { key: 'tag', value: null },
      { key: 'trace', value: Buffer.from('b') },
      { key: '__proto__', value: Buffer.from('p') },
      { key: 'empty', value: Buffer.alloc(0) },
    ];
    const [r] = triggerEvent([rec({ headers })], MSK).records['mytopic-0']!;
    expect(JSON.stringify(r!.headers)).toBe('[{"trace":[97]},{},{"trace":[98]},{"__proto__":[112]},{"empty":[]}]');
  });

  it("sends header bytes as Java's signed bytes, which Buffer.from reads back", () => {
    const value = Buffer.from('hello-world-ë');
    const [r] = triggerEvent(
      [
        rec({
          headers: [
            { key: 'test-header', value },
            { key: 'x', value: Buffer.from([0, 127, 128, 255]) },
          ],
        }),
      ],
      MSK,
    ).records['mytopic-0']!;
    // Powertools Python issue #6862: "hello-world-ë" arrives as [..., -61, -85].
    expect(r!.headers[0]).toEqual({ 'test-header': [104, 101, 108, 108, 111, 45, 119, 111, 114, 108, 100, 45, -61, -85] });
    expect(r!.headers[1]).toEqual({ x: [0, 127, -128, -1] });
    expect(Buffer.from(r!.headers[0]!['test-header']!).equals(value)).toBe(true);
  });

  it('reads the header bytes of a Buffer sliced from a larger one, not its neighbours', () => {
    const pool = Buffer.from([1, 2, 3, 4, 5]);
    const [r] = triggerEvent([rec({ headers: [{ key: 'h', value: pool.subarray(1, 3) }] })], MSK).records['mytopic-0']!;
    expect(r!.headers).toEqual([{ h: [2, 3] }]);
  });

  it('says CREATE_TIME or LOG_APPEND_TIME as the record does, and CREATE_TIME for a record that does not say', () => {
    const records = [
      rec({ timestampType: 'LogAppendTime', timestampMs: 7 }),
      rec({ offset: 16, timestampType: 'CreateTime' }),
      { ...rec({ offset: 17 }), timestampType: undefined } as unknown as TriggerInputRecord,
    ];
    const out = triggerEvent(records, MSK).records['mytopic-0']!;
    expect(out.map((r) => r.timestampType)).toEqual(['LOG_APPEND_TIME', 'CREATE_TIME', 'CREATE_TIME']);
    expect(out[0]!.timestamp).toBe(7);
  });

  it('groups records by <topic>-<partition> in first-seen order, keeping their order within each list', () => {
    const records = [
      rec({ topic: 'a-b', partition: 1, offset: 1 }),
      rec({ topic: 'a', partition: 0, offset: 5 }),
      rec({ topic: 'a-b', partition: 1, offset: 2 }),
    ];
    const event = triggerEvent(records, MSK);
    expect(Object.keys(event.records)).toEqual(['a-b-1', 'a-0']);
    expect(event.records['a-b-1']!.map((r) => r.offset)).toEqual([1, 2]);
  });
});

describe('triggerEvent with a schema registry (EventRecordFormat SOURCE)', () => {
  const ref = (over: Partial<SchemaRef>): SchemaRef => ({ registry: 'confluent', id: '42', format: 'avro', ...over });
  // Confluent's wire format: magic byte 0, the schema id (4 bytes, big-endian), the payload.
  const confluent = (id: number, payload: Buffer) => {
    const header = Buffer.alloc(5);
    header.writeUInt32BE(id, 1);
    return Buffer.concat([header, payload]);
  };

  it('cuts the Confluent header from an Avro value, adds valueSchemaMetadata, and the bytes read as plain Avro binary', () => {
    // Powertools' tests/events/avro.json value: a Product record with no registry header.
    const avroBinary = b64('0g8MTGFwdG9wUrgehes/j0A=');
    const framed = confluent(42, avroBinary);
    expect(framed.subarray(0, 5)).toEqual(Buffer.from([0, 0, 0, 0, 42]));
    const record = rec({ value: framed, decoded: { value: {}, valueSchema: ref({ id: '42' }) } });
    const [r] = triggerEvent([record], MSK).records['mytopic-0']!;
    expect(r!.value).toBe('0g8MTGFwdG9wUrgehes/j0A=');
    expect(r!.valueSchemaMetadata).toStrictEqual({ dataFormat: 'AVRO', schemaId: '42' });
    expect('keySchemaMetadata' in r!).toBe(false);
    // What Powertools' Avro deserializer does (`parse(schema).fromBuffer(Buffer.from(value, 'base64'))`):
    // fromBuffer refuses trailing or missing bytes, so the header would not pass.
    const product = avro.Type.forSchema({
      type: 'record',
      name: 'Product',
      fields: [
        { name: 'id', type: 'int' },
        { name: 'name', type: 'string' },
        { name: 'price', type: 'double' },
      ],
    });
    expect(product.fromBuffer(Buffer.from(r!.value!, 'base64'))).toEqual({ id: 1001, name: 'Laptop', price: 999.99 });
    expect(() => product.fromBuffer(framed)).toThrow();
  });

  it("matches Powertools' Confluent Protobuf event: header cut, message indexes kept, schemaId as the registry's id", () => {
    // packages/kafka/tests/events/protobuf-complex.confluent.json, first record's value and metadata.
    const sample =
      'AgIKJGE4ZTQwOTcxLTE1NTItNDIwZC1hN2M5LWI4OTgyMzI1NzAyZBIDQm9iGg9ib2JAZXhhbXBsZS5jb20gHCgBMgoyMDI0LTAyLTAyOgR0YWcxOgR0YWcy' +
      'QQAAAAAAAFZASg4KBXRoZW1lEgVsaWdodFIZCgcxMjMgQXZlEgdTZWF0dGxlGgU5ODEwMQ==';
    const record = rec({ value: confluent(1, b64(sample)), decoded: { value: {}, valueSchema: ref({ id: '1', format: 'protobuf' }) } });
    const [r] = triggerEvent([record], MSK).records['mytopic-0']!;
    expect(r!.value).toBe(sample);
    expect(r!.valueSchemaMetadata).toStrictEqual({ dataFormat: 'PROTOBUF', schemaId: '1' });
  });

  it("matches Powertools' Glue Protobuf event: the 18-byte header cut, the Glue message index kept, the UUID as schemaId", () => {
    // packages/kafka/tests/events/protobuf-complex.glue.json.
    const sample =
      'AQoDMTIzEgRUZXN0Ggx0ZXN0QGdteC5jb20gCjIKMjAyNS0wNi0yMDoEdGFnMToEdGFnMkoOCgV0aGVtZRIFbGlnaHRSGgoKTXl0aGVucXVhaRIGWnVyaWNoGgQ4MDAy';
    const id = '12345678-1234-1234-1234-123456789012';
    const schema = ref({ registry: 'glue', id, format: 'protobuf' });
    const plain = rec({ value: glueFrame(id, b64(sample)), decoded: { value: {}, valueSchema: schema } });
    const zipped = rec({ offset: 16, value: glueFrame(id, b64(sample), 'zlib'), decoded: { value: {}, valueSchema: schema } });
    expect(glueFrame(id, b64(sample), 'zlib').subarray(18)).toEqual(deflateSync(b64(sample)));
    const out = triggerEvent([plain, zipped], MSK).records['mytopic-0']!;
    expect(out.map((r) => r.value)).toEqual([sample, sample]);
    expect(out[0]!.valueSchemaMetadata).toStrictEqual({ dataFormat: 'PROTOBUF', schemaId: id });
  });

  it('adds keySchemaMetadata for a registry-decoded key, JSON for JSON Schema, and nothing for a plain JSON value', () => {
    const keyJson = Buffer.from('{"id":7}');
    const record = rec({
      key: confluent(9, keyJson),
      value: Buffer.from('{"plain":true}'),
      decoded: { key: { id: 7 }, keySchema: ref({ id: '9', format: 'json-schema' }), value: { plain: true } },
    });
    const [r] = triggerEvent([record], MSK).records['mytopic-0']!;
    expect(r!.key).toBe(keyJson.toString('base64'));
    expect(r!.keySchemaMetadata).toStrictEqual({ dataFormat: 'JSON', schemaId: '9' });
    expect(r!.value).toBe(Buffer.from('{"plain":true}').toString('base64'));
    expect('valueSchemaMetadata' in r!).toBe(false);
    expect(Object.keys(r!).slice(-1)).toEqual(['keySchemaMetadata']);
  });

  it('gives a tombstone of a registry-decoded stream neither a value nor value metadata', () => {
    const [r] = triggerEvent([rec({ value: null, decoded: { value: null } })], MSK).records['mytopic-0']!;
    expect('value' in r! || 'valueSchemaMetadata' in r!).toBe(false);
  });
});

describe('triggerBatches', () => {
  const records = (n: number, over: (i: number) => Partial<TriggerInputRecord> = () => ({})) =>
    Array.from({ length: n }, (_, i) => rec({ offset: i, value: Buffer.from(`value-${i}`), ...over(i) }));

  it('cuts at maxRecords, in order, the last batch holding the rest', () => {
    const input = records(5);
    const batches = triggerBatches(input, 2);
    expect(batches.map((b) => b.map((r) => r.offset))).toEqual([[0, 1], [2, 3], [4]]);
    expect(batches.flat()).toEqual(input);
    expect(batches.flat()[0]).toBe(input[0]);
  });

  it('cuts where the next record would take the event JSON over the limit (exactly, given the source)', () => {
    const input = records(4);
    const two = eventBytes(input.slice(0, 2), MSK);
    expect(triggerBatches(input, 10, two, MSK).map((b) => b.length)).toEqual([2, 2]);
    expect(triggerBatches(input, 10, two - 1, MSK).map((b) => b.length)).toEqual([1, 1, 1, 1]);
    expect(triggerBatches(input, 10, eventBytes(input, MSK), MSK).map((b) => b.length)).toEqual([4]);
  });

  it('counts a new <topic>-<partition> list in the size', () => {
    const input = [rec({ offset: 1, value: Buffer.from('x') }), rec({ partition: 1, offset: 1, value: Buffer.from('x') })];
    const both = eventBytes(input, MSK);
    expect(triggerBatches(input, 10, both, MSK)).toHaveLength(1);
    expect(triggerBatches(input, 10, both - 1, MSK)).toHaveLength(2);
  });

  it('puts a record whose event alone is over the limit in a batch of its own, between its neighbours', () => {
    const input = records(5, (i) => (i === 2 ? { value: Buffer.alloc(10_000, 1) } : {}));
    const limit = eventBytes(input.slice(0, 2), MSK);
    expect(eventBytes([input[2]!], MSK)).toBeGreaterThan(limit);
    expect(triggerBatches(input, 10, limit, MSK).map((b) => b.map((r) => r.offset))).toEqual([[0, 1], [2], [3, 4]]);
  });

  it('defaults to the 6 MB limit and sets a reserve aside for the event fields when not given the source', () => {
    expect(TRIGGER_MAX_PAYLOAD_BYTES).toBe(6 * 1024 * 1024);
    const big = records(3, () => ({ value: Buffer.alloc(2 * 1024 * 1024) }));
    // Each record is ~2.67 MB of base64: two fit in 6 MB, three do not.
    expect(triggerBatches(big, 10).map((b) => b.length)).toEqual([2, 1]);
    const input = records(4);
    // Two records' event with the 8 KiB reserve in place of this source's fields.
    const reserved = eventBytes(input.slice(0, 2), MSK) - eventBytes([], MSK) + 8 * 1024;
    expect(triggerBatches(input, 10, reserved).map((b) => b.length)).toEqual([2, 2]);
    expect(triggerBatches(input, 10, reserved - 1).map((b) => b.length)).toEqual([1, 1, 1, 1]);
  });

  it('gives no batch for no records, and refuses a batch size or limit it cannot honour', () => {
    expect(triggerBatches([], 3)).toEqual([]);
    expect(() => triggerBatches(records(1), 0)).toThrow(ValidationError);
    expect(() => triggerBatches(records(1), 1.5)).toThrow('batch size 1.5: expected a whole number >= 1');
    expect(() => triggerBatches(records(1), 1, 0)).toThrow(ValidationError);
  });

  it('property: batches rebuild the input, each within both limits (a lone oversize record aside), each as full as it can be', () => {
    const header = fc.record({ key: fc.constantFrom('a', 'b', 'ë'), value: fc.option(fc.uint8Array({ maxLength: 8 }), { nil: null }) });
    const record = fc.record({
      topic: fc.constantFrom('t', 'orders-v1'),
      partition: fc.integer({ min: 0, max: 2 }),
      key: fc.option(fc.uint8Array({ maxLength: 16 }), { nil: null }),
      value: fc.option(fc.uint8Array({ maxLength: 300 }), { nil: null }),
      headers: fc.array(header, { maxLength: 3 }),
    });
    const source = fc.constantFrom<TriggerEventSource>(MSK, { eventSource: 'SelfManagedKafka', bootstrapServers: 'k:9092' });
    fc.assert(
      fc.property(
        fc.array(record, { maxLength: 30 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 200, max: 3000 }),
        source,
        (rs, max, limit, src) => {
          const input = rs.map((r, i) =>
            rec({
              ...r,
              offset: i,
              key: r.key && Buffer.from(r.key),
              value: r.value && Buffer.from(r.value),
              headers: r.headers.map((h) => ({ key: h.key, value: h.value && Buffer.from(h.value) })),
            }),
          );
          const batches = triggerBatches(input, max, limit, src);
          expect(batches.flat()).toEqual(input);
          batches.forEach((b, i) => {
            expect(b.length).toBeGreaterThan(0);
            expect(b.length).toBeLessThanOrEqual(max);
            if (b.length > 1) expect(eventBytes(b, src)).toBeLessThanOrEqual(limit);
            const next = batches[i + 1]?.[0];
            if (next) expect(b.length === max || eventBytes([...b, next], src) > limit).toBe(true);
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('batchItemFailureIndex', () => {
  const batch = [10, 11, 12, 13].map((offset) => rec({ topic: 'orders-v1', partition: 3, offset }));
  const failure = (partition: unknown, offset: unknown) => ({ itemIdentifier: { partition, offset } });
  const where = 'stream s, function index.handler';

  it('reads no failure from undefined, null, {}, a null or empty list, or an answer that is no object', () => {
    for (const answer of [undefined, null, {}, { batchItemFailures: null }, { batchItemFailures: [] }, 'ok', 0, true, []]) {
      expect(batchItemFailureIndex(answer, batch, where)).toBeUndefined();
    }
  });

  it("finds the failed record by its list's key (<topic>-<partition>) and offset", () => {
    expect(batchItemFailureIndex({ batchItemFailures: [failure('orders-v1-3', 12)] }, batch, where)).toBe(2);
    expect(batchItemFailureIndex({ batchItemFailures: [failure('orders-v1-3', '11')] }, batch, where)).toBe(1);
  });

  it('takes the earliest of several failures, whatever their order', () => {
    const answer = { batchItemFailures: [failure('orders-v1-3', 13), failure('orders-v1-3', 11), failure('orders-v1-3', 12)] };
    expect(batchItemFailureIndex(answer, batch, where)).toBe(1);
  });

  it('refuses an identifier naming no record of the batch, naming the function and the identifier', () => {
    const unknown = () =>
      batchItemFailureIndex({ batchItemFailures: [failure('orders-v1-3', 10), failure('orders-v1-3', 99)] }, batch, where);
    expect(unknown).toThrow(ValidationError);
    expect(unknown).toThrow(
      `${where}: batchItemFailures[1] names {"partition":"orders-v1-3","offset":99}, which is no record of the event it was given ` +
        '(its records: "orders-v1-3" offsets 10..13)',
    );
    expect(() => batchItemFailureIndex({ batchItemFailures: [failure('orders-v1-4', 10)] }, batch, where)).toThrow(/"orders-v1-4"/);
  });

  it('refuses a malformed identifier, naming the function and what it got', () => {
    const malformed: Array<[unknown, RegExp]> = [
      [{ itemIdentifier: null }, /batchItemFailures\[0\]: itemIdentifier null is malformed \(no itemIdentifier object\)/],
      [{ itemIdentifier: '' }, /itemIdentifier "" is malformed/],
      [{ id: { partition: 'orders-v1-3', offset: 10 } }, /itemIdentifier undefined is malformed/],
      [null, /batchItemFailures\[0\]: null is malformed/],
      [failure(3, 10), /itemIdentifier \{"partition":3,"offset":10\} is malformed \(partition is not a non-empty string\)/],
      [failure('', 10), /partition is not a non-empty string/],
      [failure('orders-v1-3', -1), /offset is not a whole number >= 0/],
      [failure('orders-v1-3', 10.5), /offset is not a whole number >= 0/],
      [failure('orders-v1-3', 'ten'), /offset is not a whole number >= 0/],
      [failure('orders-v1-3', undefined), /offset is not a whole number >= 0/],
    ];
    for (const [entry, message] of malformed) {
      const read = () => batchItemFailureIndex({ batchItemFailures: [entry] }, batch, where);
      expect(read).toThrow(ValidationError);
      expect(read).toThrow(message);
      expect(read).toThrow(where);
    }
    expect(() => batchItemFailureIndex({ batchItemFailures: 'orders-v1-3' }, batch, where)).toThrow(
      `${where}: its answer's batchItemFailures is "orders-v1-3", not a list`,
    );
  });

  it('reads the identifiers a function builds from the event it was given', () => {
    const event = triggerEvent(batch, MSK);
    const failed = Object.entries(event.records).flatMap(([partition, rs]) =>
      rs.filter((r) => r.offset >= 12).map((r) => ({ itemIdentifier: { partition, offset: r.offset } })),
    );
    expect(batchItemFailureIndex(JSON.parse(JSON.stringify({ batchItemFailures: failed })), batch, where)).toBe(2);
  });
});
