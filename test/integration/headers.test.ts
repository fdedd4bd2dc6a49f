/**
 * Headers, keys, values and timestamps byte-exact against Kafka's own Java client: records written
 * by the Java producer (every codec, CreateTime and LogAppendTime topics, hostile headers) are read
 * through the real range reader and through Java's KafkaConsumer, and must come out identical.
 */
import { Kafka } from 'kafkajs';
import { parseStreamConfig } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { runningTotals } from '../../lib/handlers/running-totals';
import { registerCodecs } from '../../lib/kafka/protocol/codecs';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import type { OpsContext } from '../../lib/ops/context';
import { redriveDeadLetters } from '../../lib/ops/dead-letters';
import { planStream } from '../../lib/planner/run';
import type { HandlerRecord, RecordsHandler } from '../../lib/processor/handler-api';
import { processRange } from '../../lib/processor/process-range';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { headerMap, headerValues, lastHeader, type KafkaRecord, type RangeReader } from '../../lib/ports/range-reader';
import { toPeeked } from '../../lib/processor/peek';
import { javaConsume, javaProduce, recordToolClasspath, type JavaConsumedRecord, type JavaProducedRecord } from '../support/java';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
const b64 = (bytes: number[]): string => Buffer.from(bytes).toString('base64');

/** Records whose headers break an object-shaped decoder, plus null/empty/binary keys and values. */
function hostileRecords(compression: (typeof CODECS)[number]): JavaProducedRecord[] {
  const base = { compression, partition: 0 };
  return [
    {
      ...base,
      key: 'proto',
      value: 'v',
      headers: ['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__'].map((key) => ({ key, value: `${key}-value` })),
    },
    {
      ...base,
      key: 'interleaved',
      value: 'v',
      headers: [
        { key: 'a', value: 'a1' },
        { key: 'b', value: 'b1' },
        { key: 'a', value: 'a2' },
      ],
    },
    {
      ...base,
      key: 'null-in-repeat',
      value: 'v',
      headers: [
        { key: 'd', value: 'd1' },
        { key: 'd', value: null },
      ],
    },
    {
      ...base,
      key: 'empty',
      value: '',
      headers: [
        { key: 'e', value: '' },
        { key: '', value: 'nameless' },
        { key: 'n', value: null },
      ],
    },
    {
      ...base,
      keyBase64: b64([0xff, 0x00, 0xfe]),
      valueBase64: b64([0xc3, 0x28, 0x80]), // invalid UTF-8
      headers: [
        { key: 'bin', valueBase64: b64([0x80, 0xff, 0x00]) },
        { key: 'bom', valueBase64: b64([0xef, 0xbb, 0xbf, 0x41]) },
      ],
    },
    { ...base, key: null, value: null, timestampMs: 1_600_000_000_123 },
    { ...base, key: 'unicode', value: 'héllo ✓', headers: [{ key: 'naïve ✓', value: '日本' }] },
  ];
}

/** Our record in the Java consumer's printed shape. */
function asJava(r: KafkaRecord): JavaConsumedRecord {
  const base64 = (b: Buffer | null) => (b === null ? null : b.toString('base64'));
  return {
    topic: r.topic,
    partition: r.partition,
    offset: r.offset,
    timestampMs: r.timestampMs,
    timestampType: r.timestampType,
    keyBase64: base64(r.key),
    valueBase64: base64(r.value),
    headers: r.headers.map((h) => ({ key: h.key, valueBase64: base64(h.value) })),
  };
}

async function readAll(reader: RangeReader, topic: string, until: number): Promise<KafkaRecord[]> {
  const out: KafkaRecord[] = [];
  for await (const chunk of reader.read({ topic, partition: 0, from: 0, until, isolationLevel: 'read_committed' }))
    out.push(...chunk.records);
  return out;
}

