/** The batch-preserving Fetch v11 decoder on synthetic broker responses. */
import { CompressionTypes } from 'kafkajs';
import { registerCodecs } from '../../../../lib/kafka/protocol/codecs';
import { KafkaError } from '../../../../lib/errors';
import { crc32cImplementation } from '../../../../lib/kafka/protocol/crc32c';
import { decodeFetchResponseV11, decodeRecordBatches } from '../../../../lib/kafka/protocol/fetch-response';
import { batchBytes, fetchResponseBytes } from './batches';

beforeAll(() => registerCodecs());

describe('decodeFetchResponseV11', () => {
  it('keeps every batch header, including batches whose records compaction removed', async () => {
    const records = Buffer.concat([
      await batchBytes({
        base: 10,
        records: [
          { delta: 0, key: 'a', value: 'A' },
          { delta: 4, key: 'b', value: null },
        ],
        lastOffsetDelta: 6,
      }),
      await batchBytes({ base: 17, records: [], lastOffsetDelta: 9, producerId: 42 }), // empty: compacted away
      await batchBytes({ base: 27, records: [{ delta: 0, value: 'z', headers: { h: ['1', '2'] } }], compression: CompressionTypes.ZSTD }),
    ]);
    const response = await decodeFetchResponseV11(
      fetchResponseBytes({
        topic: 'orders',
        partition: 3,
        highWatermark: 100,
        lastStableOffset: 90,
        logStartOffset: 5,
        aborted: null,
        records,
      }),
    );
    expect(response.errorCode).toBe(0);
    const [p] = response.partitions;
    expect(p).toMatchObject({
      topic: 'orders',
      partition: 3,
      errorCode: 0,
      highWatermark: 100,
      lastStableOffset: 90,
      logStartOffset: 5,
      abortedTransactions: null,
    });
    expect(p!.batches.map((b) => [b.baseOffset, b.lastOffset, b.recordCount, b.producerId])).toEqual([
      [10, 16, 2, '-1'],
      [17, 26, 0, '42'],
      [27, 27, 1, '-1'],
    ]);
    expect(p!.recordSetBytes).toBe(records.length);
    expect(p!.batches.reduce((n, b) => n + b.sizeBytes, 0)).toBe(records.length);
    const first = await p!.batches[0]!.records();
    expect(first.map((r) => [r.offset, r.key?.toString() ?? null, r.value?.toString() ?? null])).toEqual([
      [10, 'a', 'A'],
      [14, 'b', null],
    ]);
    expect(await p!.batches[1]!.records()).toEqual([]);
    const [z] = await p!.batches[2]!.records();
    expect(z!.value!.toString()).toBe('z');
    expect(z!.headers.map((h) => [h.key, String(h.value)])).toEqual([
      ['h', '1'],
      ['h', '2'],
    ]);
  });

  it('reads transactional, control and aborted-transaction fields', async () => {
    const records = Buffer.concat([
      await batchBytes({ base: 0, records: [{ delta: 0, value: 'x' }], producerId: 7, transactional: true }),
      await batchBytes({ base: 1, control: 'abort', producerId: 7 }),
    ]);
    const { partitions } = await decodeFetchResponseV11(
      fetchResponseBytes({ highWatermark: 2, aborted: [{ producerId: 7, firstOffset: 0 }], records }),
    );
    const [data, marker] = partitions[0]!.batches;
    expect(data).toMatchObject({ isTransactional: true, isControl: false, producerId: '7' });
    expect(marker).toMatchObject({ isTransactional: true, isControl: true, producerId: '7', baseOffset: 1, lastOffset: 1 });
    expect(partitions[0]!.abortedTransactions).toEqual([{ producerId: '7', firstOffset: 0 }]);
  });

  it('drops a trailing partial batch (cut by the byte limit) and returns partition errors instead of throwing', async () => {
    const whole = await batchBytes({ base: 0, records: [{ delta: 0, value: 'x'.repeat(100) }] });
    const next = await batchBytes({ base: 1, records: [{ delta: 0, value: 'y'.repeat(100) }] });
    const cut = Buffer.concat([whole, next.subarray(0, 40)]);
    const { partitions } = await decodeFetchResponseV11(fetchResponseBytes({ highWatermark: 2, records: cut }));
    expect(partitions[0]!.batches.map((b) => b.baseOffset)).toEqual([0]);

    const failed = await decodeFetchResponseV11(fetchResponseBytes({ errorCode: 1, highWatermark: -1, logStartOffset: -1, records: null }));
    expect(failed.partitions[0]).toMatchObject({ errorCode: 1, highWatermark: -1, batches: [] });
  });

  it('checks batches with the native CRC-32C once a response was decoded, and rejects any flipped byte', async () => {
    const value = 'v'.repeat(1000);
    const good = await batchBytes({ base: 0, records: Array.from({ length: 8 }, (_, delta) => ({ delta, value })) });
    await decodeFetchResponseV11(fetchResponseBytes({ highWatermark: 8, records: good }));
    expect(crc32cImplementation(good.length)).toBe('native');
    const [fine] = decodeRecordBatches(good, { topic: 't', partition: 0 });
    expect(() => fine!.verify()).not.toThrow();
    for (const at of [21, Math.floor(good.length / 2), good.length - 1]) {
      const bad = Buffer.from(good);
      bad[at]! ^= 0x01;
      const [checked] = decodeRecordBatches(bad, { topic: 't', partition: 0 });
      expect(() => checked!.verify()).toThrow(/CRC/);
    }
  });

  it('rejects corrupt batches (CRC) unless checks are off, and offsets beyond Number.MAX_SAFE_INTEGER', async () => {
    const good = await batchBytes({ base: 0, records: [{ delta: 0, value: 'hello' }] });
    const bad = Buffer.from(good);
    bad[bad.length - 3]! ^= 0xff;
    // Checked on demand (verify, records), not while splitting: the header is readable before.
    const [checked] = decodeRecordBatches(bad, { topic: 't', partition: 0 });
    expect(checked!.lastOffset).toBe(0);
    expect(() => checked!.verify()).toThrow(/CRC/);
    await expect(checked!.records()).rejects.toThrow(/CRC/);
    const [unchecked] = decodeRecordBatches(bad, { topic: 't', partition: 0 }, { checkCrcs: false });
    expect(() => unchecked!.verify()).not.toThrow();
    const [fine] = decodeRecordBatches(good, { topic: 't', partition: 0 });
    expect(() => fine!.verify()).not.toThrow();

    const huge = await batchBytes({ base: 2n ** 53n, records: [{ delta: 0, value: 'x' }] });
    expect(() => decodeRecordBatches(huge, { topic: 't', partition: 0 })).toThrow(KafkaError);
    expect(() => decodeRecordBatches(huge, { topic: 't', partition: 0 })).toThrow(/MAX_SAFE_INTEGER/);
    const last = await batchBytes({
      base: Number.MAX_SAFE_INTEGER - 1,
      records: [
        { delta: 0, value: 'x' },
        { delta: 1, value: 'y' },
      ],
    });
    expect(decodeRecordBatches(last, { topic: 't', partition: 0 })[0]!.lastOffset).toBe(Number.MAX_SAFE_INTEGER);
    const over = await batchBytes({
      base: Number.MAX_SAFE_INTEGER,
      records: [
        { delta: 0, value: 'x' },
        { delta: 1, value: 'y' },
      ],
    });
    expect(() => decodeRecordBatches(over, { topic: 't', partition: 0 })).toThrow(/MAX_SAFE_INTEGER/);
  });

  it('rejects the pre-0.11 message formats with a clear error', async () => {
    const batch = await batchBytes({ base: 0, records: [{ delta: 0, value: 'x' }] });
    batch.writeInt8(1, 16); // magic 1
    expect(() => decodeRecordBatches(batch, { topic: 't', partition: 0 }, { checkCrcs: false })).toThrow(/message format v1/);
  });
});
