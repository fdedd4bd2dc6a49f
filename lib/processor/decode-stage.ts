/**
 * The decoding stage (docs/configuration.md, "Schemas"): a stream's `value` and `key` settings
 * decode each record's bytes before the handler, which gets them as `record.decoded` beside the raw
 * bytes. `prepare` fetches the schemas a chunk's records name (once per id per container, see
 * lib/schemas/schema-cache.ts); `judge` then decodes each record synchronously.
 *
 * A record that cannot be decoded (wrong magic byte, unknown schema id, corrupt payload, a value its
 * JSON Schema does not validate, a schema of another format than configured) is rejected with cause
 * `undecodable` and dead-lettered like a record the handler rejects. A registry that cannot answer
 * fails the attempt instead (retried, then parked): nothing is judged on a missing answer.
 */
import type { PayloadDecodingConfig } from '../config/schema';
import { SchemaRegistryError, UndecodableError } from '../errors';
import type { SchemaRegistries } from '../schemas/registries';
import type { ResolvedSchema, SchemaCache } from '../schemas/schema-cache';
import { parseJsonPayload } from '../schemas/json';
import { confluentSchemaIdOf, glueSchemaVersionIdOf, parseConfluentFrame, parseGlueFrame } from '../schemas/wire';
import type { DecodedRecord, HandlerRecord, SchemaRef } from './handler-api';
import type { GateVerdict, RecordStage } from './record-gate';

type Field = 'value' | 'key';

/** The schemas `prepare` resolved for the chunk being judged, by id. */
type Prepared = ReadonlyMap<string, ResolvedSchema>;

/** One field's decoding: the schema id its bytes name (for prepare) and its decoded value. */
type FieldDecoder = {
  field: Field;
  cache?: SchemaCache;
  idOf(bytes: Buffer): string | undefined;
  /** Throws UndecodableError. */
  decode(bytes: Buffer, prepared: Prepared): { value: unknown; schema?: SchemaRef };
};

export type DecodeSettings = { stream: string; value?: PayloadDecodingConfig; key?: PayloadDecodingConfig };

/** The stage for the stream's settings, or undefined when neither value nor key is decoded. */
export function createDecodeStage(settings: DecodeSettings, registries: SchemaRegistries): RecordStage | undefined {
  const decoders = (['value', 'key'] as const).flatMap((field) => {
    const config = settings[field];
    return config === undefined || config.format === 'raw' ? [] : [fieldDecoder(field, config, registries)];
  });
  if (decoders.length === 0) return undefined;
  const prepared = new Map<Field, Prepared>();
  return {
    name: 'schemas',
    async prepare(records) {
      for (const d of decoders) {
        if (!d.cache) continue;
        const ids = records.flatMap((r) => (r[d.field] ? (d.idOf(r[d.field] as Buffer) ?? []) : []));
        try {
          prepared.set(d.field, await d.cache.load(ids));
        } catch (err) {
          throw err instanceof SchemaRegistryError ? registryFailure(settings.stream, d.field, err) : err;
        }
      }
    },
    judge: (record) => judge(decoders, prepared, record),
  };
}

function judge(decoders: readonly FieldDecoder[], prepared: ReadonlyMap<Field, Prepared>, record: HandlerRecord): GateVerdict {
  const decoded: DecodedRecord = {};
  for (const d of decoders) {
    const bytes = record[d.field];
    if (bytes === null) {
      decoded[d.field] = null; // a tombstone or a record without a key: null stays null
      continue;
    }
    try {
      const { value, schema } = d.decode(bytes, prepared.get(d.field) ?? new Map());
      decoded[d.field] = value;
      if (schema) decoded[d.field === 'value' ? 'valueSchema' : 'keySchema'] = schema;
    } catch (err) {
      if (!(err instanceof UndecodableError)) throw err;
      return { kind: 'reject', cause: 'undecodable', error: `UNDECODABLE: ${d.field}${where(d)}: ${err.message}` };
    }
  }
  return { kind: 'pass', record: { ...record, decoded } };
}

function where(d: FieldDecoder): string {
  return d.cache ? ` (${d.cache.registry.description})` : '';
}

function fieldDecoder(field: Field, config: PayloadDecodingConfig, registries: SchemaRegistries): FieldDecoder {
  if (config.format === 'json' || config.registry === undefined) {
    return { field, idOf: () => undefined, decode: (bytes) => ({ value: parseJsonPayload(bytes) }) };
  }
  const cache = registries.cacheFor(config.registry);
  const glue = cache.registry.kind === 'glue';
  const frame = glue
    ? (bytes: Buffer) => {
        const f = parseGlueFrame(bytes);
        return { id: f.schemaVersionId, body: f.body };
      }
    : (bytes: Buffer) => {
        const f = parseConfluentFrame(bytes);
        return { id: String(f.id), body: f.body };
      };
  return {
    field,
    cache,
    idOf: glue ? glueSchemaVersionIdOf : (bytes) => confluentSchemaIdOf(bytes)?.toString(),
    decode(bytes, prepared) {
      const { id, body } = frame(bytes);
      const resolved = prepared.get(id);
      if (resolved === undefined) throw new Error(`schema ${id} was not prepared`); // a bug: prepare saw every record
      if (resolved.kind === 'unusable') throw new UndecodableError(resolved.reason);
      const { ref } = resolved.schema;
      if (ref.format !== config.format) {
        throw new UndecodableError(`schema ${id} is ${ref.format}, but ${field}.format is ${config.format}`);
      }
      const { value, message } = resolved.schema.decode(body);
      return { value, schema: message === undefined ? ref : { ...ref, message } };
    },
  };
}

/** A registry failure as the attempt's error: which stream and setting, and what to check. */
function registryFailure(stream: string, field: Field, err: SchemaRegistryError): SchemaRegistryError {
  const check = err.settings.length ? `; check ${err.settings.map((s) => `${field}.registry.${s}`).join(' and ')}` : '';
  return new SchemaRegistryError(`stream ${stream}: ${field}: ${err.message}${check}`, { cause: err, settings: err.settings });
}