describe('records byte-exact against the Java client (real broker)', () => {
  let kafka: Kafka;
  let reader: RangeReader;
  const brokers = (): string => process.env.KAFKA_BROKERS as string;

  beforeAll(async () => {
    registerCodecs();
    recordToolClasspath(); // compile (or reuse) the Java tool once, before the tests
    kafka = testKafka('headers');
    reader = createKafkajsRangeReader(kafka);
  });

  afterAll(async () => {
    await reader.close();
  });

  it('reads headers in order with repeated names, nulls and Object.prototype names, every codec, both timestamp types, as Java does', async () => {
    const createTime = uniqueName('hdr-create');
    const appendTime = uniqueName('hdr-append');
    const admin = kafka.admin();
    await admin.connect();
    try {
      await createTopicsReady(admin, [
        { topic: createTime },
        { topic: appendTime, configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }] },
      ]);
    } finally {
      await admin.disconnect();
    }
    const produced = CODECS.flatMap(hostileRecords);
    await javaProduce(brokers(), [
      ...produced.map((r) => ({ ...r, topic: createTime })),
      ...produced.map((r) => ({ ...r, topic: appendTime })),
    ]);
    const n = produced.length;

    const java = await javaConsume(
      brokers(),
      [createTime, appendTime].map((topic) => ({ topic, partition: 0, from: 0, until: n })),
      'read_committed',
    );
    for (const topic of [createTime, appendTime]) {
      const ours = (await readAll(reader, topic, n)).map(asJava);
      const theirs = java.filter((r) => r.topic === topic);
      expect(ours).toHaveLength(n);
      expect(ours).toEqual(theirs);
    }

    // The oracle itself saw what was written (so the comparison above is not vacuous).
    const records = await readAll(reader, createTime, n);
    const proto = records.find((r) => r.key?.toString() === 'proto')!;
    expect(proto.headers.map((h) => [h.key, h.value?.toString()])).toEqual(
      ['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__'].map((k) => [k, `${k}-value`]),
    );
    const interleaved = records.find((r) => r.key?.toString() === 'interleaved')!;
    expect(interleaved.headers.map((h) => `${h.key}=${h.value}`)).toEqual(['a=a1', 'b=b1', 'a=a2']);
    const nullInRepeat = records.find((r) => r.key?.toString() === 'null-in-repeat')!;
    expect(headerValues(nullInRepeat.headers, 'd')).toEqual([Buffer.from('d1'), null]);
    expect(lastHeader(nullInRepeat.headers, 'd')).toBeNull();
    expect(lastHeader(nullInRepeat.headers, 'nope')).toBeUndefined();
    expect([...headerMap(proto.headers).keys()]).toEqual(['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__proto__']);
    expect(records.filter((r) => r.key === null).map((r) => r.timestampMs)).toEqual(CODECS.map(() => 1_600_000_000_123));
    expect(new Set(records.map((r) => r.timestampType))).toEqual(new Set(['CreateTime']));
    const appended = await readAll(reader, appendTime, n);
    expect(new Set(appended.map((r) => r.timestampType))).toEqual(new Set(['LogAppendTime']));
    // The broker's clock, not the producer's explicit timestamp.
    expect(appended.filter((r) => r.key === null).every((r) => r.timestampMs !== 1_600_000_000_123)).toBe(true);
  });

  it("peek JSON is lossless: every key, value and header value decodes back to the Java consumer's bytes", async () => {
    const topic = uniqueName('hdr-peek');
    const admin = kafka.admin();
    await admin.connect();
    try {
      await createTopicsReady(admin, [{ topic }]);
    } finally {
      await admin.disconnect();
    }
    const produced = hostileRecords('none');
    await javaProduce(
      brokers(),
      produced.map((r) => ({ ...r, topic })),
    );
    const java = await javaConsume(brokers(), [{ topic, partition: 0, from: 0, until: produced.length }]);
    const decode = (text: string | null, encoding: string | null): string | null =>
      text === null
        ? encoding === null
          ? null
          : 'encoding without a value'
        : Buffer.from(text, encoding === 'utf8' ? 'utf8' : 'base64').toString('base64');
    const peeked = (await readAll(reader, topic, produced.length)).map(
      (r) => JSON.parse(JSON.stringify(toPeeked(r))) as ReturnType<typeof toPeeked>,
    );
    expect(
      peeked.map((p) => ({
        offset: p.offset,
        timestampMs: p.timestamp,
        timestampType: p.timestampType,
        keyBase64: decode(p.key, p.keyEncoding),
        valueBase64: decode(p.value, p.valueEncoding),
        headers: p.headers.map((h) => ({ key: h.key, valueBase64: decode(h.value, h.valueEncoding) })),
      })),
    ).toEqual(java.map(({ topic: _t, partition: _p, ...rest }) => rest));
    // Text only when it round-trips: the BOM-prefixed value stays text (BOM kept), invalid UTF-8 is base64.
    const binary = peeked.find((p) => p.headers.some((h) => h.key === 'bom'))!;
    expect(binary.headers.map((h) => [h.key, h.valueEncoding])).toEqual([
      ['bin', 'base64'],
      ['bom', 'utf8'],
    ]);
    expect(binary.valueEncoding).toBe('base64');
  });

  it('a dead letter keeps the headers exactly in DynamoDB, and both re-drive paths (Kafka, stored copy) hand the handler the same record', async () => {
    const ddb = testDynamo();
    const ledgerTable = uniqueName('hdr-ledger');
    const id = uniqueName('hdr');
    const topic = `${id}-t`;
    const metadata = createMetadataCache();
    const admin = kafka.admin();
    await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect()]);
    try {
      await createTopicsReady(admin, [{ topic }]);
      // running-totals rejects the hostile records (no JSON amount), except the last one.
      const produced = [...hostileRecords('zstd').filter((r) => r.key !== null), { key: 'ok', value: '{"amount":1}', partition: 0 }];
      await javaProduce(
        brokers(),
        produced.map((r) => ({ ...r, topic })),
      );
      const java = await javaConsume(brokers(), [{ topic, partition: 0, from: 0, until: produced.length }]);
      const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });
      const stream = parseStreamConfig(
        {
          id,
          kafka: { brokers: brokers().split(',') },
          topics: [topic],
          maxAttempts: 1,
          handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'unused' },
        },
        'test',
      );
      const dispatcher = createRecordingDispatcher();
      await planStream({ ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 60_000 }, stream, {
        dryRun: false,
        nowMs: Date.now(),
      });
      // The one valid record's sink write goes nowhere real: a handler that accepts it with no writes.
      const rejectOrSkip: RecordsHandler = {
        mode: 'dynamodb-exactly-once',
        handle: (records, hctx) => (records.some((r) => r.key?.toString() !== 'ok') ? runningTotals.handle(records, hctx) : []),
      };
      for (const range of dispatcher.dispatched) {
        const res = await processRange(
          { ledger, readerFor: async () => reader, handlerFor: () => rejectOrSkip, retryBaseMs: 1, maxChunkRecords: 1 },
          { stream, range, deadlineAtMs: Date.now() + 60_000 },
        );
        expect(res.status).toBe('done');
      }
      const letters = await ledger.listDeadLetters(id);
      expect(letters.map((d) => d.offset)).toEqual(java.slice(0, -1).map((r) => r.offset));
      for (const d of letters) {
        const j = java.find((r) => r.offset === d.offset)!;
        expect({ headers: d.headers, timestampType: d.timestampType, truncated: d.truncated }).toEqual({
          headers: j.headers,
          timestampType: j.timestampType,
          truncated: false,
        });
      }

      const seen: HandlerRecord[] = [];
      const capture: RecordsHandler = { mode: 'at-least-once', handle: (records) => void seen.push(...records) };
      const ctx = { ledger, readerFor: async () => reader, handlerFor: () => capture } as unknown as OpsContext;
      const first = letters[0]!;
      const fromKafka = await redriveDeadLetters(ctx, stream, { ids: [`${topic}/0/${first.offset}`], nowMs: () => Date.now() });
      expect(fromKafka).toEqual([expect.objectContaining({ outcome: 'redriven', source: 'kafka' })]);
      // Retention (here deleteRecords) removes the rest from Kafka: the stored copies must be the same records.
      await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: String(produced.length) }] });
      const fromStore = await redriveDeadLetters(ctx, stream, { all: true, nowMs: () => Date.now() });
      expect(fromStore.map((r) => [r.outcome, r.source])).toEqual(letters.slice(1).map(() => ['redriven', 'stored']));
      expect(seen.map(asJava)).toEqual(java.slice(0, -1));
    } finally {
      await Promise.all([admin.disconnect(), metadata.closeAll()]);
      ddb.destroy();
    }
  });
});
