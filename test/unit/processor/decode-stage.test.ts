/**
 * The decoding stage on an in-memory registry: what the handler gets (`decoded` beside the raw bytes),
 * what is dead-lettered as undecodable (and why, in one line), and what fails the attempt instead;
 * then through processRange: an undecodable record in the middle of a range is dead-lettered and the
 * range completes.
 */
import * as avro from 'avsc';
import fc from 'fast-check';
import type { PayloadDecodingConfig, StreamConfigInput } from '../../../lib/config/schema';
import { SchemaRegistryError } from '../../../lib/errors';
import type { RegistrySchema } from '../../../lib/ports/schema-registry';
import type { OpsContext } from '../../../lib/ops/context';
import { redriveDeadLetters } from '../../../lib/ops/dead-letters';
import { createDecodeStage } from '../../../lib/processor/decode-stage';
import { foldHandler, type HandlerRecord, type RecordsHandler } from '../../../lib/processor/handler-api';
import { judgeChunk, type RecordStage } from '../../../lib/processor/record-gate';
import { recordStagesFor } from '../../../lib/processor/record-stages';
import { createSchemaRegistries } from '../../../lib/schemas/registries';
import { createMemorySchemaRegistry, type MemorySchemaRegistry } from '../../../lib/schemas/registry.memory';
import { glueFrame } from '../../../lib/schemas/wire';
import { FIXTURE_TOPIC as T, processorFixture } from '../../support/processor-fixture';

const ORDER = {
  type: 'record',
  name: 'Order',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'cents', type: 'long' },
  ],
};
const orderType = avro.Type.forSchema(ORDER as avro.Schema);
const AVRO_1: RegistrySchema = { id: '1', format: 'avro', definition: JSON.stringify(ORDER), references: [] };
const PROTO_2: RegistrySchema = {
  id: '2',
  format: 'protobuf',
  definition: 'syntax = "proto3"; message M { string id = 1; }',
  references: [],
};

const CONFLUENT = { confluent: { url: 'http://sr:8081' } };
const avroValue: PayloadDecodingConfig = { format: 'avro', registry: CONFLUENT };

/** Confluent framing: magic byte, 4-byte id, payload. */
function framed(id: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(id, 1);
  return Buffer.concat([header, payload]);
}
const order = (id: number, value: { id: string; cents: number }) => framed(id, orderType.toBuffer(value));

function record(offset: number, value: Buffer | null, key: Buffer | null = null): HandlerRecord {
  return {
    topic: T,
    partition: 0,
    offset,
    timestampMs: 1000,
    timestampType: 'CreateTime',
    key,
    value,
    headers: [],
    idempotencyKey: `${T}/0/${offset}`,
  };
}

function stageWith(settings: { value?: PayloadDecodingConfig; key?: PayloadDecodingConfig }, registry: MemorySchemaRegistry): RecordStage {
  const stage = createDecodeStage({ stream: 's', ...settings }, createSchemaRegistries({ registryFor: () => registry }));
  if (!stage) throw new Error('no stage');
  return stage;
}

