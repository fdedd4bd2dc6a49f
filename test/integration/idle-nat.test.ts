/**
 * The idle NAT (test/support/idle-nat.ts) in front of an echo server, on real loopback sockets: data
 * flows both ways; a connection idle past the timeout is forgotten (the client's write gets no
 * answer, nothing closes the client's socket, not even the server closing its side); a new
 * connection works; the counters count. No service of the local stack is used.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { LOOPBACK } from '../../infra/local/process';
import { startIdleNat, type IdleNat } from '../support/idle-nat';
import { waitFor } from '../support/wait-for';

const IDLE_MS = 300;

let echo: Server;
const served: Socket[] = [];
let nat: IdleNat;

/** A client connection and what it has received, and whether it saw an end or a close. */
async function connect(address: string) {
  const [host, port] = address.split(':');
  const socket = createConnection({ host: host!, port: Number(port) });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const seen = { data: '', ended: false, closed: false };
  socket.on('data', (d: Buffer) => void (seen.data += d.toString()));
  socket.on('end', () => void (seen.ended = true));
  socket.on('close', () => void (seen.closed = true));
  socket.on('error', () => undefined);
  return { socket, seen };
}

beforeAll(async () => {
  echo = createServer((s) => {
    served.push(s);
    s.on('error', () => undefined);
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, LOOPBACK, r));
  const addr = echo.address();
  // Started without its upstream, which is set later, as for a broker whose port is known after its start.
  nat = await startIdleNat({ idleTimeoutMs: IDLE_MS });
  nat.setUpstream(`${LOOPBACK}:${typeof addr === 'object' && addr ? addr.port : 0}`);
});

afterAll(async () => {
  await nat?.stop();
  served.forEach((s) => s.destroy());
  await new Promise<void>((r) => echo.close(() => r()));
});

it('forwards data, forgets an idle connection without closing it, and serves a new one', async () => {
  const first = await connect(nat.address);
  first.socket.write('ping');
  await waitFor('the echo', () => first.seen.data === 'ping', { timeoutMs: 2000, intervalMs: 10 });
  expect(nat.forgotten()).toBe(0);

  // Idle past the timeout: forgotten. The client's bytes go nowhere and nothing answers or closes.
  await waitFor('the connection to be forgotten', () => nat.forgotten() === 1, { timeoutMs: 3000, intervalMs: 20 });
  first.socket.write('hello');
  await new Promise((r) => setTimeout(r, 3 * IDLE_MS));
  expect(first.seen).toEqual({ data: 'ping', ended: false, closed: false });
  expect(nat.bytesIntoTheVoid()).toBe(5);
  // The server closing its side is dropped as well: the client still holds an open, silent connection.
  served[0]!.destroy();
  await new Promise((r) => setTimeout(r, IDLE_MS));
  expect(first.seen).toEqual({ data: 'ping', ended: false, closed: false });
  expect(first.socket.destroyed).toBe(false);

  // A new connection works; the forgotten one stays dead.
  const second = await connect(nat.address);
  second.socket.write('again');
  await waitFor('the echo on a new connection', () => second.seen.data === 'again', { timeoutMs: 2000, intervalMs: 10 });
  expect(first.seen.data).toBe('ping');
  expect({ connections: nat.connections(), forgotten: nat.forgotten(), bytesIntoTheVoid: nat.bytesIntoTheVoid() }).toEqual({
    connections: 2,
    forgotten: 1,
    bytesIntoTheVoid: 5,
  });

  // A client closing a forgotten connection ends it here (the NAT keeps nothing for it).
  first.socket.end();
  second.socket.end();
  await waitFor('both clients closed', () => first.seen.closed && second.seen.closed, { timeoutMs: 2000, intervalMs: 10 });
});
