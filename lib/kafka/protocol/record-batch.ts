/**
 * Decodes the records inside one v2 record batch, the way Java's consumer reads them
 * (DefaultRecordBatch / DefaultRecord): zigzag varint and varlong fields, key and value as
 * `subarray`s of the (decompressed) batch, headers as an ordered list in which names may repeat and
 * a value of length -1 is null, and with LogAppendTime (batch attribute bit 3) every record's
 * timestamp is the batch's max timestamp.
 *
 * Hand-written, not kafkajs's RecordBatchDecoder: that one builds headers as a plain object (a
 * header named `constructor` or `__proto__` collides with Object.prototype, a repeated name is
 * regrouped, a null value in a repeated header is dropped) and ignores the timestamp type. No
 * varint library reads zigzag varlongs in place from a Buffer, and this is the reader's hot loop:
 * one object per record and per header, no per-record copies or closures.
 */
import type { KafkaRecord, RecordHeader, TimestampType } from '../../ports/range-reader';
import { COMPRESSION_CODEC_MASK, decompressRecords } from './codecs';
import { KafkaError } from '../../errors';

/** Offsets of batch header fields (see fetch-response.ts for the rest). */
const ATTRIBUTES_AT = 21;
const BASE_TIMESTAMP_AT = 27;
const MAX_TIMESTAMP_AT = 35;
const RECORD_COUNT_AT = 57;
const RECORDS_AT = 61;
const TIMESTAMP_TYPE_FLAG = 0x08;
/** Shared by every record without headers (most of them): no allocation per record. */
const NO_HEADERS: readonly RecordHeader[] = Object.freeze([]);

/** Where a batch's records go: the partition they belong to, for the records and for errors. */
export type BatchContext = { topic: string; partition: number; baseOffset: number; where: string };

function corrupt(where: string, baseOffset: number, why: string): KafkaError {
  return new KafkaError(`${where}: corrupt record in the batch at offset ${baseOffset}: ${why}`);
}

/**
 * Decodes (decompressing first) the records of one complete v2 batch, `batch` being its bytes from
 * the base offset on. Throws KafkaError when the records do not fill the batch exactly or a length
 * is out of bounds (what Java's consumer rejects as an InvalidRecordException).
 */
export async function decodeBatchRecords(batch: Buffer, ctx: BatchContext): Promise<KafkaRecord[]> {
  const count = batch.readInt32BE(RECORD_COUNT_AT);
  if (count === 0) return [];
  if (count < 0) throw corrupt(ctx.where, ctx.baseOffset, `negative record count ${count}`);
  const attributes = batch.readInt16BE(ATTRIBUTES_AT);
  let data: Buffer;
  try {
    data = await decompressRecords(attributes & COMPRESSION_CODEC_MASK, batch.subarray(RECORDS_AT));
  } catch (cause) {
    if (cause instanceof KafkaError) throw cause;
    throw new KafkaError(`${ctx.where}: the batch at offset ${ctx.baseOffset} does not decompress: ${(cause as Error).message}`, { cause });
  }
  // Every record takes at least 7 bytes: a corrupt count must not size the array below.
  if (count > data.length) throw corrupt(ctx.where, ctx.baseOffset, `${count} records declared in ${data.length} bytes`);
  const timestampType: TimestampType = (attributes & TIMESTAMP_TYPE_FLAG) !== 0 ? 'LogAppendTime' : 'CreateTime';
  const baseTimestamp = Number(batch.readBigInt64BE(BASE_TIMESTAMP_AT));
  const logAppendTime = timestampType === 'LogAppendTime' ? Number(batch.readBigInt64BE(MAX_TIMESTAMP_AT)) : undefined;
  const cursor = new RecordCursor(data, ctx);
  const records: KafkaRecord[] = new Array<KafkaRecord>(count);
  for (let i = 0; i < count; i++) records[i] = cursor.record(baseTimestamp, logAppendTime, timestampType);
  if (cursor.pos !== data.length) {
    throw corrupt(ctx.where, ctx.baseOffset, `${data.length - cursor.pos} bytes left after the ${count} records the batch declares`);
  }
  return records;
}

/** Longest header name read by the ASCII fast path. */
const SHORT_NAME_BYTES = 24;

/**
 * A header name: UTF-8 (Java decodes it the same way, invalid bytes as U+FFFD). Short ASCII names,
 * the usual case, skip Buffer#toString's per-call overhead (measured ~30 % per header).
 */
