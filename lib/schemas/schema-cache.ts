/**
 * The schemas of one registry, compiled, for a container's life. Ids are immutable in both
 * registries, so a found schema is kept for good (and so is one that cannot be compiled: asking
 * again gives the same text). A "not found" answer is kept only `notFoundTtlMs` (30 s): an unknown
 * id is almost always a producer's mistake (records framed for another registry, or corrupt), and
 * remembering it spares the registry one lookup per chunk while such records go by; but it may also
 * be a schema registered a moment ago that a registry replica has not seen yet, so the answer is
 * asked again soon rather than believed for good. Failures (registry down, refused) are not kept:
 * the next attempt asks again.
 */
import { SchemaRegistryError, UndecodableError } from '../errors';
import type { SchemaRegistry } from '../ports/schema-registry';
import type { CompiledSchema } from './codecs';

/** How long a "not found" answer stands before the registry is asked again. */
export const DEFAULT_NOT_FOUND_TTL_MS = 30_000;
/** Lookups one load (a chunk) has in flight at once: a chunk naming many unknown ids must not flood the registry. */
const LOOKUP_CONCURRENCY = 4;
/** Above this many remembered "not found" answers, expired ones are dropped (corrupt ids are unbounded). */
const MAX_NOT_FOUND_ENTRIES = 1000;

/** What a loaded id resolves to: a schema ready to decode, or why its records cannot be decoded. */
export type ResolvedSchema = { kind: 'ready'; schema: CompiledSchema } | { kind: 'unusable'; reason: string };

export type SchemaCache = {
  registry: SchemaRegistry;
  /** What each id resolves to: looks up those not held (or whose "not found" expired). */
  load(ids: Iterable<string>): Promise<Map<string, ResolvedSchema>>;
};

type Entry = ResolvedSchema & { expiresAtMs?: number };

/** A cache over `registry`; `nowMs` and `notFoundTtlMs` are for tests. */
export function createSchemaCache(registry: SchemaRegistry, opts: { notFoundTtlMs?: number; nowMs?: () => number } = {}): SchemaCache {
  const ttlMs = opts.notFoundTtlMs ?? DEFAULT_NOT_FOUND_TTL_MS;
  const nowMs = opts.nowMs ?? Date.now;
  const entries = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<void>>();
  let notFound = 0;

  const resolve = async (id: string): Promise<void> => {
    const answer = await registry.lookup(id);
    if (entries.get(id)?.expiresAtMs !== undefined) notFound -= 1;
    if (answer.kind === 'not-found') {
      entries.set(id, { kind: 'unusable', reason: answer.reason, expiresAtMs: nowMs() + ttlMs });
      notFound += 1;
      if (notFound > MAX_NOT_FOUND_ENTRIES) notFound -= dropExpired(entries, nowMs());
      return;
    }
    try {
      // The codecs (Avro, JSON Schema, Protobuf: their libraries are a third of a bundle) load with the first schema.
      const { compileSchema } = await import('./codecs');
      entries.set(id, { kind: 'ready', schema: compileSchema(answer.schema, registry.kind) });
    } catch (err) {
      if (!(err instanceof UndecodableError)) throw err;
      entries.set(id, { kind: 'unusable', reason: `schema ${id}: ${err.message}` });
    }
  };
  const loadOne = (id: string): Promise<void> => {
    let pending = inFlight.get(id);
    if (pending === undefined) {
      pending = resolve(id).finally(() => inFlight.delete(id));
      inFlight.set(id, pending);
    }
    return pending;
  };

  return {
    registry,
    async load(ids) {
      const now = nowMs();
      const wanted = [...new Set(ids)];
      const needed = wanted.filter((id) => {
        const entry = entries.get(id);
        return entry === undefined || (entry.expiresAtMs !== undefined && entry.expiresAtMs <= now);
      });
      await inBatches(needed, LOOKUP_CONCURRENCY, loadOne);
      // A snapshot: the caller judges on these answers even if another caller refreshes one meanwhile.
      return new Map(wanted.map((id) => [id, entries.get(id) as Entry]));
    },
  };
}

/** Runs `work` over `items`, at most `width` at a time; the first failure is thrown once all settled. */
async function inBatches<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const failures: unknown[] = [];
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item).catch((err: unknown) => failures.push(err));
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  if (failures.length > 0) throw failures.find((f) => f instanceof SchemaRegistryError) ?? failures[0];
}

function dropExpired(entries: Map<string, Entry>, now: number): number {
  let dropped = 0;
  for (const [id, entry] of entries) {
    if (entry.expiresAtMs !== undefined && entry.expiresAtMs <= now) {
      entries.delete(id);
      dropped += 1;
    }
  }
  return dropped;
}
