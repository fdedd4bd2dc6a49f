/**
 * The local Lambda's Invoke API against Lambda's documented behaviour, with a small function run by
 * AWS's runtime emulator and runtime client: answers and function errors, a timeout, an event's
 * retries as configured, throttling at the reserved concurrency, payload limits, an unknown function,
 * the read-only task root and the environment's own /tmp, Lambda's variables, and no emulator left
 * behind when its owner dies.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LambdaClient, InvokeCommand } from '@aws-sdk/client-lambda';
import { CACHE_DIR, LOCAL_DIR } from '../../infra/local/stack/dirs';
import { isolationMode, privateTmp, type RuntimeTools } from '../../infra/local/lambda/emulator';
import { linkRuntimeSdk } from '../../infra/local/lambda/runtime-sdk';
import { startLocalLambda, type LocalLambda } from '../../infra/local/lambda/service';
import { ensureRic, ensureRie, node22Binary } from '../../infra/local/lambda/tools';
import { uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

jest.setTimeout(120_000);

const dir = join(LOCAL_DIR, 'test-runs', uniqueName('local-lambda'));
const FUNCTION = `exports.handler = async (event, context) => {
  if (event.throw) throw new TypeError('refused: ' + event.throw);
  if (event.busyMs) { const end = Date.now() + event.busyMs; while (Date.now() < end); }
  if (event.write) require('fs').writeFileSync(process.env.LAMBDA_TASK_ROOT + '/written', 'x');
  if (event.writeBeside) require('fs').writeFileSync(process.env.LAMBDA_TASK_ROOT + '/../beside', 'x');
  if (event.writeRoot) require('fs').writeFileSync('/local-lambda-probe', 'x');
  if (event.tmp) require('fs').writeFileSync('/tmp/mine', String(event.tmp));
  if (event.holdMb) globalThis.held = Buffer.alloc(event.holdMb * 1024 * 1024, 1);
  return {
    echo: event,
    tmp: require('fs').existsSync('/tmp/mine') ? require('fs').readFileSync('/tmp/mine', 'utf8') : null,
    name: context.functionName,
    remainingMs: context.getRemainingTimeInMillis(),
    env: { memory: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE, init: process.env.AWS_LAMBDA_INITIALIZATION_TYPE, region: process.env.AWS_REGION },
  };
};
`;

let lambda: LocalLambda;
let tools: RuntimeTools;

beforeAll(async () => {
  const task = join(dir, 'task');
  mkdirSync(task, { recursive: true });
  writeFileSync(join(task, 'index.js'), FUNCTION);
  tools = {
    rie: ensureRie(CACHE_DIR),
    ric: ensureRic(CACHE_DIR),
    node: node22Binary(),
    nodePath: linkRuntimeSdk(join(dir, 'runtime')),
    region: 'eu-west-1',
    localEnv: {},
  };
  const spec = { taskRoot: task, handler: 'index.handler', memoryMb: 256, timeoutSec: 2, env: { GREETING: 'hi' } };
  lambda = await startLocalLambda({
    functions: [
      { ...spec, name: 'echo', maxEventRetries: 2 },
      { ...spec, name: 'single', maxEventRetries: 0, reservedConcurrency: 1 },
    ],
    tools,
    dir: join(dir, 'environments'),
    eventRetryDelaysMs: [100, 200],
  });
}, 600_000);

afterAll(async () => {
  await lambda?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('answers through the AWS SDK: the function result, Lambda variables and context', async () => {
  const client = new LambdaClient({
    endpoint: lambda.endpoint,
    region: 'eu-west-1',
    credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
  });
  try {
    const res = await client.send(
      new InvokeCommand({ FunctionName: 'arn:aws:lambda:eu-west-1:123456789012:function:echo', Payload: Buffer.from('{"a":1}') }),
    );
    expect(res.StatusCode).toBe(200);
    expect(res.FunctionError).toBeUndefined();
    const out = JSON.parse(Buffer.from(res.Payload!).toString()) as {
      echo: unknown;
      name: string;
      remainingMs: number;
      env: Record<string, string>;
    };
    expect(out).toMatchObject({ echo: { a: 1 }, name: 'echo', env: { memory: '256', init: 'on-demand', region: 'eu-west-1' } });
    expect(out.remainingMs).toBeGreaterThan(1000);
    expect(out.remainingMs).toBeLessThanOrEqual(2000);
    // An Event invocation is accepted with 202 at once.
    const ev = await client.send(new InvokeCommand({ FunctionName: 'echo', InvocationType: 'Event', Payload: Buffer.from('{"b":2}') }));
    expect(ev.StatusCode).toBe(202);
    await lambda.idle('echo');
  } finally {
    client.destroy();
  }
});

it("records each environment's peak resident set (the runtime's VmHWM), which grows with what the handler holds", async () => {
  const peakAfter = async (payload: unknown) => {
    const res = await lambda.invoke('echo', payload);
    expect(res.status).toBe(200);
    return lambda.records.at(-1)!.peakRssMb;
  };
  const base = await peakAfter({});
  expect(base).toBeGreaterThan(20);
  // 96 MB written into a buffer the handler keeps: resident, and the peak stays once reached.
  const holding = await peakAfter({ holdMb: 96 });
  expect(holding).toBeGreaterThanOrEqual(base! + 80);
  expect(await peakAfter({})).toBeGreaterThanOrEqual(holding!);
});

it("reports a thrown error as Lambda does: 200, X-Amz-Function-Error, the runtime's error document", async () => {
  const res = await lambda.invoke('echo', { throw: 'bad' });
  expect(res).toMatchObject({ status: 200, functionError: 'Unhandled' });
  expect(JSON.parse(res.body)).toMatchObject({ errorType: 'TypeError', errorMessage: 'refused: bad' });
});

it('ends an invocation at the function timeout, and the environment starts again for the next', async () => {
  const res = await lambda.invoke('echo', { busyMs: 5000 });
  expect(res).toMatchObject({ status: 200, functionError: 'Unhandled' });
  expect(JSON.parse(res.body)).toMatchObject({ errorType: 'Sandbox.Timedout' });
  const timedOut = lambda.records.at(-1)!;
  expect(timedOut.outcome).toBe('timeout');
  expect(timedOut.durationMs).toBeGreaterThanOrEqual(2000);
  const next = await lambda.invoke('echo', { after: 'timeout' });
  expect(next.functionError).toBeUndefined();
  expect(lambda.records.at(-1)!.initMs).toBeGreaterThan(0);
});

it('retries a failed event as many times as the function is configured to, then drops it', async () => {
  const before = lambda.records.length;
  expect((await lambda.invoke('echo', { throw: 'always' }, 'Event')).status).toBe(202);
  await lambda.idle('echo');
  const attempts = lambda.records.slice(before);
  expect(attempts.map((r) => [r.type, r.attempt, r.outcome])).toEqual([
    ['Event', 0, 'error'],
    ['Event', 1, 'error'],
    ['Event', 2, 'error'],
  ]);
  expect(new Set(attempts.map((r) => r.requestId)).size).toBe(1);
});

it('throttles a synchronous invocation past the reserved concurrency with 429', async () => {
  const [a, b] = await Promise.all([
    lambda.invoke('single', { busyMs: 500 }),
    new Promise((r) => setTimeout(r, 100)).then(() => lambda.invoke('single', {})),
  ]);
  expect(a.status).toBe(200);
  expect(b.status).toBe(429);
  expect(b.body).toContain('reserved concurrency of 1');
});

it("refuses payloads over Lambda's limits and unknown functions", async () => {
  const big = 'x'.repeat(1024 * 1024 + 1);
  expect((await lambda.invoke('echo', { big }, 'Event')).status).toBe(413);
  expect((await lambda.invoke('nope', {})).status).toBe(404);
});

it('gives each environment a read-only file system but for a /tmp of its own', async () => {
  const write = await lambda.invoke('echo', { write: true });
  if (isolationMode() === 'none') return; // no mount namespace on this machine: said by deploy --emulate
  expect(write.functionError).toBe('Unhandled');
  expect(JSON.parse(write.body).errorMessage).toContain('EROFS');
  // Nor anywhere else outside /tmp: the machine's file system...
  expect(JSON.parse((await lambda.invoke('echo', { writeRoot: true })).body).errorMessage).toContain('EROFS');
  // A checkout under /tmp keeps the machine's /tmp (see privateTmp): its directory is then inside /tmp.
  if (!privateTmp({ taskRoot: join(dir, 'task') }, tools)) return;
  // ...and the project's directory (a mount of its own or not).
  expect(JSON.parse((await lambda.invoke('echo', { writeBeside: true })).body).errorMessage).toContain('EROFS');
  await lambda.invoke('echo', { tmp: 'kept' });
  expect(JSON.parse((await lambda.invoke('echo', {})).body)).toMatchObject({ tmp: 'kept' });
  const other = JSON.parse((await lambda.invoke('single', {})).body) as { tmp: string | null };
  expect(other.tmp).toBeNull();
});

it('leaves no emulator behind when the process that started it dies', async () => {
  // Its own handler file: the name is on the emulator's command line, for pgrep to find.
  const task = join(dir, 'orphan-task');
  mkdirSync(task, { recursive: true });
  writeFileSync(join(task, 'orphaned.js'), FUNCTION);
  const opts = {
    functions: [{ name: 'o', taskRoot: task, handler: 'orphaned.handler', memoryMb: 128, timeoutSec: 3, env: {}, maxEventRetries: 0 }],
    tools: {
      rie: ensureRie(CACHE_DIR),
      ric: ensureRic(CACHE_DIR),
      node: node22Binary(),
      nodePath: join(dir, 'runtime', 'node_modules'),
      region: 'us-east-1',
      localEnv: {},
    },
    dir: join(dir, 'orphan'),
  };
  const script = `
    const { startLocalLambda } = require(${JSON.stringify(require.resolve('../../infra/local/lambda/service'))});
    startLocalLambda(${JSON.stringify(opts)}).then(async (ll) => {
      await ll.invoke('o', {});
      process.stdout.write('invoked\\n');
      setInterval(() => {}, 1000);
    });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => d.toString().includes('invoked') && resolve()));
  const emulators = () => spawnSync('pgrep', ['-f', 'orphaned.handler'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).length;
  expect(emulators()).toBeGreaterThan(0);
  child.kill('SIGKILL');
  await waitFor('the orphaned emulators to exit', emulators, { until: (n) => n === 0, timeoutMs: 10_000, intervalMs: 200 });
  expect(emulators()).toBe(0);
});
