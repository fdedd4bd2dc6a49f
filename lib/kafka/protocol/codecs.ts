/**
 * Compression codecs kafkajs 2.2.4 lacks (it ships gzip only and throws "not implemented" for the
 * rest), registered in kafkajs's codec table so its producer uses them; the range reader's own
 * record decoder (record-batch.ts) calls the same functions by codec id (`decompressRecords`).
 * All three are pure JavaScript (or Node's own zlib), so the Lambda bundle needs no native module
 * for arm64:
 * - snappy: `snappyjs` for the raw block format, framed the way Kafka's Java client writes it
 *   (snappy-java's "xerial" stream); unframed input is accepted as well (librdkafka, older clients).
 * - lz4: `lz4js` for the block format only. The LZ4 *frame* around it is written here, because
 *   lz4js's own frame writer omits the block-independence flag (Kafka's Java reader rejects
 *   dependent-block frames), uses 4 MiB blocks, and its frame reader mis-reads content sizes.
 * - zstd: Node's zlib (Node >= 22.15 / 23.8) when present; otherwise `fzstd`, a pure-JS
 *   decompressor (reading needs no compressor).
 */
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { decompress as fzstdDecompress } from 'fzstd';
import { CompressionCodecs, CompressionTypes } from 'kafkajs';
// @ts-expect-error -- snappyjs ships no types; the two functions used are typed below.
import snappyjsModule from 'snappyjs';
// @ts-expect-error -- lz4js ships no types; the block functions used are typed below.
import lz4jsModule from 'lz4js';
// @ts-expect-error -- lz4js ships no types; xxh32 is typed below.
import xxh32Module from 'lz4js/xxh32.js';
import { KafkaError } from '../../errors';

/** What kafkajs calls with a codec: `compress` gets its Encoder (bytes in `.buffer`). */
export type KafkajsCodec = {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
};

type ByteArray = Uint8Array;
const snappyjs = snappyjsModule as {
  compress(input: Buffer): Buffer;
  uncompress(input: Buffer, maxLength?: number): Buffer;
};
const lz4js = lz4jsModule as {
  compressBlock(src: ByteArray, dst: ByteArray, sIndex: number, sLength: number, hashTable: Uint32Array): number;
  decompressBlock(src: ByteArray, dst: ByteArray, sIndex: number, sLength: number, dIndex: number): number;
};
const xxh32 = xxh32Module as { hash(seed: number, src: ByteArray, index: number, length: number): number };

// ---- snappy ------------------------------------------------------------------------------------

/** snappy-java's stream header: magic, then format version 1 and minimum compatible version 1. */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;
/** snappy-java's default block size. */
const XERIAL_BLOCK_BYTES = 32 * 1024;

/** Snappy-compresses `input` in snappy-java's framing (what Kafka's Java producer writes). */
export function snappyCompress(input: Buffer): Buffer {
  const header = Buffer.alloc(XERIAL_HEADER_BYTES);
  XERIAL_MAGIC.copy(header, 0);
  header.writeInt32BE(1, 8);
  header.writeInt32BE(1, 12);
  const parts: Buffer[] = [header];
  for (let start = 0; start < input.length; start += XERIAL_BLOCK_BYTES) {
    const block = snappyjs.compress(input.subarray(start, start + XERIAL_BLOCK_BYTES));
    const length = Buffer.alloc(4);
    length.writeInt32BE(block.length, 0);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}

/** Decompresses snappy-java framed data, or a single raw snappy block. */
export function snappyDecompress(input: Buffer): Buffer {
  if (input.length < XERIAL_HEADER_BYTES || !input.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)) {
    return snappyjs.uncompress(input);
  }
  const parts: Buffer[] = [];
  let pos = XERIAL_HEADER_BYTES;
  while (pos < input.length) {
    if (pos + 4 > input.length) throw new Error('snappy: truncated block length');
    const length = input.readInt32BE(pos);
    pos += 4;
    if (length < 0 || pos + length > input.length) throw new Error(`snappy: block of ${length} bytes overruns the input`);
    parts.push(snappyjs.uncompress(input.subarray(pos, pos + length)));
    pos += length;
  }
  return Buffer.concat(parts);
}

// ---- lz4 ---------------------------------------------------------------------------------------

