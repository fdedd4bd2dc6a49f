/**
 * The Lambda dispatcher speaks the real Invoke API (AWS SDK v3) to a small HTTP endpoint that
 * answers like Lambda's: 202 for an accepted Event invocation, a JSON error otherwise.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { createLambdaDispatcher } from '../../../lib/dispatch/dispatcher.lambda';

type Seen = { path: string; invocationType: string | undefined; body: unknown };

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    req.on('data', (c: Buffer) => (data += c.toString()));
    req.on('end', () => resolve(data));
  });
}

describe('Lambda dispatcher', () => {
  let server: Server;
  let port = 0;
  const seen: Seen[] = [];
  let throttleFrom = Infinity;

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const payload = JSON.parse(await body(req)) as { from: number };
      seen.push({ path: req.url ?? '', invocationType: req.headers['x-amz-invocation-type'] as string, body: payload });
      if (payload.from >= throttleFrom) {
        res.writeHead(429, { 'content-type': 'application/json', 'x-amzn-errortype': 'TooManyRequestsException' });
        res.end(JSON.stringify({ message: 'Rate exceeded', Type: 'User' }));
        return;
      }
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const client = () =>
    new LambdaClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
    });

  it('sends each range as one asynchronous (Event) invocation with the range as payload', async () => {
    seen.length = 0;
    const d = createLambdaDispatcher({ client: client(), functionName: 'svc-dev-processor', concurrency: 3 });
    const ranges = Array.from({ length: 7 }, (_, i) => ({ stream: 's', topic: 't', partition: i, from: i * 10, until: i * 10 + 10 }));
    const res = await d.dispatch(ranges);
    expect(res).toEqual(ranges.map(() => ({ ok: true })));
    expect(seen).toHaveLength(7);
    expect(seen.every((s) => s.path === '/2015-03-31/functions/svc-dev-processor/invocations' && s.invocationType === 'Event')).toBe(true);
    expect(seen.map((s) => s.body).sort((a, b) => (a as { from: number }).from - (b as { from: number }).from)).toEqual(ranges);
  });

  it('reports a refused invocation per range without failing the others', async () => {
    seen.length = 0;
    throttleFrom = 20;
    const d = createLambdaDispatcher({ client: client(), functionName: 'p' });
    const res = await d.dispatch([0, 10, 20, 30].map((from) => ({ stream: 's', topic: 't', partition: 0, from, until: from + 10 })));
    expect(res.map((r) => r.ok)).toEqual([true, true, false, false]);
    expect(res[2]).toEqual({ ok: false, error: expect.stringMatching(/TooManyRequestsException/) });
    throttleFrom = Infinity;
  });
});
