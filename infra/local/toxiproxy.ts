/**
 * The local stack's fault proxy: Toxiproxy, a TCP proxy a test puts between the system and a service
 * (a broker, the DynamoDB emulator) and then makes lie: latency with jitter, a trickle of bandwidth,
 * a reset, a black hole that drops everything without closing. Built once into the cache by
 * `npm run local:prepare` (`go install` from the Go module proxy, as the Lambda runtime emulator is);
 * started only by the tests that ask for it, and off otherwise. Its proxies and faults are driven
 * through its HTTP API with `toxiproxy-node-client` (test/support/fault-proxy.ts).
 */
import { join } from 'node:path';
import { goInstallOnce } from './go';
import { freePort, LOOPBACK, spawnService, stopProcess, waitUntil } from './process';

/** Toxiproxy's release on the Go module proxy (its server is `cmd/server`). */
export const TOXIPROXY_VERSION = 'v2.5.0';
const TOXIPROXY_MODULE = 'github.com/Shopify/toxiproxy/v2/cmd/server';

/** Builds the Toxiproxy server once into the cache; returns its path. */
export function ensureToxiproxy(cacheDir: string): string {
  return goInstallOnce(cacheDir, {
    module: TOXIPROXY_MODULE,
    version: TOXIPROXY_VERSION,
    binary: 'server',
    cacheName: 'toxiproxy',
    what: 'the fault proxy (Toxiproxy)',
  });
}

/** A running Toxiproxy server: its HTTP API, and how to stop it. */
export type FaultProxyServer = { apiUrl: string; pid: number; stop(): Promise<void> };

/**
 * Starts a Toxiproxy server on a free loopback port, its log in `dir`. A watchdog ends it with this
 * process, so a crashed test run leaves no proxy behind.
 */
export async function startToxiproxy(o: { cacheDir: string; dir: string }): Promise<FaultProxyServer> {
  const binary = ensureToxiproxy(o.cacheDir);
  const port = await freePort();
  const logFile = join(o.dir, `toxiproxy-${port}.log`);
  const svc = spawnService({ cmd: binary, args: ['-host', LOOPBACK, '-port', String(port)], logFile, ownerPid: process.pid });
  const apiUrl = `http://${LOOPBACK}:${port}`;
  await waitUntil('the fault proxy (Toxiproxy)', async () => (await fetch(`${apiUrl}/version`)).ok, {
    timeoutMs: 15_000,
    pid: svc.pid,
    logFile,
  });
  return {
    apiUrl,
    pid: svc.pid,
    async stop() {
      await stopProcess(svc.pid, 2000);
      if (svc.watchdogPid !== undefined) await stopProcess(svc.watchdogPid, 1000);
    },
  };
}
