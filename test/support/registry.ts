/**
 * The Confluent-compatible schema registry for tests that need one (Apicurio Registry, see
 * infra/local/registry.ts). Not every run needs it, so the first test file that asks starts it for
 * the whole jest run and later files reuse it; the run's global teardown stops it. SCHEMA_REGISTRY_URL
 * names an existing open registry instead (SCHEMA_REGISTRY_AUTH_URL with SCHEMA_REGISTRY_USERNAME
 * and SCHEMA_REGISTRY_PASSWORD a guarded one), as KAFKA_BROKERS does for the broker.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ensureRegistry, type RegistryUser } from '../../infra/local/registry';
import { CACHE_DIR } from '../../infra/local/stack/dirs';

/** `open` takes any request; `basic-auth` only those with its user's credentials (HTTP basic). */
export type RegistryMode = 'open' | 'basic-auth';

/** A registry as tests see it: the Confluent base URL and, when guarded, its user. */
export type TestRegistry = { url: string; basicAuth?: RegistryUser };

/** How long the first start may take: the registry is built on first use when `local:prepare` did not. */
export const REGISTRY_START_TIMEOUT_MS = 300_000;

function fromEnv(mode: RegistryMode): TestRegistry | undefined {
  const env = process.env;
  if (mode === 'open') return env.SCHEMA_REGISTRY_URL ? { url: env.SCHEMA_REGISTRY_URL } : undefined;
  if (!env.SCHEMA_REGISTRY_AUTH_URL) return undefined;
  return {
    url: env.SCHEMA_REGISTRY_AUTH_URL,
    basicAuth: { username: env.SCHEMA_REGISTRY_USERNAME ?? '', password: env.SCHEMA_REGISTRY_PASSWORD ?? '' },
  };
}

/** The run's registry of that mode, started on first use (call it from a beforeAll with REGISTRY_START_TIMEOUT_MS). */
export async function testRegistry(mode: RegistryMode = 'open'): Promise<TestRegistry> {
  const given = fromEnv(mode);
  if (given) return given;
  const runDir = process.env.LOCAL_TEST_RUN_DIR;
  const owner = Number(process.env.LOCAL_TEST_OWNER_PID);
  if (!runDir || !Number.isInteger(owner)) {
    throw new Error('LOCAL_TEST_RUN_DIR is not set: run the tests through jest (global setup names the run)');
  }
  const { instance } = await ensureRegistry({
    dir: join(runDir, `registry-${mode}`),
    cacheDir: CACHE_DIR,
    // The jest run, not this worker: the registry outlives the file that started it, until global teardown.
    ownerPid: owner,
    basicAuth: mode === 'basic-auth' ? { username: 'app', password: randomBytes(12).toString('base64url') } : undefined,
  });
  return { url: instance.url, basicAuth: instance.basicAuth };
}
