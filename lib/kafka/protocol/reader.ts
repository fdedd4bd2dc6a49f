/**
 * A bounds-checked cursor over one Kafka response's big-endian primitives, classic (int16/int32
 * length prefixes) and flexible (KIP-482: unsigned varints, compact strings and arrays, tagged
 * fields). The Fetch and Metadata decoders share it, so a truncated or malformed response fails the
 * same way: a `KafkaError` naming the response, the field and the byte.
 */
import { KafkaError } from '../../errors';

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An int64 offset as a number; refuses what a number cannot hold exactly. */
export function safeOffset(value: bigint, what: string): number {
  if (value > MAX_SAFE || value < -MAX_SAFE) {
    throw new KafkaError(`${what} ${value} is beyond Number.MAX_SAFE_INTEGER and cannot be represented exactly`);
  }
  return Number(value);
}

/** The cursor (see the module comment). */
export class Reader {
  private pos = 0;
  /** `response` names the response in errors (`Fetch`, `Metadata`). */
  constructor(
    private readonly buf: Buffer,
    private readonly response: string,
  ) {}

  private need(n: number, what: string): void {
    if (this.pos + n > this.buf.length) {
      throw new KafkaError(`${this.response} response truncated reading ${what} at byte ${this.pos} (${this.buf.length} bytes)`);
    }
  }
  /** INT8. */
  int8(what: string): number {
    this.need(1, what);
    return this.buf.readInt8(this.pos++);
  }
  /** INT16. */
  int16(what: string): number {
    this.need(2, what);
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  /** INT32. */
  int32(what: string): number {
    this.need(4, what);
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  /** INT64 as a number; refuses what a number cannot hold exactly (offsets must stay exact). */
  int64(what: string): number {
    return safeOffset(this.bigInt64(what), what);
  }
  /** INT64 in decimal (ids such as producer ids, compared but never computed with). */
  int64String(what: string): string {
    return this.bigInt64(what).toString();
  }
  private bigInt64(what: string): bigint {
    this.need(8, what);
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }
  /** UNSIGNED_VARINT (at most 5 bytes). */
  uvarint(what: string): number {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      this.need(1, what);
      const b = this.buf[this.pos++] as number;
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
    }
    throw new KafkaError(`${this.response} response: unsigned varint of ${what} is longer than 5 bytes`);
  }
  /** `n` raw bytes (a view, not a copy). */
  raw(n: number, what: string): Buffer {
    this.need(n, what);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
  /** STRING (INT16 length); a null string reads as ''. */
  string(what: string): string {
    const length = this.int16(what);
    return length < 0 ? '' : this.raw(length, what).toString('utf8');
  }
  /** NULLABLE_BYTES (INT32 length, -1 = null). */
  bytes(what: string): Buffer | null {
    const length = this.int32(what);
    return length < 0 ? null : this.raw(length, what);
  }
  /** COMPACT_NULLABLE_STRING: length + 1, 0 = null. */
  compactString(what: string): string | null {
    const n = this.uvarint(what);
    return n === 0 ? null : this.raw(n - 1, what).toString('utf8');
  }
  /** COMPACT_ARRAY: length + 1, 0 = null (read as empty). */
  compactArray<T>(what: string, item: (r: Reader) => T): T[] {
    const n = this.uvarint(what);
    const out: T[] = [];
    for (let i = 0; i < n - 1; i++) out.push(item(this));
    return out;
  }
  /** Tagged fields: none of them is needed by the decoders, so they are skipped. */
  skipTaggedFields(what: string): void {
    const count = this.uvarint(`${what} tagged field count`);
    for (let i = 0; i < count; i++) {
      this.uvarint(`${what} tag`);
      this.raw(this.uvarint(`${what} tag size`), `${what} tag data`);
    }
  }
  /** Whether every byte was read. */
  done(): boolean {
    return this.pos === this.buf.length;
  }
}
