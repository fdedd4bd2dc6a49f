/**
 * The schema registries the streams name, one client and one schema cache per registry config,
 * kept for the process's life (a warm Lambda container's): schemas are fetched once per cold start
 * per id. Glue clients use the config's region and the SDK's usual endpoint settings
 * (AWS_ENDPOINT_URL_GLUE, which the local runtime points at the local stack's emulator); Confluent
 * passwords are read through the caching secret resolver.
 */
import type { SchemaRegistryConfig } from '../config/schema';
import { resolveSecret as processSecretResolver, type SecretResolver } from '../kafka/secrets';
import type { SchemaRegistry } from '../ports/schema-registry';
import { createConfluentSchemaRegistry } from './registry.confluent';
import { createGlueSchemaRegistry, glueClientFromEnv, type GlueSender } from './registry.glue';
import { createSchemaCache, type SchemaCache } from './schema-cache';

export type SchemaRegistries = {
  /** The cache of the registry `config` names (made on first use). */
  cacheFor(config: SchemaRegistryConfig): SchemaCache;
};

export type SchemaRegistriesDeps = {
  env?: NodeJS.ProcessEnv;
  /** A Glue client for a region (default: one from the environment's endpoint settings). */
  glueClient?: (region: string) => GlueSender;
  resolveSecret?: SecretResolver;
  fetch?: typeof fetch;
  /** Builds the registry instead of the adapters (tests). */
  registryFor?: (config: SchemaRegistryConfig) => SchemaRegistry;
  /** How long a "not found" answer stands (default 30 s; tests). */
  notFoundTtlMs?: number;
};

/** Registries made on first use and kept, keyed by their config. */
export function createSchemaRegistries(deps: SchemaRegistriesDeps = {}): SchemaRegistries {
  const caches = new Map<string, SchemaCache>();
  const glueClients = new Map<string, GlueSender>();
  const env = deps.env ?? process.env;
  const glueClientFor = (region: string): GlueSender => {
    let client = glueClients.get(region);
    if (client === undefined) {
      client = deps.glueClient ? deps.glueClient(region) : glueClientFromEnv(region, env);
      glueClients.set(region, client);
    }
    return client;
  };
  const build = (config: SchemaRegistryConfig): SchemaRegistry => {
    if (deps.registryFor) return deps.registryFor(config);
    if ('glue' in config) return createGlueSchemaRegistry(glueClientFor(config.glue.region), config.glue);
    const { url, username, password } = config.confluent;
    const resolve = deps.resolveSecret ?? processSecretResolver;
    return createConfluentSchemaRegistry(
      { url, ...(username !== undefined && { username }) },
      {
        ...(password !== undefined && { password: ({ fresh }) => resolve(password, { fresh }) }),
        ...(deps.fetch && { fetch: deps.fetch }),
      },
    );
  };
  return {
    cacheFor(config) {
      const key = JSON.stringify(config);
      let cache = caches.get(key);
      if (cache === undefined) {
        cache = createSchemaCache(build(config), { ...(deps.notFoundTtlMs !== undefined && { notFoundTtlMs: deps.notFoundTtlMs }) });
        caches.set(key, cache);
      }
      return cache;
    },
  };
}

let processRegistries: SchemaRegistries | undefined;

/** The process's registries, over process.env (the Lambda container's, or a local run's). */
export function processSchemaRegistries(): SchemaRegistries {
  processRegistries ??= createSchemaRegistries();
  return processRegistries;
}
