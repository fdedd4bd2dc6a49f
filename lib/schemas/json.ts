/**
 * JSON payloads: plain UTF-8 JSON (`format: "json"`), and JSON Schema (a registry's JSON schemas,
 * checked with ajv). A value its schema does not validate is undecodable: the handler is promised
 * values of the schema, so such a record is dead-lettered with ajv's reason instead.
 *
 * The schema's `$schema` picks the draft: 2020-12 and 2019-09 have ajv classes of their own,
 * draft-06 and draft-07 the default one; draft-04 (which ajv 8 does not implement) is checked by
 * draft-07's rules without checking the schema itself (its boolean exclusiveMinimum/Maximum are
 * not understood). Unknown keywords are ignored and `format` is
 * not checked (as Confluent's and Glue's Java validators are commonly configured: no format plugins).
 */
import Ajv, { type AnySchema, type Options, type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import draft06 from 'ajv/dist/refs/json-schema-draft-06.json';
import { UndecodableError } from '../errors';
import type { SchemaReference } from '../ports/schema-registry';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parses UTF-8 JSON; throws UndecodableError for bytes that are not UTF-8 or not JSON. */
export function parseJsonPayload(payload: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(payload);
  } catch (err) {
    throw new UndecodableError('not UTF-8 text', { cause: err });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UndecodableError(`not JSON (${err instanceof Error ? err.message : String(err)})`, { cause: err });
  }
}

const AJV_OPTIONS: Options = { strict: false, allErrors: false, validateFormats: false, logger: false };

/** A decoder for one JSON Schema (references: schemas its `$ref`s name, by that name). */
export function compileJsonSchema(definition: string, references: readonly SchemaReference[]): (payload: Buffer) => unknown {
  const schema = JSON.parse(definition) as Exclude<AnySchema, boolean> | boolean;
  const ajv = ajvFor(typeof schema === 'object' ? schema.$schema : undefined);
  for (const ref of references) ajv.addSchema(JSON.parse(ref.definition) as AnySchema, ref.name);
  const validate: ValidateFunction = ajv.compile(typeof schema === 'object' && isDraft04(schema.$schema) ? withoutMeta(schema) : schema);
  return (payload) => {
    const value = parseJsonPayload(payload);
    if (!validate(value)) {
      throw new UndecodableError(`does not validate against its JSON Schema: ${ajv.errorsText(validate.errors, { dataVar: 'value' })}`);
    }
    return value;
  };
}

function ajvFor(metaSchema: unknown): Ajv {
  const meta = typeof metaSchema === 'string' ? metaSchema : '';
  if (meta.includes('2020-12')) return new Ajv2020(AJV_OPTIONS);
  if (meta.includes('2019-09')) return new Ajv2019(AJV_OPTIONS);
  if (isDraft04(meta)) {
    // Draft-04 names a schema by `id`, which ajv 8 refuses; without it the id is only unused.
    return new Ajv({ ...AJV_OPTIONS, validateSchema: false }).removeKeyword('id');
  }
  const ajv = new Ajv(AJV_OPTIONS);
  if (meta.includes('draft-06')) ajv.addMetaSchema(draft06);
  return ajv;
}

function isDraft04(meta: unknown): boolean {
  return typeof meta === 'string' && meta.includes('draft-04');
}

function withoutMeta(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _meta, ...rest } = schema;
  return rest;
}
