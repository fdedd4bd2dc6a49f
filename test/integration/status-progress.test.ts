/**
 * `status` shows a range's progress inside the range while its processor is mid-way (real broker and
 * emulator): a processor paused after its second committed chunk of a 300-record range leaves the
 * partition's committed offset at 0, and status says 100 of the 300 offsets are done inside it.
 */
import { runCli } from '../../lib/cli/program';
import { parseDeploymentConfig, type StreamConfig } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { createOpsContext, type OpsContext } from '../../lib/ops/context';
import { planStream } from '../../lib/planner/run';
import { processRange } from '../../lib/processor/process-range';
import { createSinkTable, createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const ddb = testDynamo();
const kafka = testKafka('status-progress-it');
const admin = kafka.admin();
const producer = kafka.producer();
const id = uniqueName('stp');
const topic = `${id}-t`;
const ledgerTable = uniqueName('stp-ledger');
const env = { ...process.env };
let ctx: OpsContext;
let stream: StreamConfig;
let config: ReturnType<typeof parseDeploymentConfig>;

async function cli(argv: string[]): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const code = await runCli(argv, { out: (s) => out.push(s), err: () => undefined }, { env, loadConfig: () => ({ config, env }) });
  return { code, out: out.join('') };
}

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect(), producer.connect()]);
  const sinkTable = await createSinkTable(ddb, 'stp-sink');
  config = parseDeploymentConfig(
    {
      ledgerTable,
      streams: [
        {
          id,
          kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
          topics: [topic],
          processor: { timeoutMs: 30_000 },
          handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
        },
      ],
    },
    'test',
  );
  stream = config.streams[0] as StreamConfig;
  await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
  await producer.send({
    topic,
    messages: Array.from({ length: 300 }, (_, i) => ({ key: `a${i % 7}`, value: JSON.stringify({ amount: i }) })),
  });
  ctx = createOpsContext(config, env);
});

afterAll(async () => {
  await ctx?.close();
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
});

it('status and --json show offsets done inside a range in flight, beside committed 0', async () => {
  const dispatcher = createRecordingDispatcher();
  const rep = await planStream(
    { ledger: ctx.ledger, metadataFor: (s) => ctx.metadata.forStream(s), dispatcher, plannerLeaseMs: 30_000 },
    stream,
    { dryRun: false, nowMs: Date.now() },
  );
  expect(rep.rangesPlanned).toBe(1);
  const range = dispatcher.dispatched[0]!;
  let resume!: () => void;
  let paused!: () => void;
  const atPause = new Promise<void>((r) => (paused = r));
  let commits = 0;
  const run = processRange(
    {
      ledger: ctx.ledger,
      readerFor: (s) => ctx.readerFor(s),
      handlerFor: (s) => ctx.handlerFor(s),
      maxChunkRecords: 50,
      // running-totals folds: batches of 50 records commit as chunks of 50 would.
      fold: { maxRecords: 50 },
      afterStep: async (step) => {
        if (step !== 'committed' || ++commits !== 2) return;
        paused();
        await new Promise<void>((r) => (resume = r));
      },
    },
    { stream, range, deadlineAtMs: Date.now() + 30_000 },
  );
  await atPause;
  try {
    const json = await cli(['status', id, '--json']);
    expect(json.code).toBe(0);
    const s = JSON.parse(json.out);
    expect(s.partitions[0]).toMatchObject({ committed: 0, inFlight: 1, inFlightDone: 100, inFlightOffsets: 300 });
    expect(s.inFlightProgress).toMatchObject({ ranges: 1, offsets: 300, done: 100 });
    // The range itself, as the DynamoDB ledger has it: leased once, 100 offsets in, no error.
    expect(s.partitions[0].openRanges).toEqual([
      { from: 0, until: 300, status: 'leased', attempts: 1, progress: 100, leaseExpiresAtMs: expect.any(Number) },
    ]);
    expect(s.partitions[0].dataLoss).toEqual([]);
    const text = await cli(['status', id]);
    expect(text.out).toContain('in flight: 1 range, 100 of 300 offsets done inside them (33%)');
    expect(text.out).toMatch(/ 100\/300 /);
  } finally {
    resume();
    await run;
  }
  const after = JSON.parse((await cli(['status', id, '--json'])).out);
  expect(after.partitions[0]).toMatchObject({ committed: 300, inFlight: 0, inFlightDone: 0 });
  expect(after.partitions[0].openRanges).toEqual([]);
  expect(after.inFlightProgress).toMatchObject({ ranges: 0, done: 0 });
});
