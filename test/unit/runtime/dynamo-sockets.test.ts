/**
 * The DynamoDB client's sockets: `dynamoClientFromEnv` with `maxSockets` opens as many connections
 * as requests in flight (up to the cap), where the SDK's default stops at 50 and queues the rest. A
 * loopback HTTP server that holds every request a moment counts the connections (nothing leaves the
 * machine): it answers once `expected` requests are in, or after a while when fewer can come at once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { dynamoClientFromEnv, dynamoSocketsFor } from '../../../lib/runtime/compose';
import { waitFor } from '../../support/wait-for';

let server: Server;
let connections = 0;
let peak = 0;
let expected = 0;
let held: Array<() => void> = [];
let timer: NodeJS.Timeout | undefined;

const releaseAll = () => {
  clearTimeout(timer);
  timer = undefined;
  for (const answer of held.splice(0)) answer();
};

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    held.push(() => {
      res.setHeader('content-type', 'application/x-amz-json-1.0');
      res.end('{"TableNames":[]}');
    });
    peak = Math.max(peak, held.length);
    if (held.length >= expected) releaseAll();
    else timer ??= setTimeout(releaseAll, 2000);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  connections = 0;
  peak = 0;
  held = [];
});

/** Sends `n` requests at once through a client made with `opts`; returns the connections the server saw. */
async function burst(
  n: number,
  opts: Parameters<typeof dynamoClientFromEnv>[1],
): Promise<{ connections: number; peak: number; warnings: string[] }> {
  expected = n;
  const warnings: string[] = [];
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = dynamoClientFromEnv({ DYNAMODB_ENDPOINT: endpoint }, { ...opts, logger: { warn: (m) => warnings.push(m) } });
  try {
    await Promise.all(Array.from({ length: n }, () => client.send(new ListTablesCommand({}))));
  } finally {
    client.destroy();
  }
  return { connections, peak, warnings };
}

describe('DynamoDB client sockets', () => {
  it('sized with dynamoSocketsFor, serves every processor slot and the planner at once', async () => {
    const slots = dynamoSocketsFor(64);
    expect(slots).toBeGreaterThanOrEqual(64 + 8);
    const res = await burst(slots, { maxSockets: slots });
    expect(res.peak).toBe(slots);
    expect(res.connections).toBe(slots);
  });

  it('without a size, the SDK default (50) queues the rest', async () => {
    const res = await burst(80, {});
    expect(res.peak).toBe(50);
  });

  it('with idleSocketMs, closes kept-alive sockets once idle, not while in use', async () => {
    let closed = 0;
    const onConnection = (socket: import('node:net').Socket) => socket.on('close', () => closed++);
    server.on('connection', onConnection);
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const client = dynamoClientFromEnv({ DYNAMODB_ENDPOINT: endpoint }, { maxSockets: 8, idleSocketMs: 300 });
      try {
        expected = 8;
        await Promise.all(Array.from({ length: 8 }, () => client.send(new ListTablesCommand({}))));
        expect(connections).toBe(8);
        // Reused while busy: a second burst right away opens nothing new.
        await Promise.all(Array.from({ length: 8 }, () => client.send(new ListTablesCommand({}))));
        expect(connections).toBe(8);
        await waitFor('the 8 idle sockets to close', () => closed, { until: (n) => n >= 8, timeoutMs: 2000, intervalMs: 50 });
        expect(closed).toBe(8);
      } finally {
        client.destroy();
      }
    } finally {
      server.off('connection', onConnection);
    }
  });
});