function headerName(buf: Buffer, start: number, end: number): string {
  if (end - start > SHORT_NAME_BYTES) return buf.toString('utf8', start, end);
  let name = '';
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c >= 0x80) return buf.toString('utf8', start, end);
    name += String.fromCharCode(c);
  }
  return name;
}

/** A cursor over a batch's record bytes. */
class RecordCursor {
  pos = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly ctx: BatchContext,
  ) {}

  private fail(why: string): never {
    throw corrupt(this.ctx.where, this.ctx.baseOffset, why);
  }

  /** A zigzag varint of at most 5 bytes (Java's ByteUtils.readVarint). */
  varint(): number {
    const buf = this.buf;
    let value = 0;
    let shift = 0;
    let b: number;
    do {
      if (this.pos >= buf.length) this.fail('truncated varint');
      if (shift > 28) this.fail('varint longer than 5 bytes');
      b = buf[this.pos++]!;
      value |= (b & 0x7f) << shift;
      shift += 7;
    } while ((b & 0x80) !== 0);
    return (value >>> 1) ^ -(value & 1);
  }

  /** A zigzag varlong of at most 10 bytes (ByteUtils.readVarlong), exact within Number.MAX_SAFE_INTEGER. */
  varlong(): number {
    const buf = this.buf;
    if (this.pos < buf.length && buf[this.pos]! < 0x80) {
      const b = buf[this.pos++]!;
      return (b >>> 1) ^ -(b & 1);
    }
    let value = 0;
    let scale = 1;
    let b: number;
    do {
      if (this.pos >= buf.length) this.fail('truncated varlong');
      if (scale > 2 ** 63) this.fail('varlong longer than 10 bytes');
      b = buf[this.pos++]!;
      value += (b & 0x7f) * scale;
      scale *= 128;
    } while ((b & 0x80) !== 0);
    if (value > Number.MAX_SAFE_INTEGER) this.fail('timestamp delta beyond Number.MAX_SAFE_INTEGER');
    return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
  }

  /** `length` bytes as a view into the batch (no copy), or null for length -1. */
  bytes(length: number, end: number, what: string): Buffer | null {
    if (length < 0) {
      if (length === -1) return null;
      this.fail(`${what} length ${length}`);
    }
    if (this.pos + length > end) this.fail(`${what} of ${length} bytes overruns its record`);
    const v = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return v;
  }

  record(baseTimestamp: number, logAppendTime: number | undefined, timestampType: TimestampType): KafkaRecord {
    const length = this.varint();
    const end = this.pos + length;
    if (length < 0 || end > this.buf.length) this.fail(`record of ${length} bytes overruns the batch`);
    this.pos += 1; // record attributes: unused by format v2
    const timestampDelta = this.varlong();
    const offset = this.ctx.baseOffset + this.varint();
    if (!Number.isSafeInteger(offset)) this.fail(`record offset ${offset} is beyond Number.MAX_SAFE_INTEGER`);
    const key = this.bytes(this.varint(), end, 'key');
    const value = this.bytes(this.varint(), end, 'value');
    const headerCount = this.varint();
    // Every header takes at least 2 bytes: a corrupt count must not size the array below.
    if (headerCount < 0 || headerCount > end - this.pos) this.fail(`header count ${headerCount} in a record of ${length} bytes`);
    let headers = NO_HEADERS;
    if (headerCount > 0) {
      const list: RecordHeader[] = new Array<RecordHeader>(headerCount);
      for (let h = 0; h < headerCount; h++) {
        const keyLength = this.varint();
        if (keyLength < 0 || this.pos + keyLength > end) this.fail(`header key length ${keyLength}`);
        const name = headerName(this.buf, this.pos, this.pos + keyLength);
        this.pos += keyLength;
        list[h] = { key: name, value: this.bytes(this.varint(), end, 'header value') };
      }
      headers = list;
    }
    if (this.pos !== end) this.fail(`record at offset ${offset} declares ${length} bytes but its fields take ${this.pos - end + length}`);
    return {
      topic: this.ctx.topic,
      partition: this.ctx.partition,
      offset,
      timestampMs: logAppendTime ?? baseTimestamp + timestampDelta,
      timestampType,
      key,
      value,
      headers,
    };
  }
}
