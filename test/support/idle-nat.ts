/**
 * A TCP forwarder that behaves like a NAT gateway (or a stateful firewall) towards idle connections:
 * a connection with no data in either direction for `idleTimeoutMs` is forgotten. From then on the
 * bytes of both sides are dropped and neither socket is closed, so the client holds a connection that
 * looks open and never answers (no FIN, no RST); an answer or a close from the service on a forgotten
 * connection is dropped too. New connections work as before.
 *
 * Hand-written rather than the project's fault proxy (Toxiproxy, test/support/fault-proxy.ts): a
 * Toxiproxy toxic applies to every connection of its proxy, those opened after it was added included
 * (its toxicity is drawn per link, and updating a toxic draws it again for the existing links), so
 * it cannot forget only the connections that were idle while leaving new ones working.
 *
 * What it models, and what it does not:
 * - TCP keepalive probes are answered by this process's kernel and never reach it: it sees only
 *   data. That is the frozen Lambda's case (the whole micro-VM is frozen, its kernel sends no probe);
 *   an unfrozen client's probes would keep a real NAT's entry alive.
 * - A client writing on a forgotten connection sees its bytes acknowledged (by this kernel) and
 *   answered never; behind a real NAT they would be retransmitted until the kernel gives up (about
 *   15 minutes), which no request here waits for. AWS's NAT gateway documents answering such a
 *   packet with an RST once its 350 s idle timeout has passed; other NATs and firewalls drop it
 *   silently, the worse case, modelled here.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { LOOPBACK } from '../../infra/local/process';

export type IdleNat = {
  /** `host:port` clients connect to instead of the upstream. */
  address: string;
  /** `http://host:port`, for an HTTP upstream. */
  url: string;
  /** Sets (or changes) where new connections go, when it was not known at the start (a broker's port). */
  setUpstream(upstream: string): void;
  /** Connections forgotten so far. */
  forgotten(): number;
  /** Bytes clients sent on forgotten connections (dropped). */
  bytesIntoTheVoid(): number;
  /** Connections accepted so far. */
  connections(): number;
  /** Closes the listener and every connection. */
  stop(): Promise<void>;
};

export type IdleNatOptions = {
  /** `host:port` of the service; may be set later with `setUpstream` (a connection before then is refused). */
  upstream?: string;
  idleTimeoutMs: number;
  /** Port to listen on (default: one the kernel picks). */
  port?: number;
};

type Link = { client: Socket; upstream: Socket; forgotten: boolean; timer: NodeJS.Timeout };

const hostPort = (address: string): { host: string; port: number } => {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
};

/** Starts the forwarder on the loopback interface. */
export async function startIdleNat(o: IdleNatOptions): Promise<IdleNat> {
  let upstream = o.upstream;
  const counts = { connections: 0, forgotten: 0, voidBytes: 0 };
  const links = new Set<Link>();

  const forward = (client: Socket): void => {
    counts.connections++;
    if (!upstream) {
      client.destroy();
      return;
    }
    const up = createConnection(hostPort(upstream));
    const link: Link = {
      client,
      upstream: up,
      forgotten: false,
      timer: setTimeout(() => {
        link.forgotten = true;
        counts.forgotten++;
      }, o.idleTimeoutMs),
    };
    link.timer.unref();
    links.add(link);
    const active = (): void => void link.timer.refresh();
    client.on('data', (chunk: Buffer) => {
      if (link.forgotten) counts.voidBytes += chunk.length;
      else {
        active();
        up.write(chunk);
      }
    });
    up.on('data', (chunk: Buffer) => {
      if (!link.forgotten) {
        active();
        client.write(chunk);
      }
    });
    // A close from either side passes while the connection is known; on a forgotten one, the service's
    // close is dropped (the client keeps its dead connection) and the client's ends the link here.
    client.on('end', () => (link.forgotten ? close(link) : up.end()));
    up.on('end', () => (link.forgotten ? up.destroy() : client.end()));
    client.on('error', () => close(link));
    up.on('error', () => (link.forgotten ? up.destroy() : close(link)));
    client.on('close', () => close(link));
    up.on('close', () => {
      if (!link.forgotten) close(link);
    });
  };

  const close = (link: Link): void => {
    clearTimeout(link.timer);
    link.client.destroy();
    link.upstream.destroy();
    links.delete(link);
  };

  const server: Server = createServer({ allowHalfOpen: true }, forward);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, LOOPBACK, () => resolve());
  });
  const addr = server.address();
  const address = `${LOOPBACK}:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    address,
    url: `http://${address}`,
    setUpstream: (u) => void (upstream = u),
    forgotten: () => counts.forgotten,
    bytesIntoTheVoid: () => counts.voidBytes,
    connections: () => counts.connections,
    async stop() {
      [...links].forEach(close);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
