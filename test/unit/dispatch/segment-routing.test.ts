/**
 * The planner's dispatcher with a segments function (lib/dispatch/segment-routing.ts): continuous
 * streams' invocations go to it, every other stream's to the processor, and without
 * SEGMENT_FUNCTION_NAME (a stack with no continuous stream) everything goes to the processor as before.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { parseDeploymentConfig, type DeploymentConfig } from '../../../lib/config/schema';
import { createLambdaDispatcher } from '../../../lib/dispatch/dispatcher.lambda';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { plannerDispatcher, routeStreams, SEGMENT_FUNCTION_NAME_ENV } from '../../../lib/dispatch/segment-routing';
import type { Dispatcher } from '../../../lib/ports/dispatcher';
import { OPEN_UNTIL, type RangePayload } from '../../../lib/ranges';

const range = (stream: string, partition: number, until = OPEN_UNTIL): RangePayload => ({ stream, topic: 't', partition, from: 0, until });

/** A config of a micro-batch stream `batch` and a continuous stream `live`. */
const config = (): DeploymentConfig =>
  parseDeploymentConfig(
    {
      ledgerTable: 'ledger',
      streams: [
        { id: 'batch', kafka: { brokers: ['localhost:9092'] }, topics: ['t'] },
        { id: 'live', kafka: { brokers: ['localhost:9092'] }, topics: ['t'], continuous: {} },
      ],
    },
    'test',
  );

describe('routeStreams', () => {
  it("sends each invocation to its stream's function, re-indexed, with the results in input order", async () => {
    const processor = createRecordingDispatcher();
    const segments = createRecordingDispatcher();
    const d = routeStreams(processor, { streams: new Set(['live']), dispatcher: segments });
    // One dispatch holds one stream's ranges in the planner; mixed here to show each invocation is routed on its own.
    const ranges = [range('live', 0), range('batch', 0, 10), range('live', 1), range('live', 2), range('batch', 1, 10)];
    const results = await d.dispatch(ranges, { invocations: [[0, 2], [1], [3], [4]] });
    expect(results).toEqual(ranges.map(() => ({ ok: true })));
    expect(segments.invocations).toEqual([[ranges[0], ranges[2]], [ranges[3]]]);
    expect(processor.invocations).toEqual([[ranges[1]], [ranges[4]]]);
  });

  it("reports a side's failure on that side's ranges only", async () => {
    const processor = createRecordingDispatcher();
    const segments = createRecordingDispatcher();
    segments.failNext(1, 'TooManyRequestsException: Rate exceeded');
    const d = routeStreams(processor, { streams: new Set(['live']), dispatcher: segments });
    const ranges = [range('batch', 0, 10), range('live', 0), range('live', 1)];
    expect(await d.dispatch(ranges, { invocations: [[0], [1], [2]] })).toEqual([
      { ok: true },
      { ok: false, error: 'TooManyRequestsException: Rate exceeded' },
      { ok: true },
    ]);
    expect(segments.invocations).toEqual([[ranges[2]]]);
  });

  it('sends one invocation per range when the planner does not group them', async () => {
    const processor = createRecordingDispatcher();
    const segments = createRecordingDispatcher();
    const d = routeStreams(processor, { streams: new Set(['live']), dispatcher: segments });
    await d.dispatch([range('live', 0), range('live', 1)]);
    expect(segments.invocations).toEqual([[range('live', 0)], [range('live', 1)]]);
    expect(processor.invocations).toEqual([]);
    expect(await d.dispatch([])).toEqual([]);
  });
});

describe('plannerDispatcher: the choice from the environment and the config', () => {
  /** Dispatchers by the function they invoke. */
  function functions() {
    const made = new Map<string, ReturnType<typeof createRecordingDispatcher>>();
    const create = (name: string): Dispatcher => {
      const d = createRecordingDispatcher();
      made.set(name, d);
      return d;
    };
    return { made, create };
  }

  it('without SEGMENT_FUNCTION_NAME every stream goes to the processor (a stack without a segments function)', async () => {
    const f = functions();
    const d = plannerDispatcher({}, config(), { processor: 'svc-dev-processor', create: f.create });
    await d.dispatch([range('live', 0)]);
    expect([...f.made.keys()]).toEqual(['svc-dev-processor']);
    expect(f.made.get('svc-dev-processor')?.dispatched).toEqual([range('live', 0)]);
  });

  it('with it, continuous streams go to the segments function and the others to the processor', async () => {
    const f = functions();
    const env = { [SEGMENT_FUNCTION_NAME_ENV]: 'svc-dev-segments' };
    const d = plannerDispatcher(env, config(), { processor: 'svc-dev-processor', create: f.create });
    await d.dispatch([range('live', 0), range('live', 1)], { invocations: [[0, 1]] });
    await d.dispatch([range('batch', 0, 10)]);
    expect(f.made.get('svc-dev-segments')?.invocations).toEqual([[range('live', 0), range('live', 1)]]);
    expect(f.made.get('svc-dev-processor')?.invocations).toEqual([[range('batch', 0, 10)]]);
  });

  it('with it but no continuous stream in the config, nothing is routed', async () => {
    const f = functions();
    const only = { ...config(), streams: config().streams.filter((s) => s.id === 'batch') };
    const d = plannerDispatcher({ [SEGMENT_FUNCTION_NAME_ENV]: 'svc-dev-segments' }, only, { processor: 'p', create: f.create });
    await d.dispatch([range('batch', 0, 10)]);
    expect([...f.made.keys()]).toEqual(['p']);
  });
});

describe("plannerDispatcher over Lambda's Invoke API (as lib/runtime/aws.ts builds it)", () => {
  let server: Server;
  let port = 0;
  const seen: Array<{ fn: string; body: unknown }> = [];

  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let data = '';
      req.on('data', (c: Buffer) => (data += c.toString()));
      req.on('end', () => resolve(data));
    });

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      // POST /2015-03-31/functions/<name>/invocations
      const fn = decodeURIComponent(/\/functions\/([^/]+)\/invocations/.exec(req.url ?? '')?.[1] ?? '');
      seen.push({ fn, body: JSON.parse(await read(req)) });
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("invokes the segments function with a continuous stream's group of ranges, the processor with the others", async () => {
    const client = new LambdaClient({
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
    });
    const d = plannerDispatcher({ [SEGMENT_FUNCTION_NAME_ENV]: 'svc-dev-segments' }, config(), {
      processor: 'svc-dev-processor',
      create: (functionName) => createLambdaDispatcher({ client, functionName }),
    });
    expect(await d.dispatch([range('live', 0), range('live', 1)], { invocations: [[0, 1]] })).toEqual([{ ok: true }, { ok: true }]);
    expect(await d.dispatch([range('batch', 3, 10)])).toEqual([{ ok: true }]);
    const strip = ({ stream: _s, ...r }: RangePayload) => r;
    expect(seen).toEqual([
      { fn: 'svc-dev-segments', body: { stream: 'live', ranges: [strip(range('live', 0)), strip(range('live', 1))] } },
      { fn: 'svc-dev-processor', body: range('batch', 3, 10) },
    ]);
    client.destroy();
  });
});
