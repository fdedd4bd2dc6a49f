/**
 * Upgrading a ledger written by the earlier release (layout 1: full `P#` items, an `R#` item per range,
 * on the real broker and emulator): refused at start with one line naming the command, migrated in
 * place by `kafka-direct migrate-ledger` (stopped stream: a live range lease refuses it; interrupted,
 * it finishes when run again), then resumed: every record of the topic counts exactly once in the
 * sink, what the earlier release applied included, and its finished ranges are in the history.
 */
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { StoreError } from '../../lib/errors';
import { createDynamoLedgerMigration } from '../../lib/ledger/migrate.dynamodb';
import { runCli } from '../../lib/cli/program';
import { parseDeploymentConfig, type StreamConfig } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { codec } from '../../lib/ledger/items.dynamodb';
import { keys } from '../../lib/ledger/keys.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { createOpsContext, type OpsContext } from '../../lib/ops/context';
import { planStream } from '../../lib/planner/run';
import type { PartitionState, RangeState } from '../../lib/ports/ledger-state';
import { processRange } from '../../lib/processor/process-range';
import { createLocalRunner } from '../../lib/runtime/local';
import { createSinkTable } from '../../lib/sink/table.dynamodb';
import { scanTotals } from '../../lib/sink/totals.dynamodb';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const ddb = testDynamo();
const doc = DynamoDBDocumentClient.from(ddb, { marshallOptions: { removeUndefinedValues: true } });
const kafka = testKafka('migration-it');
const admin = kafka.admin();
const producer = kafka.producer();
const id = uniqueName('migr');
const streamId = id;
const topic = `${id}-payments`;
const ledgerTable = uniqueName('migr-ledger');
const sinkTable = uniqueName('migr-totals');
const env = { ...process.env, USER: 'migration-tester' };
const config = parseDeploymentConfig(
  {
    ledgerTable,
    streams: [
      {
        id,
        kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
        topics: [topic],
        triggerIntervalMs: 1000,
        processor: { timeoutMs: 30_000 },
        handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
      },
    ],
  },
  'test',
);
const stream = config.streams[0] as StreamConfig;
let ctx: OpsContext;
const RECORDS = 100;
/** Record i of partition p: account acct-(i % 5), amount p * 1000 + i + 1. */
const amount = (p: number, i: number) => p * 1000 + i + 1;
const totalsOf = (upTo: number) => {
  const out = new Map<string, { total: number; count: number }>();
  for (const p of [0, 1]) {
    for (let i = 0; i < upTo; i++) {
      const t = out.get(`acct-${i % 5}`) ?? { total: 0, count: 0 };
      out.set(`acct-${i % 5}`, { total: t.total + amount(p, i), count: t.count + 1 });
    }
  }
  return out;
};

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (s) => out.push(s), err: (s) => err.push(s) }, { env, loadConfig: () => ({ config, env }) });
  return { code, out: out.join(''), err: err.join('') };
}

const put = (item: Record<string, unknown>) => doc.send(new PutCommand({ TableName: ledgerTable, Item: item }));

/**
 * What the earlier release left after processing offsets [0, 60) of both partitions: its items, in
 * its own shapes (the codec still writes them), and the sink holding those 60 records a partition.
 */