describe('decoding stage', () => {
  it('passes each record on with decoded.value and its schema, keeping the raw bytes', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1]);
    const value = order(1, { id: 'o-1', cents: 250 });
    const [verdict] = await judgeChunk([stageWith({ value: avroValue }, registry)], [record(0, value)]);
    expect(verdict).toEqual({
      kind: 'pass',
      record: {
        ...record(0, value),
        decoded: { value: { id: 'o-1', cents: 250 }, valueSchema: { registry: 'confluent', id: '1', format: 'avro' } },
      },
    });
  });

  it('looks each schema id of a chunk up once, however many records carry it', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1]);
    const records = Array.from({ length: 50 }, (_, i) => record(i, order(1, { id: `o-${i}`, cents: i })));
    const verdicts = await judgeChunk([stageWith({ value: avroValue }, registry)], records);
    expect(verdicts.every((v) => v.kind === 'pass')).toBe(true);
    expect(registry.lookups).toEqual(['1']);
  });

  it('decodes keys too (here plain JSON), and leaves a null key or value null', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1]);
    const stage = stageWith({ value: avroValue, key: { format: 'json' } }, registry);
    const [withKey, tombstone] = await judgeChunk(
      [stage],
      [record(0, order(1, { id: 'a', cents: 1 }), Buffer.from('{"account":7}')), record(1, null)],
    );
    expect(withKey).toMatchObject({ kind: 'pass', record: { decoded: { key: { account: 7 }, value: { id: 'a', cents: 1 } } } });
    expect(withKey?.kind === 'pass' && withKey.record.decoded?.keySchema).toBeUndefined();
    expect(tombstone).toMatchObject({ kind: 'pass', record: { decoded: { value: null, key: null } } });
  });

  it('rejects as undecodable, with one line naming the field, the registry and why', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1, PROTO_2]);
    const stage = stageWith({ value: avroValue }, registry);
    const cases: Array<[Buffer, string]> = [
      [order(9, { id: 'x', cents: 1 }), 'UNDECODABLE: value (confluent registry (in memory)): unknown schema id 9'],
      [
        Buffer.from('{"id":"x"}'),
        'UNDECODABLE: value (confluent registry (in memory)): magic byte 123, expected 0 (not a Confluent schema registry payload)',
      ],
      [framed(1, Buffer.from([0x02])), 'UNDECODABLE: value (confluent registry (in memory)): not Avro of its schema (truncated buffer)'],
      [framed(2, Buffer.from([0])), 'UNDECODABLE: value (confluent registry (in memory)): schema 2 is protobuf, but value.format is avro'],
    ];
    const verdicts = await judgeChunk(
      [stage],
      cases.map(([bytes], i) => record(i, bytes)),
    );
    expect(verdicts).toEqual(cases.map(([, error]) => ({ kind: 'reject', cause: 'undecodable', error })));
  });

  it('rejects plain JSON that does not parse', async () => {
    const stage = createDecodeStage({ stream: 's', value: { format: 'json' } }, createSchemaRegistries())!;
    const [bad, good] = await judgeChunk([stage], [record(0, Buffer.from('{oops')), record(1, Buffer.from('[1]'))]);
    expect(bad).toMatchObject({ kind: 'reject', cause: 'undecodable', error: expect.stringMatching(/^UNDECODABLE: value: not JSON \(/) });
    expect(good).toMatchObject({ kind: 'pass', record: { decoded: { value: [1] } } });
  });

  it('decodes Glue-framed records, zlib or not, by their schema version id', async () => {
    const id = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
    const registry = createMemorySchemaRegistry('glue', [{ ...AVRO_1, id, name: 'orders-value', version: 2 }]);
    const stage = stageWith({ value: { format: 'avro', registry: { glue: { registryName: 'r', region: 'eu-west-1' } } } }, registry);
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.integer({ min: 0, max: 2 ** 52 }), fc.boolean(), async (oid, cents, zlib) => {
        const bytes = glueFrame(id, orderType.toBuffer({ id: oid, cents }), zlib ? 'zlib' : 'none');
        const [v] = await judgeChunk([stage], [record(0, bytes)]);
        expect(v).toMatchObject({
          kind: 'pass',
          record: {
            decoded: { value: { id: oid, cents }, valueSchema: { registry: 'glue', id, format: 'avro', name: 'orders-value', version: 2 } },
          },
        });
      }),
    );
  });

  it('throws a registry failure from prepare, naming the stream and the settings to check, and judges nothing', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1]);
    registry.failure = new SchemaRegistryError('confluent registry http://sr:8081: GET /schemas/ids/1: no answer (ECONNREFUSED)', {
      settings: ['confluent.url'],
    });
    const err = await judgeChunk([stageWith({ value: avroValue }, registry)], [record(0, order(1, { id: 'a', cents: 1 }))]).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect((err as Error).message).toBe(
      'stream s: value: confluent registry http://sr:8081: GET /schemas/ids/1: no answer (ECONNREFUSED); check value.registry.confluent.url',
    );
  });

  it('is absent when neither value nor key is decoded', async () => {
    expect(createDecodeStage({ stream: 's', value: { format: 'raw' } }, createSchemaRegistries())).toBeUndefined();
    const stream = { id: 's', maxRecordAgeMs: undefined, expiredRecords: 'dead-letter', value: { format: 'json' } } as never;
    expect((await recordStagesFor(stream, { firstLeasedAtMs: 0 })).map((s) => s.name)).toEqual(['schemas']);
  });
});

