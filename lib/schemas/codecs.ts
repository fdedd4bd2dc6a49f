/**
 * One registry schema made ready to decode payloads: Avro (avro.ts), Protobuf (protobuf.ts) or JSON
 * Schema (json.ts), for the wire format of the registry it came from. Compiling is done once per
 * schema id and kept (schema-cache.ts); a schema that cannot be compiled makes its records
 * undecodable rather than failing the attempt: asking again would give the same schema.
 */
import { UndecodableError } from '../errors';
import type { RegistrySchema, SchemaRegistryKind } from '../ports/schema-registry';
import type { SchemaRef } from '../processor/handler-api';
import { compileAvro } from './avro';
import { compileJsonSchema } from './json';
import { compileProtobuf } from './protobuf';

/** A schema ready to decode the payload after the registry's header. */
export type CompiledSchema = {
  ref: SchemaRef;
  /** The decoded value (and, for Protobuf, its message type); throws UndecodableError. */
  decode(body: Buffer): { value: unknown; message?: string };
};

/** Compiles `schema` for records framed by `registry`'s serializers; throws UndecodableError when it cannot. */
export function compileSchema(schema: RegistrySchema, registry: SchemaRegistryKind): CompiledSchema {
  const ref: SchemaRef = {
    registry,
    id: schema.id,
    format: schema.format,
    ...(schema.name !== undefined && { name: schema.name }),
    ...(schema.version !== undefined && { version: schema.version }),
  };
  try {
    switch (schema.format) {
      case 'avro': {
        const decode = compileAvro(schema.definition, schema.references);
        return { ref, decode: (body) => ({ value: decode(body) }) };
      }
      case 'json-schema': {
        const decode = compileJsonSchema(schema.definition, schema.references);
        return { ref, decode: (body) => ({ value: decode(body) }) };
      }
      case 'protobuf':
        return { ref, decode: compileProtobuf(schema.definition, schema.references, registry) };
    }
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new UndecodableError(`its ${schema.format} schema cannot be read (${why.split('\n')[0]})`, { cause: err });
  }
}