async function writeLayoutOne(nowMs: number, leased: boolean, id = streamId): Promise<void> {
  await put({
    ...keys.meta(id),
    stream: id,
    epoch: 7,
    ownerToken: 'old-planner',
    leaseExpiresAtMs: 0,
    startedAtMs: 1000,
    confirmedEpoch: 7,
  });
  const range = (p: number, from: number, until: number, extra: Partial<RangeState>): RangeState => ({
    stream: id,
    topic,
    partition: p,
    from,
    until,
    status: 'done',
    epoch: 6,
    plannedAtMs: nowMs - 60_000,
    dispatchedAtMs: nowMs - 60_000,
    dispatches: 1,
    attempts: 1,
    progress: until,
    ...extra,
  });
  for (const p of [0, 1]) {
    const partition: PartitionState = {
      stream: id,
      topic,
      partition: p,
      status: 'active',
      startOffset: 0,
      committed: 60,
      nextFrom: 80,
      firstSeenAtMs: 1000,
      lastPlannedAtMs: nowMs - 5000,
      observedRecordsPerSec: 500,
    };
    await put(codec.partitionItem(partition));
    await put(codec.rangeItem(range(p, 0, 30, { records: 30, finishedAtMs: nowMs - 50_000 })));
    await put(codec.rangeItem(range(p, 30, 60, { records: 30, finishedAtMs: nowMs - 40_000 })));
  }
  // Partition 0: [60, 80) planned and sent ten minutes ago (when the stream was stopped), never taken.
  // Partition 1: [60, 80) failed once, or still held by a processor.
  const sentLongAgo = { plannedAtMs: nowMs - 600_000, dispatchedAtMs: nowMs - 600_000 };
  await put(codec.rangeItem(range(0, 60, 80, { status: 'planned', epoch: 7, attempts: 0, progress: 60, ...sentLongAgo })));
  const held = leased
    ? { status: 'leased' as const, leaseToken: 'old-proc', leaseExpiresAtMs: nowMs + 60_000 }
    : { status: 'failed' as const };
  await put(codec.rangeItem(range(1, 60, 80, { ...held, epoch: 7, progress: 60, lastError: 'broker down' })));
  for (const [pk, t] of totalsOf(60)) await doc.send(new PutCommand({ TableName: sinkTable, Item: { pk, ...t, lastOffset: 59 } }));
}

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, ledgerTable), createSinkTable(ddb, sinkTable), admin.connect(), producer.connect()]);
  await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
  for (const p of [0, 1]) {
    await producer.send({
      topic,
      messages: Array.from({ length: RECORDS }, (_, i) => ({
        key: `acct-${i % 5}`,
        value: JSON.stringify({ amount: amount(p, i) }),
        partition: p,
      })),
    });
  }
  ctx = createOpsContext(config, env);
});

afterAll(async () => {
  await ctx?.close();
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
});

it('refuses a ledger of the earlier layout at start, migrates it once stopped, and resumes exactly', async () => {
  const now = Date.now();
  await writeLayoutOne(now, true);

  // Refused at start, one line naming the command; nothing written.
  const deps = {
    ledger: ctx.ledger,
    metadataFor: (s: StreamConfig) => ctx.metadata.forStream(s),
    dispatcher: createRecordingDispatcher(),
    plannerLeaseMs: 60_000,
  };
  const refused = await planStream(deps, stream, { dryRun: false, nowMs: now }).catch((e: Error) => e);
  expect(String((refused as Error).message)).toMatch(new RegExp(`kafka-direct migrate-ledger ${id}\``));
  const range = { stream: id, topic, partition: 0, from: 60, until: 80 };
  const proc = await processRange(
    { ledger: ctx.ledger, readerFor: (s) => ctx.readerFor(s), handlerFor: (s) => ctx.handlerFor(s) },
    { stream, range, deadlineAtMs: now + 20_000 },
  ).catch((e: Error) => e);
  expect(String((proc as Error).message)).toMatch(/layout 1.*migrate-ledger/);
  const status = await cli(['status', id]);
  expect(status.code).toBe(1);
  expect(status.err.trim().split('\n')).toHaveLength(1);
  expect(status.err).toMatch(/migrate-ledger/);

  // A processor of the earlier release still holds a range: refused, nothing changed.
  const busy = await cli(['migrate-ledger', id]);
  expect(busy).toMatchObject({ code: 3 });
  expect(busy.err).toMatch(/leased until .*stop the planner, let its processors finish/);

  // Stopped: its processors finished (the range failed and was given back).
  await put(codec.rangeItem({ ...(await oldRange(1, 60))!, status: 'failed', leaseToken: undefined, leaseExpiresAtMs: 0 }));
  const migrated = await cli(['migrate-ledger', id, '--json']);
  expect(migrated.code).toBe(0);
  expect(JSON.parse(migrated.out)).toEqual({ stream: id, outcome: 'migrated', partitions: 2, liveRanges: 4, archivedRanges: 2 });
  expect(JSON.parse((await cli(['migrate-ledger', id, '--json'])).out)).toMatchObject({ outcome: 'current' });

  // What the earlier release recorded is what the ledger says now.
  const { partitions, ranges } = await ctx.ledger.readPartitionsAndRanges(id);
  expect(partitions.map((p) => [p.partition, p.committed, p.nextFrom, p.observedRecordsPerSec])).toEqual([
    [0, 60, 80, 500],
    [1, 60, 80, 500],
  ]);
  expect(ranges.map((r) => `${r.partition}:${r.from}-${r.until}:${r.status}`).sort()).toEqual([
    '0:30-60:done',
    '0:60-80:planned',
    '1:30-60:done',
    '1:60-80:failed',
  ]);
  expect((await ctx.ledger.readRangeHistory(id)).map((r) => `${r.partition}:${r.from}-${r.until}`).sort()).toEqual(['0:0-30', '1:0-30']);

  // Resumed: the planner sends the open ranges again and plans the rest; every record counts once.
  const runner = createLocalRunner(
    {
      ledger: ctx.ledger,
      metadataFor: (s) => ctx.metadata.forStream(s),
      createReader: (s) => ctx.createReader(s),
      handlerFor: (s) => ctx.handlerFor(s),
    },
    [stream],
  );
  try {
    for (let i = 0; i < 30; i++) {
      await runner.planOnce();
      await runner.idle();
      const parts = await ctx.ledger.readPartitions(id);
      if (parts.every((p) => p.committed === RECORDS)) break;
    }
  } finally {
    await runner.stop();
  }
  expect((await ctx.ledger.readPartitions(id)).map((p) => p.committed)).toEqual([RECORDS, RECORDS]);
  expect(new Map(Object.entries(await scanTotals(ddb, sinkTable)))).toEqual(totalsOf(RECORDS));
});

