/**
 * Avro decoding with avsc: a record's payload is read with the schema it was written with (the one
 * its id names), so every version of an evolving schema decodes. Values as avsc gives them: records
 * as objects, bytes and fixed as Buffers, logical types as their underlying type, unions as the
 * branch's value unless two branches could not be told apart (then `{ "<branch>": value }`, avsc's
 * "auto" mode); longs as numbers, or as bigints beyond 2^53 (avsc's own long refuses those).
 */
import * as avro from 'avsc';
import { UndecodableError } from '../errors';
import type { SchemaReference } from '../ports/schema-registry';

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Avro longs as numbers when exact, bigints otherwise: a valid record is never refused for its size. */
const exactLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => {
    const n = buf.readBigInt64LE();
    return n >= MIN_SAFE && n <= MAX_SAFE ? Number(n) : n;
  },
  toBuffer: (n: number | bigint) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (n: number) => n,
  toJSON: (n: number | bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint' || Number.isSafeInteger(n),
  compare: (a: number | bigint, b: number | bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

/** A decoder for one Avro writer schema (references: named types it uses, each before its users). */
export function compileAvro(definition: string, references: readonly SchemaReference[]): (payload: Buffer) => unknown {
  const registry: Record<string, avro.Type> = { long: exactLong };
  const parse = (text: string) => avro.Type.forSchema(JSON.parse(text) as avro.Schema, { registry, wrapUnions: 'auto' });
  for (const ref of references) parse(ref.definition);
  const type = parse(definition);
  return (payload) => {
    try {
      return type.fromBuffer(payload);
    } catch (err) {
      throw new UndecodableError(`not Avro of its schema (${err instanceof Error ? err.message : String(err)})`, { cause: err });
    }
  };
}
