/** Builds record batches and Fetch v11 responses as a broker would send them (kafkajs's encoders). */
// @ts-expect-error -- kafkajs internals, untyped.
import kafkajsRecordBatch from 'kafkajs/src/protocol/recordBatch/v0';
// @ts-expect-error -- kafkajs internals, untyped.
import kafkajsRecord from 'kafkajs/src/protocol/recordBatch/record/v0';
// @ts-expect-error -- kafkajs internals, untyped.
import kafkajsLong from 'kafkajs/src/utils/long';
// @ts-expect-error -- kafkajs internals, untyped.
import crc32c from 'kafkajs/src/protocol/recordBatch/crc32C';

type Encoder = { buffer: Buffer };
const { RecordBatch } = kafkajsRecordBatch as { RecordBatch: (args: Record<string, unknown>) => Promise<Encoder> };
const Record = kafkajsRecord as (args: Record<string, unknown>) => Encoder;
const Long = kafkajsLong as { fromValue(v: number | string | bigint): unknown };
const crc = crc32c as (b: Buffer) => number;

export type RecordSpec = {
  delta: number;
  key?: string | Buffer | null;
  value?: string | Buffer | null;
  headers?: Record<string, string | string[]>;
  timestampDelta?: number;
};

export type BatchSpec = {
  base: number | bigint;
  records?: RecordSpec[];
  /** Default: the last record's delta (0 without records). */
  lastOffsetDelta?: number;
  producerId?: number;
  transactional?: boolean;
  /** Control batch with one ABORT (0) or COMMIT (1) marker record. */
  control?: 'abort' | 'commit';
  compression?: number;
  firstTimestamp?: number;
};

const ATTRIBUTES_AT = 21;
const CRC_AT = 17;

/** One record batch (magic 2) exactly as it sits in a Fetch response's record set. */
export async function batchBytes(spec: BatchSpec): Promise<Buffer> {
  const toBuf = (v: string | Buffer | null | undefined): Buffer | null =>
    v === null || v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v);
  let specs = spec.records ?? [];
  if (spec.control) {
    const key = Buffer.alloc(4);
    key.writeInt16BE(0, 0);
    key.writeInt16BE(spec.control === 'abort' ? 0 : 1, 2);
    specs = [{ delta: 0, key, value: Buffer.from([0, 0, 0, 0, 0, 0]) }];
  }
  const records = specs.map((r) =>
    Record({
      offsetDelta: r.delta,
      timestampDelta: r.timestampDelta ?? 0,
      key: toBuf(r.key),
      value: toBuf(r.value),
      headers: r.headers ?? {},
    }),
  );
  const encoder = await RecordBatch({
    compression: spec.compression ?? 0,
    firstOffset: Long.fromValue(String(spec.base)),
    firstTimestamp: spec.firstTimestamp ?? 1_700_000_000_000,
    maxTimestamp: spec.firstTimestamp ?? 1_700_000_000_000,
    lastOffsetDelta: spec.lastOffsetDelta ?? specs.at(-1)?.delta ?? 0,
    transactional: spec.transactional ?? spec.control !== undefined,
    producerId: Long.fromValue(spec.producerId ?? -1),
    records,
  });
  const buf = Buffer.from(encoder.buffer);
  if (spec.control) {
    buf.writeInt16BE(buf.readInt16BE(ATTRIBUTES_AT) | 0x20, ATTRIBUTES_AT);
    buf.writeUInt32BE(crc(buf.subarray(ATTRIBUTES_AT)), CRC_AT);
  }
  return buf;
}

export type PartitionSpec = {
  topic?: string;
  partition?: number;
  errorCode?: number;
  highWatermark?: number;
  lastStableOffset?: number;
  logStartOffset?: number;
  aborted?: Array<{ producerId: number; firstOffset: number }> | null;
  records?: Buffer | null;
};

/** A Fetch v11 response body (what follows the correlation id) for one partition. */
export function fetchResponseBytes(p: PartitionSpec, errorCode = 0, throttleMs = 0): Buffer {
  const parts: Buffer[] = [];
  const i16 = (v: number) => {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    parts.push(b);
  };
  const i32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    parts.push(b);
  };
  const i64 = (v: number | bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(v));
    parts.push(b);
  };
  const topic = p.topic ?? 't';
  i32(throttleMs);
  i16(errorCode);
  i32(0);
  i32(1);
  i16(Buffer.byteLength(topic));
  parts.push(Buffer.from(topic));
  i32(1);
  i32(p.partition ?? 0);
  i16(p.errorCode ?? 0);
  i64(p.highWatermark ?? 0);
  i64(p.lastStableOffset ?? p.highWatermark ?? 0);
  i64(p.logStartOffset ?? 0);
  if (p.aborted === null || p.aborted === undefined) i32(-1);
  else {
    i32(p.aborted.length);
    for (const a of p.aborted) {
      i64(a.producerId);
      i64(a.firstOffset);
    }
  }
  i32(-1);
  if (p.records === null || p.records === undefined) i32(-1);
  else {
    i32(p.records.length);
    parts.push(p.records);
  }
  return Buffer.concat(parts);
}
