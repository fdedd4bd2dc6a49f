/**
 * The tick chain as `sls package` ships it, under Lambda's runtime emulator: a stream whose interval
 * (5 s) is at least the deploy's tickChainFromMs gets the tick queue and its event source mapping; the
 * schedule's first invocation starts the chain, each tick message invokes the planner once and sends
 * the next through the emulator's SQS, and the stream drains. A tick message delivered again claims
 * nothing and ticks nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Admin, Producer } from 'kafkajs';
import { CACHE_DIR, LOCAL_DIR } from '../../infra/local/stack/dirs';
import { runPackagedStack, type PackagedRun } from '../../infra/local/lambda/run-packaged';
import type { InvocationRecord } from '../../infra/local/lambda/service';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { slsPackage, type Packaged } from '../deploy/package';
import { testDynamo, testKafka, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

jest.setTimeout(240_000);

const ddb = testDynamo();
const id = uniqueName('tc');
const topic = `${id}-t`;
const INTERVAL_MS = 5000;
const RECORDS = 90;

let projectDir: string;
let packaged: Packaged;
let run: PackagedRun;
let admin: Admin;
let producer: Producer;

type ChainAnswer = {
  chain: Array<{ seq: number; outcome: string; lagMs?: number; next?: { seq: number; dueMs: number; delayMs: number } }>;
};

const isTick = (r: InvocationRecord) => r.function.endsWith('-planner') && r.payload.toString().includes('"aws:sqs"');
const ticks = (): Array<{ record: InvocationRecord; answer: ChainAnswer }> =>
  run.lambda.records.filter(isTick).map((record) => ({ record, answer: JSON.parse(record.answer) as ChainAnswer }));

beforeAll(async () => {
  const kafka = testKafka('tick-chain-lambda');
  admin = kafka.admin();
  producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  projectDir = mkdtempSync(join(tmpdir(), 'tick-chain-'));
  const stream = {
    id,
    kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
    topics: [topic],
    triggerIntervalMs: INTERVAL_MS,
    handler: { module: 'noop', mode: 'at-least-once' },
  };
  writeFileSync(join(projectDir, 'streams.json'), JSON.stringify({ ledgerTable: 'named-by-the-stack', streams: [stream] }));
  packaged = slsPackage('emu', 'us-east-1', { streamsConfig: join(projectDir, 'streams.json') });
  await producer.send({
    topic,
    messages: Array.from({ length: RECORDS / 2 }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: i % 3 })),
  });
  run = await runPackagedStack({
    packageDir: packaged.dir,
    stackName: id,
    awsEndpoint: process.env.DYNAMODB_ENDPOINT!,
    region: 'us-east-1',
    dir: join(LOCAL_DIR, 'test-runs', id),
    cacheDir: CACHE_DIR,
  });
}, 600_000);

afterAll(async () => {
  await run?.stop();
  await admin?.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await Promise.allSettled([admin?.disconnect(), producer?.disconnect()]);
  rmSync(join(LOCAL_DIR, 'test-runs', id), { recursive: true, force: true });
  if (packaged) rmSync(packaged.dir, { recursive: true, force: true });
  if (projectDir) rmSync(projectDir, { recursive: true, force: true });
  ddb.destroy();
});

it('packages the tick queue and its mapping for the chained stream, and runs the mapping locally instead of moto', () => {
  const types = Object.values(packaged.template.Resources).map((r) => r.Type);
  expect(types).toEqual(expect.arrayContaining(['AWS::SQS::Queue', 'AWS::Lambda::EventSourceMapping']));
  expect(run.stack.queueMappings).toEqual([expect.objectContaining({ target: expect.stringMatching(/-planner$/), batchSize: 1 })]);
  expect(run.stack.leftOut).toContain('PlannerTickQueueMapping');
  const planner = run.stack.functions.find((f) => f.name.endsWith('-planner'));
  expect(planner?.env).toMatchObject({ TICK_CHAIN_FROM_MS: '5000', PLANNER_TICK_QUEUE_URL: run.stack.queueMappings[0]?.queueUrl });
});

it('starts the chain from the schedule and ticks once per interval through the queue until the stream is drained', async () => {
  const schedule = await waitFor(
    'the first scheduled invocation',
    () => run.lambda.records.find((r) => r.function.endsWith('-planner') && !isTick(r)),
    {
      timeoutMs: 90_000,
      intervalMs: 500,
    },
  );
  expect(JSON.parse(schedule.answer)).toMatchObject({
    loop: true,
    streams: [],
    chains: [{ stream: id, outcome: 'started', next: { seq: 1 } }],
  });
  // A second batch while the chain runs: a later tick plans it.
  await waitFor('two ticks', () => (ticks().length >= 2 ? true : undefined), { timeoutMs: 60_000, intervalMs: 500 });
  await producer.send({
    topic,
    messages: Array.from({ length: RECORDS / 2 }, (_, i) => ({ key: `m${i}`, value: `w${i}`, partition: i % 3 })),
  });
  const ledger = createDynamoLedger({ client: ddb, tableName: planner().env.LEDGER_TABLE! });
  await waitFor(
    'every record committed',
    async () => ((await ledger.readPartitions(id)).reduce((n, p) => n + p.committed, 0) === RECORDS ? true : undefined),
    { timeoutMs: 90_000, intervalMs: 1000 },
  );
  const seen = ticks();
  expect(seen.every((t) => t.record.outcome === 'ok')).toBe(true);
  const ticked = seen.flatMap((t) => t.answer.chain).filter((c) => c.outcome === 'ticked');
  // Numbers in sequence, each ticked once, each sending the next due one interval after its own.
  expect(ticked.map((c) => c.seq)).toEqual(ticked.map((_, i) => i + 1));
  expect(ticked.length).toBeGreaterThanOrEqual(3);
  const dues = ticked.map((c) => c.next!.dueMs);
  for (let i = 1; i < dues.length; i++) expect(dues[i]! - dues[i - 1]!).toBeGreaterThanOrEqual(INTERVAL_MS);
  expect(ticked.slice(1).every((c) => c.next!.delayMs > 0 && c.next!.delayMs % 1000 === 0)).toBe(true);
});

it('ticks nothing for a tick message delivered again', async () => {
  const last = ticks()
    .flatMap((t) => t.answer.chain)
    .filter((c) => c.outcome === 'ticked')
    .at(-1)!;
  const sqs = new SQSClient({
    endpoint: process.env.DYNAMODB_ENDPOINT!,
    region: 'us-east-1',
    credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
  });
  try {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: run.stack.queueMappings[0]!.queueUrl,
        MessageBody: JSON.stringify({ stream: id, seq: last.seq, dueMs: 0 }),
      }),
    );
  } finally {
    sqs.destroy();
  }
  const again = await waitFor(
    'the copy to be delivered',
    () => ticks().find((t) => t.answer.chain.some((c) => c.seq === last.seq && c.outcome === 'duplicate')),
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  expect(again.record.outcome).toBe('ok');
  expect(again.answer.chain[0]).not.toHaveProperty('next');
});

const planner = () => run.stack.functions.find((f) => f.name.endsWith('-planner'))!;
