/** The per-registry schema cache: found schemas kept, "not found" kept for a while, failures not kept, lookups shared and bounded. */
import { SchemaRegistryError } from '../../../lib/errors';
import type { RegistrySchema } from '../../../lib/ports/schema-registry';
import { createMemorySchemaRegistry } from '../../../lib/schemas/registry.memory';
import { createSchemaCache } from '../../../lib/schemas/schema-cache';

const AVRO: RegistrySchema = { id: '1', format: 'avro', definition: '"string"', references: [] };

describe('schema cache', () => {
  it('looks a found schema up once and keeps it compiled', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO]);
    const cache = createSchemaCache(registry);
    const first = await cache.load(['1', '1']);
    await cache.load(['1']);
    expect(registry.lookups).toEqual(['1']);
    expect(first.get('1')).toMatchObject({ kind: 'ready', schema: { ref: { registry: 'confluent', id: '1', format: 'avro' } } });
  });

  it('keeps a "not found" answer for its time to live, then asks again (a schema registered since is found)', async () => {
    let now = 0;
    const registry = createMemorySchemaRegistry('glue');
    const cache = createSchemaCache(registry, { notFoundTtlMs: 30_000, nowMs: () => now });
    expect((await cache.load(['1'])).get('1')).toEqual({ kind: 'unusable', reason: 'unknown schema id 1', expiresAtMs: 30_000 });
    now = 29_999;
    await cache.load(['1']);
    expect(registry.lookups).toEqual(['1']);
    registry.add(AVRO);
    now = 30_000;
    expect((await cache.load(['1'])).get('1')).toMatchObject({ kind: 'ready' });
    expect(registry.lookups).toEqual(['1', '1']);
  });

  it('keeps a schema that cannot be compiled as unusable, with the reason', async () => {
    const registry = createMemorySchemaRegistry('confluent', [{ ...AVRO, definition: '{"type":"nope"}' }]);
    const cache = createSchemaCache(registry);
    expect((await cache.load(['1'])).get('1')).toEqual({
      kind: 'unusable',
      reason: expect.stringMatching(/^schema 1: its avro schema cannot be read \(/),
    });
    await cache.load(['1']);
    expect(registry.lookups).toEqual(['1']);
  });

  it('does not keep a failure: the registry is asked again next time', async () => {
    const registry = createMemorySchemaRegistry('confluent', [AVRO]);
    registry.failure = new SchemaRegistryError('down');
    const cache = createSchemaCache(registry);
    await expect(cache.load(['1'])).rejects.toThrow('down');
    registry.failure = undefined;
    expect((await cache.load(['1'])).get('1')).toMatchObject({ kind: 'ready' });
    expect(registry.lookups).toEqual(['1', '1']);
  });

  it('shares one lookup between concurrent loads of an id, and has at most 4 lookups in flight', async () => {
    const registry = createMemorySchemaRegistry('confluent');
    let inFlight = 0;
    let most = 0;
    const lookup = registry.lookup;
    registry.lookup = async (id) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight -= 1;
      return lookup(id);
    };
    const cache = createSchemaCache(registry);
    const ids = Array.from({ length: 20 }, (_, i) => String(i));
    await Promise.all([cache.load(ids), cache.load(ids)]);
    expect(registry.lookups.sort()).toEqual([...ids].sort());
    expect(most).toBe(4);
  });
});