describe('decoding in processRange', () => {
  const seen: HandlerRecord[] = [];
  const recorder: RecordsHandler = { mode: 'at-least-once', handle: (records) => void seen.push(...records) };

  async function fixture(records: Array<{ value: Buffer }>, registry: MemorySchemaRegistry, stream: Partial<StreamConfigInput> = {}) {
    seen.length = 0;
    const registries = createSchemaRegistries({ registryFor: () => registry });
    return processorFixture({
      records,
      handler: recorder,
      stream: { handler: { module: 'noop', mode: 'at-least-once' }, value: { format: 'avro', registry: CONFLUENT }, ...stream },
      deps: { stagesFor: (s, at) => recordStagesFor(s, { ...at, registries }) },
    });
  }

  it('dead-letters an undecodable record with its reason and completes the range; the handler sees decoded values', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1]);
    const values = [order(1, { id: 'a', cents: 1 }), order(7, { id: 'b', cents: 2 }), order(1, { id: 'c', cents: 3 })];
    const t = await fixture(
      values.map((value) => ({ value })),
      registry,
    );
    expect(await t.run()).toMatchObject({ status: 'done', records: 2, deadLetters: 1, progress: 3 });
    expect(seen.map((r) => [r.offset, r.decoded?.value])).toEqual([
      [0, { id: 'a', cents: 1 }],
      [2, { id: 'c', cents: 3 }],
    ]);
    expect(seen[0]?.value).toEqual(values[0]);
    const [letter] = t.ledger.store('s').deadLetters;
    expect(letter).toMatchObject({
      offset: 1,
      cause: 'undecodable',
      error: 'UNDECODABLE: value (confluent registry (in memory)): unknown schema id 7',
    });
  });

  it('re-drives a dead letter decoded, once its schema is registered (and fails the re-drive with the reason before)', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1]);
    const late = order(7, { id: 'late', cents: 9 });
    const t = await fixture([{ value: late }], registry);
    expect(await t.run()).toMatchObject({ status: 'done', records: 0, deadLetters: 1 });
    const ctx = {
      ledger: t.ledger,
      readerFor: async () => t.reader,
      handlerFor: () => recorder,
      registries: createSchemaRegistries({ registryFor: () => registry, notFoundTtlMs: 0 }),
    } as unknown as OpsContext;
    expect(await redriveDeadLetters(ctx, t.stream, { all: true, nowMs: () => 50_000 })).toEqual([
      {
        id: `${T}/0/0`,
        outcome: 'failed',
        source: 'kafka',
        error: 'Error: UNDECODABLE: value (confluent registry (in memory)): unknown schema id 7',
      },
    ]);
    registry.add({ ...AVRO_1, id: '7' });
    expect(await redriveDeadLetters(ctx, t.stream, { all: true, nowMs: () => 50_000 })).toEqual([
      { id: `${T}/0/0`, outcome: 'redriven', source: 'kafka' },
    ]);
    expect(seen.map((r) => r.decoded)).toEqual([
      { value: { id: 'late', cents: 9 }, valueSchema: { registry: 'confluent', id: '7', format: 'avro' } },
    ]);
  });

  it('fails the attempt when the registry is down: nothing is dead-lettered or handled, and the retry completes', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1]);
    registry.failure = new SchemaRegistryError('down', { settings: ['confluent.url'] });
    const t = await fixture([{ value: order(1, { id: 'a', cents: 1 }) }], registry);
    await expect(t.run()).rejects.toThrow('stream s: value: down; check value.registry.confluent.url');
    expect(t.rangeItem()).toMatchObject({
      status: 'failed',
      progress: 0,
      lastError: expect.stringContaining('check value.registry.confluent.url'),
    });
    expect(t.ledger.store('s').deadLetters).toEqual([]);
    expect(seen).toEqual([]);
    registry.failure = undefined;
    t.advance(1000);
    expect(await t.run()).toMatchObject({ status: 'done', records: 1, deadLetters: 0 });
  });

  it('stops the partition instead under poisonPolicy stop-partition', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO_1]);
    const t = await fixture([{ value: order(1, { id: 'a', cents: 1 }) }, { value: Buffer.from('junk!') }], registry, {
      poisonPolicy: 'stop-partition',
    });
    expect(await t.run()).toMatchObject({
      status: 'parked',
      reason: expect.stringMatching(/^POISON_RECORD: payments\/0\/1 UNDECODABLE: value .*magic byte 106/),
    });
    expect(seen.map((r) => r.offset)).toEqual([0]);
  });

  it('gives a folding handler decoded values too, and folds around an undecodable record', async () => {
    const sums = foldHandler<number>({
      map: (r) => {
        const v = r.decoded?.value as { account: string; amount: number };
        return { key: { pk: v.account }, value: v.amount };
      },
      combine: (a, b) => a + b,
      write: (item, n) => ({ update: { ...item, expression: 'ADD total :n', values: { ':n': n } } }),
    });
    const values = ['{"account":"a","amount":1}', '{"account":"b","amount":2}', 'oops', '{"account":"a","amount":4}'];
    const t = await processorFixture({ records: values.map((value) => ({ value })), handler: sums, stream: { value: { format: 'json' } } });
    expect(await t.run()).toMatchObject({ status: 'done', records: 3, deadLetters: 1 });
    const totals: Record<string, number> = {};
    for (const w of t.ledger.store('s').sinkWrites)
      if ('update' in w) totals[String(w.update.key.pk)] = (totals[String(w.update.key.pk)] ?? 0) + Number(w.update.values?.[':n']);
    expect(totals).toEqual({ a: 5, b: 2 });
    expect(t.ledger.store('s').deadLetters[0]).toMatchObject({
      offset: 2,
      cause: 'undecodable',
      error: expect.stringMatching(/^UNDECODABLE: value: not JSON/),
    });
  });
});
