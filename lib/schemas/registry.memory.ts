/** An in-memory schema registry for unit tests: schemas by id, a count of lookups, and an injectable failure. */
import type { RegistrySchema, SchemaRegistry, SchemaRegistryKind } from '../ports/schema-registry';

export type MemorySchemaRegistry = SchemaRegistry & {
  /** Adds (or replaces) a schema, as registering a version would. */
  add(schema: RegistrySchema): void;
  /** Ids looked up so far, in order. */
  readonly lookups: string[];
  /** When set, every lookup throws it (a registry that is down). */
  failure: Error | undefined;
};

/** A registry of `kind` holding `schemas`. */
export function createMemorySchemaRegistry(kind: SchemaRegistryKind, schemas: readonly RegistrySchema[] = []): MemorySchemaRegistry {
  const byId = new Map(schemas.map((s) => [s.id, s]));
  const registry: MemorySchemaRegistry = {
    kind,
    description: `${kind} registry (in memory)`,
    lookups: [],
    failure: undefined,
    add: (schema) => void byId.set(schema.id, schema),
    async lookup(id) {
      registry.lookups.push(id);
      if (registry.failure) throw registry.failure;
      const schema = byId.get(id);
      return schema ? { kind: 'found', schema } : { kind: 'not-found', reason: `unknown schema id ${id}` };
    },
  };
  return registry;
}
