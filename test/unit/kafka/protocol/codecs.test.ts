/** The snappy / lz4 / zstd codecs registered into kafkajs. */
import { randomBytes } from 'node:crypto';
import { CompressionCodecs, CompressionTypes } from 'kafkajs';
// @ts-expect-error -- lz4js ships no types.
import lz4js from 'lz4js';
// @ts-expect-error -- lz4js ships no types.
import xxh32 from 'lz4js/xxh32.js';
// @ts-expect-error -- snappyjs ships no types.
import snappyjs from 'snappyjs';
import { KafkaError } from '../../../../lib/errors';
import {
  decompressRecords,
  hasNativeZstd,
  lz4Compress,
  lz4Decompress,
  registerCodecs,
  snappyCompress,
  snappyDecompress,
  zstdCompress,
  zstdDecompress,
} from '../../../../lib/kafka/protocol/codecs';

/** Buffer.equals: jest's deep equality walks large buffers byte by byte, slowly. */
function expectSame(actual: Buffer, expected: Buffer): void {
  expect(Buffer.isBuffer(actual)).toBe(true);
  expect(actual.length).toBe(expected.length);
  expect(actual.equals(expected)).toBe(true);
}

const samples: Array<[string, Buffer]> = [
  ['empty', Buffer.alloc(0)],
  ['one byte', Buffer.from([7])],
  ['text', Buffer.from('hello kafka '.repeat(100))],
  ['random 100 KiB', randomBytes(100 * 1024)],
  ['repetitive 300 KiB', Buffer.from('abcdefgh'.repeat(40 * 1024))],
  ['mixed 70 KiB', Buffer.concat([randomBytes(30 * 1024), Buffer.alloc(40 * 1024, 1)])],
];

/**
 * A zstd frame Node's zlib wrote (of ZSTD_INPUT): readable on any machine, by the pure-JS fzstd where
 * Node has no zstd, so reading is checked where compressing cannot be.
 */
const ZSTD_INPUT = Buffer.from("a zstd frame, written by Node's zlib; ".repeat(8));
const ZSTD_FRAME = Buffer.from('KLUv/WAwAH0BAGQCYSB6c3RkIGZyYW1lLCB3cml0dGVuIGJ5IE5vZGUncyB6bGliOyABAD5IqnoC', 'base64');

type Codecs = typeof import('../../../../lib/kafka/protocol/codecs');

/** The codecs module as it loads on a Node without zstd in zlib (before 22.15): zlib's zstd functions hidden. */
function codecsWithoutNativeZstd(): Codecs {
  let loaded: Codecs | undefined;
  jest.isolateModules(() => {
    jest.doMock('node:zlib', () => ({ ...jest.requireActual('node:zlib'), zstdCompress: undefined, zstdDecompress: undefined }));
    loaded = jest.requireActual('../../../../lib/kafka/protocol/codecs');
  });
  jest.dontMock('node:zlib');
  return loaded!;
}