const LZ4_MAGIC = 0x184d2204;
const FLG_VERSION_MASK = 0xc0;
const FLG_VERSION_01 = 0x40;
const FLG_BLOCK_INDEPENDENT = 0x20;
const FLG_BLOCK_CHECKSUM = 0x10;
const FLG_CONTENT_SIZE = 0x08;
const FLG_CONTENT_CHECKSUM = 0x04;
const FLG_DICT_ID = 0x01;
const BLOCK_UNCOMPRESSED_BIT = 0x80000000;
const BLOCK_MAX_BYTES: Record<number, number> = { 4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024 };
/** BD byte for 64 KiB blocks, what Kafka's Java producer writes. */
const BD_64KB = 4 << 4;
/**
 * Block length we write, a little under the 64 KiB maximum. Decoders derived from the reference
 * implementation (lz4-java in Kafka's Java client) treat any literal run ending within 12 bytes of
 * their output capacity (the maximum block size) as the block's last sequence; lz4js may start a
 * match 10 bytes before the end of a block, which would be rejected in a completely full block.
 */
const LZ4_BLOCK_WRITE_BYTES = 64 * 1024 - 16;
/** An LZ4 sequence expands at most ~255x (a 1-byte length extension adds 255 bytes). */
const LZ4_MAX_RATIO = 255;

/** LZ4-compresses `input` as one LZ4 frame with independent 64 KiB blocks (Kafka's format). */
export function lz4Compress(input: Buffer): Buffer {
  const header = Buffer.from([0, 0, 0, 0, FLG_VERSION_01 | FLG_BLOCK_INDEPENDENT, BD_64KB, 0]);
  header.writeUInt32LE(LZ4_MAGIC, 0);
  header[6] = (xxh32.hash(0, header, 4, 2) >>> 8) & 0xff;
  const parts: Buffer[] = [header];
  const scratch = new Uint8Array(LZ4_BLOCK_WRITE_BYTES + Math.ceil(LZ4_BLOCK_WRITE_BYTES / 255) + 16);
  for (let start = 0; start < input.length; start += LZ4_BLOCK_WRITE_BYTES) {
    const length = Math.min(LZ4_BLOCK_WRITE_BYTES, input.length - start);
    // A fresh hash table per block keeps blocks independent (no match reaches into an earlier block).
    const compressed = lz4js.compressBlock(input, scratch, start, length, new Uint32Array(1 << 16));
    const size = Buffer.alloc(4);
    if (compressed > 0 && compressed < length) {
      size.writeUInt32LE(compressed, 0);
      parts.push(size, Buffer.from(scratch.subarray(0, compressed)));
    } else {
      size.writeUInt32LE((length | BLOCK_UNCOMPRESSED_BIT) >>> 0, 0);
      parts.push(size, input.subarray(start, start + length));
    }
  }
  parts.push(Buffer.alloc(4)); // end mark
  return Buffer.concat(parts);
}

/** Decompresses one LZ4 frame (any block size, dependent or independent blocks, optional checksums). */
export function lz4Decompress(input: Buffer): Buffer {
  const fail = (why: string): never => {
    throw new Error(`lz4: ${why}`);
  };
  if (input.length < 7 || input.readUInt32LE(0) !== LZ4_MAGIC) fail('not an LZ4 frame (bad magic number)');
  const flg = input[4]!;
  const bd = input[5]!;
  if ((flg & FLG_VERSION_MASK) !== FLG_VERSION_01) fail(`unsupported frame version in FLG ${flg}`);
  const blockMax = BLOCK_MAX_BYTES[(bd >> 4) & 0x7] ?? fail(`invalid block size in BD ${bd}`);
  const blockChecksum = (flg & FLG_BLOCK_CHECKSUM) !== 0;
  let pos = 6 + ((flg & FLG_CONTENT_SIZE) !== 0 ? 8 : 0) + ((flg & FLG_DICT_ID) !== 0 ? 4 : 0) + 1;

  // First pass over the block headers: the output capacity, so one contiguous buffer holds every
  // block (a dependent block may copy from the blocks before it).
  type Block = { start: number; size: number; raw: boolean };
  const blocks: Block[] = [];
  let capacity = 0;
  for (;;) {
    if (pos + 4 > input.length) fail('truncated frame (no end mark)');
    const word = input.readUInt32LE(pos);
    pos += 4;
    if (word === 0) break;
    const raw = (word & BLOCK_UNCOMPRESSED_BIT) !== 0;
    const size = raw ? word & ~BLOCK_UNCOMPRESSED_BIT : word;
    if (size > blockMax || pos + size > input.length) fail(`block of ${size} bytes overruns the frame`);
    blocks.push({ start: pos, size, raw });
    capacity += raw ? size : Math.min(blockMax, size * LZ4_MAX_RATIO + 16);
    pos += size + (blockChecksum ? 4 : 0);
  }
  const output = Buffer.allocUnsafe(capacity);
  let written = 0;
  for (const block of blocks) {
    if (block.raw) {
      input.copy(output, written, block.start, block.start + block.size);
      written += block.size;
    } else {
      const end = lz4js.decompressBlock(input, output, block.start, block.size, written);
      // Writes past a typed array's end are dropped silently: an end beyond it means corrupt input.
      if (end > capacity || end - written > blockMax) fail('block decompresses beyond its maximum size');
      written = end;
    }
  }
  if ((flg & FLG_CONTENT_CHECKSUM) !== 0) {
    if (pos + 4 > input.length) fail('truncated content checksum');
    if (xxh32.hash(0, output, 0, written) >>> 0 !== input.readUInt32LE(pos)) fail('content checksum mismatch');
  }
  // Keep no oversized backing store alive behind the records that reference this buffer.
  return written * 2 < capacity ? Buffer.from(output.subarray(0, written)) : output.subarray(0, written);
}

