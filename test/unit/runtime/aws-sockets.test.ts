/**
 * The AWS clients' sockets (lib/runtime/aws-sockets.ts) against a loopback HTTP server (nothing
 * leaves the machine): a request whose connection goes silent fails after SILENT_CONNECTION_MS
 * instead of never, and `dropIdleSockets` closes kept-alive sockets so the next request connects again.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { SILENT_CONNECTION_MS } from '../../../lib/connection-limits';
import { awsRequestHandler, dropIdleSockets } from '../../../lib/runtime/aws-sockets';
import { dynamoClientFromEnv } from '../../../lib/runtime/compose';
import { waitFor } from '../../support/wait-for';

let server: Server;
let endpoint: string;
let silent = false;
let answerAfterTimeout = false;
const open = new Set<Socket>();
let connections = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (silent) {
      // Holds the request: nothing is answered. Once the client gave up on it, answer again.
      if (answerAfterTimeout) req.socket.once('close', () => (silent = false));
      return;
    }
    res.setHeader('content-type', 'application/x-amz-json-1.0');
    res.end('{"TableNames":[]}');
  });
  server.on('connection', (s: Socket) => {
    connections++;
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of open) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  silent = false;
  answerAfterTimeout = false;
});

it('fails a request whose connection stays silent after the limit, with a TimeoutError the SDK retries', async () => {
  silent = true;
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
    maxAttempts: 1,
    requestHandler: awsRequestHandler(),
  });
  const t0 = Date.now();
  const err = await client.send(new ListTablesCommand({})).then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  const ms = Date.now() - t0;
  client.destroy();
  expect(err?.name).toBe('TimeoutError');
  expect(ms).toBeGreaterThanOrEqual(SILENT_CONNECTION_MS - 50);
  expect(ms).toBeLessThan(SILENT_CONNECTION_MS * 3);
}, 20_000);

it('closes the kept-alive sockets not in use, and the next request connects again', async () => {
  const client = dynamoClientFromEnv({ DYNAMODB_ENDPOINT: endpoint });
  await client.send(new ListTablesCommand({}));
  await client.send(new ListTablesCommand({}));
  const before = connections;
  expect(before).toBeGreaterThanOrEqual(1);
  expect(open.size).toBeGreaterThanOrEqual(1); // kept alive
  expect(dropIdleSockets()).toBeGreaterThanOrEqual(1);
  await waitFor('the kept sockets closed', () => open.size, { until: (n) => n === 0, timeoutMs: 2_000, intervalMs: 10 });
  await client.send(new ListTablesCommand({}));
  expect(connections).toBe(before + 1);
  client.destroy();
});

it("closes the agent's idle sockets when a request's socket goes silent, so the resend connects afresh", async () => {
  const client = dynamoClientFromEnv({ DYNAMODB_ENDPOINT: endpoint }, { maxSockets: 4 });
  // Two kept sockets: two requests at once, both answered.
  await Promise.all([client.send(new ListTablesCommand({})), client.send(new ListTablesCommand({}))]);
  await waitFor('two kept sockets', () => open.size, { until: (n) => n >= 2, timeoutMs: 2_000, intervalMs: 10 });
  const before = connections;
  silent = true;
  answerAfterTimeout = true;
  await client.send(new ListTablesCommand({}));
  // The request's socket timed out and the other kept one went with it: the SDK's resend opened a new connection.
  expect(connections).toBe(before + 1);
  expect(open.size).toBe(1);
  client.destroy();
}, 30_000);
