/**
 * What `sls package` ships, run as Lambda runs it: the stack created in the emulator's CloudFormation,
 * the planner's and processor's zips unzipped into read-only task roots and run by AWS's runtime
 * emulator and Node runtime client, with the settings the stack reports (handler, memory, timeout,
 * environment, reserved concurrency, event retries) and the planner's schedule. The planner's
 * dispatcher invokes the processor through the local Lambda's Invoke API with the AWS SDK, as on AWS.
 *
 * One stream, exactly-once into a sink table the stack creates, with a user handler file that
 * imports a package of its own (bundled: the runtime's module path has only the AWS SDK). Its
 * records include one the handler sleeps on once (the processor's function timeout kills that
 * invocation mid-range; a later one finishes the range) and a poison record it throws on (dead-lettered).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin, Producer } from 'kafkajs';
import { CACHE_DIR, LOCAL_DIR } from '../../infra/local/stack/dirs';
import { runPackagedStack, type PackagedRun } from '../../infra/local/lambda/run-packaged';
import type { InvocationRecord } from '../../infra/local/lambda/service';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { slsPackage, type Packaged } from '../deploy/package';
import { scanItems } from '../support/scan';
import { testDynamo, testKafka, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

jest.setTimeout(240_000);

const ddb = testDynamo();
const id = uniqueName('ll');
const topic = `${id}-t`;
const sinkTable = `${id}-sink`;
const KEYS = 12;
const RECORDS = 150;

/** The handler: per-key counts, exactly once; busy past the function's timeout on "slow" once per environment; throws on "poison". */
const HANDLER = `import { existsSync, writeFileSync } from 'node:fs';
import { label } from 'tally-label';

export default {
  mode: 'dynamodb-exactly-once' as const,
  async handle(records: Array<{ key: Buffer | null; value: Buffer | null }>) {
    const perKey = new Map<string, number>();
    for (const r of records) {
      const v = r.value?.toString();
      if (v === 'poison') throw new Error('poison record');
      if (v === 'slow' && !existsSync('/tmp/slow-seen-${id}')) {
        writeFileSync('/tmp/slow-seen-${id}', '1');
        // Busy, not waiting: the event loop is blocked, so nothing in the function can answer early and
        // Lambda's timeout ends the invocation.
        const end = Date.now() + 8_000;
        while (Date.now() < end);
      }
      perKey.set(String(r.key), (perKey.get(String(r.key)) ?? 0) + 1);
    }
    return [...perKey].map(([k, n]) => ({
      update: { key: { id: k }, expression: 'ADD n :n SET tag = :tag', values: { ':n': n, ':tag': label(k) } },
    }));
  },
};
`;

let projectDir: string;
let packaged: Packaged;
let run: PackagedRun;
let admin: Admin;
let producer: Producer;
const expected = new Map<string, number>();
/** Every line the functions and the runtime printed. */
const lines: string[] = [];

/** The stream project: the handler file, its own package in node_modules, the streams config. */
function writeProject(brokers: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'packaged-lambda-'));
  mkdirSync(join(dir, 'handlers'));
  writeFileSync(join(dir, 'handlers', 'tally.ts'), HANDLER);
  const pkg = join(dir, 'node_modules', 'tally-label');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'tally-label', version: '1.0.0', main: 'index.js' }));
  writeFileSync(join(pkg, 'index.js'), "exports.label = (k) => 'tally:' + k;\n");
  const config = {
    ledgerTable: 'named-by-the-stack',
    streams: [
      {
        id,
        kafka: { brokers },
        topics: [topic],
        triggerIntervalMs: 1000,
        maxAttempts: 3,
        processor: { timeoutMs: 4000, leaseMs: 8000 },
        handler: {
          module: './handlers/tally.ts',
          mode: 'dynamodb-exactly-once',
          sinkTable: { name: sinkTable, key: { partitionKey: 'id' } },
        },
      },
    ],
  };
  writeFileSync(join(dir, 'streams.json'), JSON.stringify(config));
  return dir;
}

