/** The v2 record decoder on batches written byte by byte: headers exactly as written, timestamp types, every codec. */
import { registerCodecs } from '../../../../lib/kafka/protocol/codecs';
import { KafkaError } from '../../../../lib/errors';
import { decodeRecordBatches } from '../../../../lib/kafka/protocol/fetch-response';
import type { KafkaRecord } from '../../../../lib/ports/range-reader';
import { rawBatch, type RawBatch } from './raw-batch';

beforeAll(() => registerCodecs());

const where = { topic: 't', partition: 3 };
const buf = (s: string): Buffer => Buffer.from(s);

async function decode(spec: RawBatch): Promise<KafkaRecord[]> {
  const [batch] = decodeRecordBatches(await rawBatch(spec), where);
  return batch!.records();
}

const hostile = [
  { key: 'constructor', value: buf('c') },
  { key: '__proto__', value: buf('p') },
  { key: 'a', value: buf('a1') },
  { key: 'toString', value: null },
  { key: 'b', value: buf('b1') },
  { key: 'a', value: buf('a2') },
  { key: 'd', value: buf('d1') },
  { key: 'd', value: null },
  { key: '', value: Buffer.alloc(0) },
  { key: 'hasOwnProperty', value: Buffer.from([0xff, 0x00, 0x80]) },
  { key: 'valueOf', value: buf('v') },
];

describe('decodeBatchRecords (via FetchedBatch.records)', () => {
  it.each([0, 1, 2, 3, 4] as const)('keeps headers as an ordered list exactly as written (codec %i)', async (codec) => {
    const records = await decode({
      baseOffset: 100,
      codec,
      records: [
        { offsetDelta: 0, key: buf('k'), value: buf('v'), headers: hostile },
        { offsetDelta: 2, timestampDelta: 5, key: null, value: null },
        { offsetDelta: 3, timestampDelta: -7, key: Buffer.alloc(0), value: Buffer.alloc(0), headers: [{ key: 'x', value: null }] },
      ],
    });
    expect(records).toEqual([
      {
        topic: 't',
        partition: 3,
        offset: 100,
        timestampMs: 1_700_000_000_000,
        timestampType: 'CreateTime',
        key: buf('k'),
        value: buf('v'),
        headers: hostile,
      },
      {
        topic: 't',
        partition: 3,
        offset: 102,
        timestampMs: 1_700_000_000_005,
        timestampType: 'CreateTime',
        key: null,
        value: null,
        headers: [],
      },
      {
        topic: 't',
        partition: 3,
        offset: 103,
        timestampMs: 1_699_999_999_993,
        timestampType: 'CreateTime',
        key: Buffer.alloc(0),
        value: Buffer.alloc(0),
        headers: [{ key: 'x', value: null }],
      },
    ]);
    // Plain data, no prototype surprises: the header list is an array of {key, value}.
    expect(Object.getPrototypeOf(records[0]!.headers)).toBe(Array.prototype);
  });

  it('gives every record the batch max timestamp under LogAppendTime (Java: DefaultRecordBatch)', async () => {
    const records = await decode({
      baseOffset: 0,
      logAppendTime: true,
      baseTimestamp: 1_000,
      maxTimestamp: 9_999,
      records: [
        { offsetDelta: 0, timestampDelta: 1 },
        { offsetDelta: 1, timestampDelta: 2 },
      ],
    });
    expect(records.map((r) => [r.timestampMs, r.timestampType])).toEqual([
      [9_999, 'LogAppendTime'],
      [9_999, 'LogAppendTime'],
    ]);
  });

  it('reads multi-byte varints and varlongs exactly (offset deltas, timestamp deltas beyond 2^31, long values)', async () => {
    const value = Buffer.alloc(70_000, 7);
    const records = await decode({
      baseOffset: 5,
      baseTimestamp: 0,
      records: [{ offsetDelta: 300_000, timestampDelta: 2 ** 40 + 3, value, headers: [{ key: 'h'.repeat(200), value }] }],
    });
    expect(records[0]).toMatchObject({ offset: 300_005, timestampMs: 2 ** 40 + 3 });
    expect(records[0]!.value!.equals(value)).toBe(true);
    expect(records[0]!.headers[0]!.key).toBe('h'.repeat(200));
  });

  it('rejects records that do not fill the batch exactly, or lengths that overrun it', async () => {
    const one = { offsetDelta: 0, value: buf('v') };
    await expect(decode({ baseOffset: 0, records: [one], trailing: Buffer.from([1, 2]) })).rejects.toThrow(
      /2 bytes left after the 1 records/,
    );
    await expect(decode({ baseOffset: 0, records: [one], recordCount: 2 })).rejects.toThrow(KafkaError);
    await expect(decode({ baseOffset: 0, records: [one], recordCount: -1 })).rejects.toThrow(/negative record count/);
    await expect(decode({ baseOffset: 0, records: [one], recordCount: 1_000_000_000 })).rejects.toThrow(
      /1000000000 records declared in \d+ bytes/,
    );
    await expect(decode({ baseOffset: 0, records: [one], codec: 6 as 0 })).rejects.toThrow(/unknown compression codec 6/);
    const batch = await rawBatch({ baseOffset: 0, records: [one] });
    batch[61] = 0x7e; // the record's length varint: 63 bytes, more than the batch holds
    const [b] = decodeRecordBatches(batch, where, { checkCrcs: false });
    await expect(b!.records()).rejects.toThrow(/overruns the batch/);
  });
});
