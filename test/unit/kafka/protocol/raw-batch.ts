/**
 * Writes v2 record batches byte by byte from the wire format (not through kafkajs's object-shaped
 * encoder, which cannot express repeated header names in any order or null header values).
 */
import { gzipSync } from 'node:zlib';
import { buf as crc32c } from 'crc-32/crc32c';
import { lz4Compress, snappyCompress, zstdCompress } from '../../../../lib/kafka/protocol/codecs';

export type RawRecord = {
  offsetDelta: number;
  timestampDelta?: number;
  key?: Buffer | null;
  value?: Buffer | null;
  headers?: Array<{ key: string; value: Buffer | null }>;
};

export type RawBatch = {
  baseOffset: number;
  records: RawRecord[];
  baseTimestamp?: number;
  maxTimestamp?: number;
  logAppendTime?: boolean;
  codec?: 0 | 1 | 2 | 3 | 4;
  /** Override the declared record count (corruption tests). */
  recordCount?: number;
  /** Bytes appended after the records (corruption tests). */
  trailing?: Buffer;
};

/** Zigzag varint/varlong as Kafka writes it (ByteUtils.writeVarlong); exact for safe integers. */
export function varlong(v: number): Buffer {
  let z = v >= 0 ? v * 2 : -v * 2 - 1;
  const out: number[] = [];
  while (z >= 0x80) {
    out.push((z % 128) | 0x80);
    z = Math.floor(z / 128);
  }
  out.push(z);
  return Buffer.from(out);
}

const bytesField = (b: Buffer | null | undefined): Buffer[] => (b === null || b === undefined ? [varlong(-1)] : [varlong(b.length), b]);

export function rawRecord(r: RawRecord): Buffer {
  const headers = r.headers ?? [];
  const body = Buffer.concat([
    Buffer.from([0]),
    varlong(r.timestampDelta ?? 0),
    varlong(r.offsetDelta),
    ...bytesField(r.key),
    ...bytesField(r.value),
    varlong(headers.length),
    ...headers.flatMap((h) => [...bytesField(Buffer.from(h.key)), ...bytesField(h.value)]),
  ]);
  return Buffer.concat([varlong(body.length), body]);
}

async function compress(codec: number, data: Buffer): Promise<Buffer> {
  if (codec === 1) return gzipSync(data);
  if (codec === 2) return snappyCompress(data);
  if (codec === 3) return lz4Compress(data);
  if (codec === 4) return zstdCompress(data);
  return data;
}

/** One batch as it sits in a Fetch response's record set, CRC included. */
export async function rawBatch(b: RawBatch): Promise<Buffer> {
  const codec = b.codec ?? 0;
  const records = await compress(codec, Buffer.concat([...b.records.map(rawRecord), b.trailing ?? Buffer.alloc(0)]));
  const header = Buffer.alloc(61);
  const baseTimestamp = b.baseTimestamp ?? 1_700_000_000_000;
  header.writeBigInt64BE(BigInt(b.baseOffset), 0);
  header.writeInt32BE(61 - 12 + records.length, 8);
  header.writeInt32BE(0, 12); // partition leader epoch
  header.writeInt8(2, 16);
  header.writeInt16BE(codec | (b.logAppendTime ? 0x08 : 0), 21);
  header.writeInt32BE(b.records.at(-1)?.offsetDelta ?? 0, 23);
  header.writeBigInt64BE(BigInt(baseTimestamp), 27);
  header.writeBigInt64BE(BigInt(b.maxTimestamp ?? baseTimestamp), 35);
  header.writeBigInt64BE(-1n, 43);
  header.writeInt16BE(-1, 51);
  header.writeInt32BE(-1, 53);
  header.writeInt32BE(b.recordCount ?? b.records.length, 57);
  const batch = Buffer.concat([header, records]);
  batch.writeUInt32BE(crc32c(batch.subarray(21)) >>> 0, 17);
  return batch;
}