async function produce(): Promise<void> {
  const messages = Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i % KEYS}`, value: `v${i}`, partition: i % 3 }));
  messages[40] = { ...messages[40]!, value: 'slow' };
  messages[77] = { ...messages[77]!, value: 'poison' };
  for (const m of messages) if (m.value !== 'poison') expected.set(m.key, (expected.get(m.key) ?? 0) + 1);
  await producer.send({ topic, messages });
}

async function sinkCounts(): Promise<Map<string, number>> {
  const items = await scanItems(ddb, sinkTable).catch(() => []);
  return new Map(items.map((i) => [String(i.id), Number(i.n)]));
}

/** The emulated Lambda runs on its own schedule: its effects are polled for, not too often (the emulator is busy enough). */
const POLL_MS = 500;

const of = (fn: 'planner' | 'processor') => (r: InvocationRecord) => r.function.endsWith(`-${fn}`);

beforeAll(async () => {
  const kafka = testKafka('packaged-lambda');
  admin = kafka.admin();
  producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  projectDir = writeProject(process.env.KAFKA_BROKERS!.split(','));
  packaged = slsPackage('emu', 'us-east-1', {
    streamsConfig: join(projectDir, 'streams.json'),
    processorTimeout: '5',
    processorReservedConcurrency: '1',
  });
  await produce();
  run = await runPackagedStack({
    packageDir: packaged.dir,
    stackName: id,
    awsEndpoint: process.env.DYNAMODB_ENDPOINT!,
    region: 'us-east-1',
    dir: join(LOCAL_DIR, 'test-runs', id),
    cacheDir: CACHE_DIR,
    onLine: (f, l) => {
      lines.push(l);
      if (process.env.LL_DEBUG) console.log(f.split('-').pop(), l.slice(0, 250));
    },
  });
}, 600_000);

afterAll(async () => {
  if (process.env.LL_DEBUG)
    console.log(
      run?.lambda.records
        .map(
          (r) =>
            `${r.function.split('-').pop()} ${r.type} ${r.attempt} ${r.outcome} env=${r.environment} init=${r.initMs} d=${r.durationMs} ${r.answer.slice(0, 300)}`,
        )
        .join('\n'),
    );
  await run?.stop();
  await admin?.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await Promise.allSettled([admin?.disconnect(), producer?.disconnect()]);
  rmSync(join(LOCAL_DIR, 'test-runs', id), { recursive: true, force: true });
  if (packaged) rmSync(packaged.dir, { recursive: true, force: true });
  if (projectDir) rmSync(projectDir, { recursive: true, force: true });
  ddb.destroy();
});

it('runs the functions with the settings the stack reports', () => {
  const [planner, processor] = ['planner', 'processor'].map((f) => run.stack.functions.find((x) => x.name.endsWith(`-${f}`))!);
  expect(planner).toMatchObject({ handler: 'functions/planner.handler', memoryMb: 192, timeoutSec: 90, maxEventRetries: 0 });
  expect(processor).toMatchObject({ handler: 'functions/processor.handler', timeoutSec: 5, reservedConcurrency: 1, maxEventRetries: 0 });
  expect(processor!.env.STREAMS_CONFIG).toContain(topic);
  expect(run.stack.schedules).toEqual([{ target: planner!.name, rateMs: 60_000, input: '{"loop":true}' }]);
  // Alarms (and the dashboard naming them) are not emulated; the deploy tests check them.
  expect(run.stack.leftOut).toContain('Dashboard');
});

it('drains the stream exactly once through the zips; a timed-out invocation and a poison record do not lose or double anything', async () => {
  const counts = await waitFor('every record in the sink', sinkCounts, {
    until: (c) => [...expected].every(([k, n]) => (c.get(k) ?? 0) >= n),
    timeoutMs: 150_000,
    intervalMs: POLL_MS,
  });
  expect(counts).toEqual(expected);
  const tags = (await scanItems(ddb, sinkTable)).map((i) => i.tag);
  expect(new Set(tags)).toEqual(new Set([...expected.keys()].map((k) => `tally:${k}`)));
  // The fault fired: the runtime killed a processor invocation at its 5 s timeout, mid-range.
  const processors = run.lambda.records.filter(of('processor'));
  expect(processors.filter((r) => r.outcome === 'timeout').length).toBeGreaterThanOrEqual(1);
  expect(processors.find((r) => r.outcome === 'timeout')!.durationMs).toBeGreaterThanOrEqual(5000);
  // The poison record was dead-lettered (the handler's error, isolated), and the partition went on.
  const ledgerTable = processors[0] && run.stack.functions.find((f) => f.name.endsWith('-processor'))!.env.LEDGER_TABLE!;
  const deadLetters = await createDynamoLedger({ client: ddb, tableName: ledgerTable! }).listDeadLetters(id);
  expect(deadLetters.map((d) => d.offset).length).toBe(1);
  // Cold starts as the runtime reported them: the first invocation of each environment has an init.
  expect(processors[0]!.initMs).toBeGreaterThan(0);
  expect(processors.every((r) => r.durationMs !== undefined)).toBe(true);
});

it('applies nothing twice when a processor event is delivered again', async () => {
  const before = await sinkCounts();
  const done = run.lambda.records.filter((r) => of('processor')(r) && r.outcome === 'ok');
  expect(done.length).toBeGreaterThan(0);
  const again = done.slice(0, 3);
  for (const r of again) {
    const res = await run.lambda.invoke(r.function, JSON.parse(r.payload.toString('utf8')), 'Event');
    expect(res.status).toBe(202);
  }
  await run.lambda.idle(again[0]!.function);
  const replays = run.lambda.records.slice(-again.length);
  expect(replays.every((r) => r.type === 'Event' && of('processor')(r) && r.outcome === 'ok')).toBe(true);
  // Each delivery again met its range finished (a shared invocation answers per range).
  for (const r of replays) expect(r.answer).toMatch(/"status":"already-done"/);
  expect(replays.map((r) => r.answer).join()).not.toMatch(/"status":"done"/);
  expect(await sinkCounts()).toEqual(before);
});

it('answers a bad payload with the runtime error document, its stack frames inside the task root', async () => {
  const processor = run.stack.functions.find((f) => f.name.endsWith('-processor'))!;
  const res = await run.lambda.invoke(processor.name, { stream: 5 });
  expect(res).toMatchObject({ status: 200, functionError: 'Unhandled' });
  const doc = JSON.parse(res.body) as { errorType: string; errorMessage: string; trace: string[] };
  expect(doc.errorType).toBe('ValidationError');
  // Source-mapped frames name the engine's files under the task root, never above it (`/lib/...`).
  const taskRoot = join(LOCAL_DIR, 'test-runs', id, 'functions', processor.name);
  const frames = doc.trace.filter((l) => l.trim().startsWith('at ') && l.includes('.ts:'));
  expect(frames.length).toBeGreaterThan(0);
  for (const f of frames) expect(f).toContain(`(${taskRoot}/`);
  // A failing invocation with nothing to count prints no Powertools "no metrics" warning.
  expect(lines.filter((l) => l.includes('No application metrics'))).toEqual([]);
});

it('hands the planner loop over to the next scheduled invocation', async () => {
  const ended = (): InvocationRecord | undefined => run.lambda.records.find(of('planner'));
  const first = await waitFor('the first planner invocation to end', ended, { timeoutMs: 90_000, intervalMs: POLL_MS });
  expect(first.outcome).toBe('ok');
  expect(first.initMs).toBeGreaterThan(0);
  const answer = JSON.parse(first.answer) as { streams: Array<{ outcome: string; ticks: number }> };
  expect(answer.streams[0]).toMatchObject({ outcome: 'handed-over' });
  expect(answer.streams[0]!.ticks).toBeGreaterThan(10);
});