describe('codecs', () => {
  it.each(samples)('snappy round-trips %s in snappy-java framing, and reads raw snappy blocks', (_name, input) => {
    const framed = snappyCompress(input);
    expect(framed.subarray(0, 8)).toEqual(Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0]));
    expectSame(snappyDecompress(framed), input);
    if (input.length > 0) expectSame(snappyDecompress((snappyjs as { compress(b: Buffer): Buffer }).compress(input)), input);
  });

  it.each(samples)('lz4 round-trips %s as a frame of independent 64 KiB blocks', (_name, input) => {
    const frame = lz4Compress(input);
    expect(frame.readUInt32LE(0)).toBe(0x184d2204);
    expect(frame[4]! & 0x20).toBe(0x20); // block independence, required by Kafka's Java reader
    expect(frame[5]).toBe(0x40); // 64 KiB blocks
    expectSame(lz4Decompress(frame), input);
  });

  it('lz4 reads frames written by lz4js itself (4 MiB dependent blocks) and checks content checksums', () => {
    const input = Buffer.from('lz4js frame '.repeat(10_000));
    const frame = Buffer.from((lz4js as { compress(b: Buffer): Uint8Array }).compress(input));
    expectSame(lz4Decompress(frame), input);
    expect(() => lz4Decompress(Buffer.from('not lz4 at all'))).toThrow(/magic/);
    expect(() => lz4Decompress(frame.subarray(0, frame.length - 6))).toThrow(/lz4/);
  });

  it('lz4 reads frames with content size, block checksums and a content checksum (as librdkafka may write)', () => {
    const input = Buffer.from('librdkafka style '.repeat(300));
    const hash = (xxh32 as { hash(seed: number, src: Uint8Array, index: number, length: number): number }).hash;
    const block = Buffer.alloc(input.length + 64);
    const size = (lz4js as { compressBlock(s: Uint8Array, d: Uint8Array, i: number, n: number, h: Uint32Array): number }).compressBlock(
      input,
      block,
      0,
      input.length,
      new Uint32Array(1 << 16),
    );
    const u32 = (v: number) => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(v >>> 0);
      return b;
    };
    const contentSize = Buffer.alloc(8);
    contentSize.writeBigUInt64LE(BigInt(input.length));
    const frame = Buffer.concat([
      u32(0x184d2204),
      Buffer.from([0x40 | 0x20 | 0x10 | 0x08 | 0x04, 0x40]),
      contentSize,
      Buffer.from([0]), // header checksum (not verified; the batch CRC covers the bytes)
      u32(size),
      block.subarray(0, size),
      u32(hash(0, block, 0, size)),
      u32(0),
      u32(hash(0, input, 0, input.length)),
    ]);
    expectSame(lz4Decompress(frame), input);
    const corrupt = Buffer.from(frame);
    corrupt.writeUInt32LE((corrupt.readUInt32LE(corrupt.length - 4) + 1) >>> 0, corrupt.length - 4);
    expect(() => lz4Decompress(corrupt)).toThrow(/content checksum/);
  });

  it('zstd reads a frame Node wrote, with the pure-JS fzstd as well as by default', async () => {
    expectSame(await zstdDecompress(ZSTD_FRAME, { native: false }), ZSTD_INPUT);
    expectSame(await zstdDecompress(ZSTD_FRAME), ZSTD_INPUT);
    expectSame(await decompressRecords(4, ZSTD_FRAME), ZSTD_INPUT);
  });

  // Compressing needs zlib's zstd (Node >= 22.15): skipped, by this title, on a Node without it.
  const withNativeZstd = hasNativeZstd ? it.each(samples) : it.skip.each(samples);
  withNativeZstd('zstd round-trips %s (native zlib and pure-JS fzstd decoders agree; needs Node >= 22.15)', async (_name, input) => {
    const compressed = await zstdCompress(input);
    expectSame(await zstdDecompress(compressed), input);
    expectSame(await zstdDecompress(compressed, { native: false }), input);
  });

  it('without zstd in zlib: reads zstd with fzstd, and refuses to write it naming the Node version needed', async () => {
    const old = codecsWithoutNativeZstd();
    expect(old.hasNativeZstd).toBe(false);
    expectSame(await old.zstdDecompress(ZSTD_FRAME), ZSTD_INPUT);
    expectSame(await old.decompressRecords(4, ZSTD_FRAME), ZSTD_INPUT);
    const refusal = await old.zstdCompress(ZSTD_INPUT).catch((e: unknown) => e);
    // Its own copy of the errors module: the class by name, the message in full.
    expect(refusal).toMatchObject({
      name: KafkaError.name,
      message: expect.stringMatching(/^zstd compression needs Node >= 22\.15 \(zlib zstd\); this is Node \d+\./),
    });
  });

  it('registers idempotently into kafkajs, which then compresses and decompresses with them', async () => {
    registerCodecs();
    registerCodecs();
    const table = CompressionCodecs as unknown as Record<
      number,
      () => { compress(e: { buffer: Buffer }): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> }
    >;
    const input = Buffer.from('registered '.repeat(500));
    // zstd compresses only with zlib's zstd (see above); its registered codec reads on any Node.
    const roundTrips = [CompressionTypes.Snappy, CompressionTypes.LZ4, ...(hasNativeZstd ? [CompressionTypes.ZSTD] : [])];
    for (const type of roundTrips) {
      const codec = table[type]!();
      expectSame(await codec.decompress(await codec.compress({ buffer: input })), input);
    }
    expectSame(await table[CompressionTypes.ZSTD]!().decompress(ZSTD_FRAME), ZSTD_INPUT);
  });
});
