/**
 * The persistent stack's schema registry (`local:up --registry`): started or kept, and its URL.
 */
import { join } from 'node:path';
import { ensureRegistry, readRegistryState, registryReady } from '../registry';
import { CACHE_DIR } from './dirs';
import type { Log } from './parts';
import { PERSISTENT, type PersistentPlace } from './state';

/**
 * The persistent stack's schema registry (`local:up --registry`): started when `start` asks and none
 * of ours answers, else the running one kept; resolves to its Confluent URL, or undefined when none runs.
 * Its schemas live in memory: a restarted registry has none. `local:down` stops it.
 */
export async function upRegistry(
  log: Log,
  opts: { start: boolean; place?: PersistentPlace; env?: NodeJS.ProcessEnv },
): Promise<string | undefined> {
  const place = opts.place ?? PERSISTENT;
  const dir = join(place.dir, 'registry');
  if (!opts.start) {
    const running = readRegistryState(dir);
    return running && (await registryReady(running.url).catch(() => false)) ? running.url : undefined;
  }
  const t0 = Date.now();
  const port = (opts.env ?? process.env).LOCAL_REGISTRY_PORT || undefined;
  const { instance, started } = await ensureRegistry({ dir, cacheDir: CACHE_DIR, ownerPid: place.ownerPid, port });
  log(
    started
      ? `schema registry (Apicurio, Confluent API) started in ${Date.now() - t0} ms (pid ${instance.pid}); log: ${instance.logFile}`
      : 'schema registry already running',
  );
  return instance.url;
}