it('finishes a migration interrupted half-way when run again', async () => {
  const other = `${id}-b`;
  const now = Date.now();
  await writeLayoutOne(now, false, other);
  // A client whose first delete request fails: the ranges' history and the entries are written, the R# items not yet deleted.
  const faulty = testDynamo();
  let failed = 0;
  faulty.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'BatchWriteItemCommand' && failed++ === 0) throw new Error('connection reset');
      return next(args);
    },
    { step: 'initialize', name: 'failFirstDelete' },
  );
  const interrupted = await createDynamoLedgerMigration({ client: faulty, tableName: ledgerTable })
    .migrate(other, now)
    .catch((e: unknown) => e);
  expect((interrupted as Error).message).toContain('connection reset');
  // Translated at the adapter's edge: one line naming the operation and the table, the SDK's failure as cause.
  expect(interrupted).toBeInstanceOf(StoreError);
  expect((interrupted as Error).message).toBe(
    `migrate the ledger layout: DynamoDB BatchWrite on table ${ledgerTable} failed: Error: connection reset`,
  );
  expect(failed).toBe(1);
  faulty.destroy();
  // Not finished: a planner is still refused (the stream's META does not name the layout yet); run again, it finishes.
  await expect(ctx.ledger.acquirePlannerLease({ stream: other, ownerToken: 'p', nowMs: now, leaseMs: 1000 })).rejects.toThrow(
    /migrate-ledger/,
  );
  expect(await ctx.ledgerMigration!.migrate(other, now + 1)).toEqual({
    stream: other,
    outcome: 'migrated',
    partitions: 2,
    liveRanges: 4,
    archivedRanges: 2,
  });
  const { ranges } = await ctx.ledger.readPartitionsAndRanges(other);
  expect(ranges.map((r) => `${r.partition}:${r.from}:${r.status}`).sort()).toEqual([
    '0:30:done',
    '0:60:planned',
    '1:30:done',
    '1:60:failed',
  ]);
  // Archived twice (once per run): read once each.
  expect((await ctx.ledger.readRangeHistory(other)).map((r) => `${r.partition}:${r.from}`).sort()).toEqual(['0:0', '1:0']);
  expect(await oldRange(0, 0, other)).toBeUndefined();
});

/** A range item of the earlier layout, as stored. */
async function oldRange(p: number, from: number, id = streamId): Promise<RangeState | undefined> {
  const res = await doc.send(new GetCommand({ TableName: ledgerTable, Key: keys.range(id, { topic, partition: p, from }) }));
  return res.Item ? codec.rangeFromItem(res.Item) : undefined;
}