// ---- zstd --------------------------------------------------------------------------------------

type ZlibZstd = {
  zstdCompress?: (buffer: Buffer, callback: (error: Error | null, result: Buffer) => void) => void;
  zstdDecompress?: (buffer: Buffer, callback: (error: Error | null, result: Buffer) => void) => void;
};
const nodeZstd = zlib as unknown as ZlibZstd;
const zlibZstdCompress = nodeZstd.zstdCompress ? promisify(nodeZstd.zstdCompress) : undefined;
const zlibZstdDecompress = nodeZstd.zstdDecompress ? promisify(nodeZstd.zstdDecompress) : undefined;

/** Whether this Node has zstd in zlib (then it both compresses and decompresses natively). */
export const hasNativeZstd = zlibZstdCompress !== undefined && zlibZstdDecompress !== undefined;

/** zstd-compresses `input` (needs Node's zlib zstd: Node >= 22.15). */
export async function zstdCompress(input: Buffer): Promise<Buffer> {
  if (!zlibZstdCompress) {
    throw new KafkaError(`zstd compression needs Node >= 22.15 (zlib zstd); this is Node ${process.versions.node}`);
  }
  return zlibZstdCompress(input);
}

/** zstd-decompresses `input`, natively when Node has zstd, else with the pure-JS fzstd. */
export async function zstdDecompress(input: Buffer, { native = hasNativeZstd } = {}): Promise<Buffer> {
  if (native && zlibZstdDecompress) return zlibZstdDecompress(input);
  const out = fzstdDecompress(input);
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

// ---- decompression by codec id ----------------------------------------------------------------

const gunzip = promisify(zlib.unzip);

/** Record batch attribute bits 0-2: the codec of the batch's records. */
export const COMPRESSION_CODEC_MASK = 0x07;

/**
 * Decompresses a record batch's records with the codec its attributes name (0 none, 1 gzip,
 * 2 snappy, 3 lz4, 4 zstd), the same functions the codecs registered into kafkajs use.
 */
export async function decompressRecords(codec: number, data: Buffer): Promise<Buffer> {
  switch (codec) {
    case 0:
      return data;
    case 1:
      // unzip accepts gzip (what Kafka writes) and zlib streams, as kafkajs's own gzip codec does.
      return gunzip(data);
    case 2:
      return snappyDecompress(data);
    case 3:
      return lz4Decompress(data);
    case 4:
      return zstdDecompress(data);
    default:
      throw new KafkaError(`unknown compression codec ${codec} in a record batch's attributes`);
  }
}

// ---- registration ------------------------------------------------------------------------------

/** The codecs as kafkajs's codec table holds them. */
const snappyCodec: KafkajsCodec = {
  compress: async (encoder) => snappyCompress(encoder.buffer),
  decompress: async (buffer) => snappyDecompress(buffer),
};
const lz4Codec: KafkajsCodec = {
  compress: async (encoder) => lz4Compress(encoder.buffer),
  decompress: async (buffer) => lz4Decompress(buffer),
};
const zstdCodec: KafkajsCodec = {
  compress: async (encoder) => zstdCompress(encoder.buffer),
  decompress: async (buffer) => zstdDecompress(buffer),
};

let registered = false;

/**
 * Puts the snappy, lz4 and zstd codecs into kafkajs's (process-wide) codec table. Idempotent; it
 * replaces whatever was registered for those three types before.
 */
export function registerCodecs(): void {
  if (registered) return;
  const table = CompressionCodecs as unknown as Record<number, () => KafkajsCodec>;
  table[CompressionTypes.Snappy] = () => snappyCodec;
  table[CompressionTypes.LZ4] = () => lz4Codec;
  table[CompressionTypes.ZSTD] = () => zstdCodec;
  registered = true;
}
