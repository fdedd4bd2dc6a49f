/**
 * Fault proxies for tests (infra/local/toxiproxy.ts): one Toxiproxy server per test file, and a proxy
 * per service a test routes through it (the DynamoDB emulator, a broker). A proxy's faults are
 * Toxiproxy toxics, named after what they do; `clear` removes them all.
 */
import { Toxiproxy, type Proxy, type ToxicDirection } from 'toxiproxy-node-client';
import { CACHE_DIR, LOCAL_DIR } from '../../infra/local/stack/dirs';
import { startToxiproxy, type FaultProxyServer } from '../../infra/local/toxiproxy';
import { uniqueName } from './env';

/** A proxy in front of one service: where to connect instead of the service, and the faults to put on it. */
export type FaultProxy = {
  /** `host:port` the system connects to instead of the service. */
  address: string;
  /** `http://host:port`, for an HTTP service (the DynamoDB emulator). */
  url: string;
  /** Every byte waits `latencyMs` +/- `jitterMs` (downstream: the service's answers). */
  latency(latencyMs: number, jitterMs?: number, stream?: ToxicDirection): Promise<void>;
  /** Connections are reset (RST) after `afterMs` (0: at once), in both directions. */
  reset(afterMs?: number): Promise<void>;
  /** Data stops in both directions and connections stay open: a black hole (`timeout` toxic with 0). */
  blackHole(): Promise<void>;
  /** The answers trickle at `kbPerSec`. */
  bandwidth(kbPerSec: number): Promise<void>;
  /** Removes every fault. */
  clear(): Promise<void>;
  /** Forwards to `upstream` from now on, on the same listening address. */
  retarget(upstream: string): Promise<void>;
};

export type FaultProxies = {
  server: FaultProxyServer;
  /** A proxy to `upstream`, listening on `listen` (`host:port`; default a free port). */
  proxy(upstream: string, listen?: string): Promise<FaultProxy>;
  stop(): Promise<void>;
};

/** Starts a Toxiproxy server for this test file; `stop` ends it (and its proxies). */
export async function startFaultProxies(): Promise<FaultProxies> {
  const server = await startToxiproxy({ cacheDir: CACHE_DIR, dir: LOCAL_DIR });
  const client = new Toxiproxy(server.apiUrl);
  return {
    server,
    proxy: async (upstream, listen = '127.0.0.1:0') =>
      faultProxy(await client.createProxy({ name: uniqueName('fp'), listen, upstream }), server.apiUrl),
    stop: () => server.stop(),
  };
}

function faultProxy(p: Proxy, apiUrl: string): FaultProxy {
  let n = 0;
  const add = async (type: Parameters<Proxy['addToxic']>[0]['type'], attributes: object, stream: ToxicDirection = 'downstream') => {
    await p.addToxic({ name: `${type}-${stream}-${++n}`, type, stream, toxicity: 1, attributes });
  };
  return {
    address: p.listen,
    url: `http://${p.listen}`,
    latency: (latencyMs, jitterMs = 0, stream = 'downstream') => add('latency', { latency: latencyMs, jitter: jitterMs }, stream),
    reset: async (afterMs = 0) => {
      await add('reset_peer', { timeout: afterMs }, 'upstream');
      await add('reset_peer', { timeout: afterMs }, 'downstream');
    },
    blackHole: async () => {
      await add('timeout', { timeout: 0 }, 'upstream');
      await add('timeout', { timeout: 0 }, 'downstream');
    },
    bandwidth: (kbPerSec) => add('bandwidth', { rate: kbPerSec }),
    retarget: async (upstream) => {
      await p.update({ enabled: true, listen: p.listen, upstream });
    },
    // The client's proxy object does not list its toxics: Toxiproxy's API does (GET, then DELETE each).
    async clear() {
      const toxics = `${apiUrl}/proxies/${encodeURIComponent(p.name)}/toxics`;
      const listed = (await (await fetch(toxics)).json()) as Array<{ name: string }>;
      for (const t of listed) {
        const res = await fetch(`${toxics}/${encodeURIComponent(t.name)}`, { method: 'DELETE' });
        if (!res.ok) throw new Error(`Toxiproxy did not remove the toxic ${t.name}: ${res.status}`);
      }
    },
  };
}
