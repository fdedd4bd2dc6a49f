/**
 * Port: a schema registry as record decoding sees it (docs/configuration.md, "Schemas"): the schema
 * a record's id names, or the registry's answer that it has none. Adapters: AWS Glue Schema Registry
 * (`lib/schemas/registry.glue.ts`), a Confluent-compatible registry over HTTP
 * (`lib/schemas/registry.confluent.ts`) and an in-memory one for tests (`registry.memory.ts`).
 *
 * A registry that cannot answer (unreachable, throttled, credentials refused) throws
 * SchemaRegistryError: the range attempt fails and is retried, and no record is judged on it.
 */

/** The schema languages a registry holds (Glue's JSON and Confluent's JSON are JSON Schema). */
export const REGISTRY_SCHEMA_FORMATS = ['avro', 'protobuf', 'json-schema'] as const;
export type RegistrySchemaFormat = (typeof REGISTRY_SCHEMA_FORMATS)[number];

/** A schema another one imports (a Protobuf import, an Avro named type, a JSON Schema `$ref`), by the name it is imported under. */
export type SchemaReference = { name: string; definition: string };

/** One schema as the registry stores it. Ids are immutable in both registries, so a found schema never changes. */
export type RegistrySchema = {
  /** The id records carry: a Confluent schema id ("42"), a Glue schema version id (a UUID). */
  id: string;
  format: RegistrySchemaFormat;
  /** The schema text: Avro JSON, `.proto` source, or JSON Schema. */
  definition: string;
  /** Schemas it imports, each listed before any that imports it. */
  references: readonly SchemaReference[];
  /** Glue: the schema's name. */
  name?: string;
  /** Glue: the version number of this schema version. */
  version?: number;
};

/** What the registry answered for an id. `not-found` is an answer (the record is undecodable), not a failure. */
export type SchemaLookup = { kind: 'found'; schema: RegistrySchema } | { kind: 'not-found'; reason: string };

export type SchemaRegistryKind = 'glue' | 'confluent';

export type SchemaRegistry = {
  kind: SchemaRegistryKind;
  /** How messages name it: `glue registry orders (eu-west-1)`, `confluent registry https://sr.example:8081`. */
  description: string;
  /** The schema `id` names; throws SchemaRegistryError when the registry cannot answer. */
  lookup(id: string): Promise<SchemaLookup>;
};
