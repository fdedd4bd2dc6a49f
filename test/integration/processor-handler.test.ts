/** The processor Lambda handler as Lambda invokes it: validation, a planned range, and peek. */
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { handler as plannerHandler } from '../../functions/planner';
import { handler } from '../../functions/processor';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import type { Ledger, PlanWrite } from '../../lib/ports/ledger';
import type { RangeState } from '../../lib/ports/ledger-state';
import { resetAwsRuntime } from '../../lib/runtime/aws';
import { withClockAhead } from '../support/clock-ahead';
import { createSinkTable, createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const ddb = testDynamo();
const tableName = uniqueName('ph-ledger');
let sink = '';
const id = uniqueName('ph');
const topic = `${id}-t`;
const kafka = testKafka('processor-handler-it');
const admin = kafka.admin();
const producer = kafka.producer();
const context = { awsRequestId: 'req-p', functionName: 'processor', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;
const saved = { ...process.env };

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, tableName), admin.connect(), producer.connect()]);
  sink = await createSinkTable(ddb, 'ph-sink');
  await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
  await producer.send({
    topic,
    messages: [
      { key: 'a', value: JSON.stringify({ amount: 5 }), headers: { source: 'test' } },
      { key: 'b', value: Buffer.from([0xff, 0xfe, 0x00]) },
      { key: 'a', value: JSON.stringify({ amount: 7 }) },
    ],
  });
  const streams = [
    {
      id,
      kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
      topics: [topic],
      handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: sink },
    },
  ];
  process.env.STREAMS_CONFIG = JSON.stringify({ ledgerTable: tableName, streams });
  await resetAwsRuntime();
});
afterAll(async () => {
  process.env = saved;
  await resetAwsRuntime();
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
});

describe('processor handler', () => {
  it.each([
    [{ stream: id, topic, partition: 0, from: 5, until: 2 }, /until: from must be below until/],
    [{ stream: id, topic, partition: -1, from: 0, until: 2 }, /partition: .*>=0/],
    [{ stream: 'nope', topic, partition: 0, from: 0, until: 2 }, /unknown stream nope/],
    [{ stream: id, topic, partition: 0, from: 0, until: 2, extra: 1 }, /Unrecognized key: "extra"/],
    [{ peek: { topic, partition: 0 } }, /peek.offset/],
    [
      { peek: { topic: `${id}-other`, partition: 0, offset: 0 } },
      /stream .* does not consume topic .*-other \(its topics .*\): peek reads only/,
    ],
  ])('rejects %j with a clear error and changes nothing', async (payload, message) => {
    await expect(handler(payload, context)).rejects.toThrow(message);
    expect(await createDynamoLedger({ client: ddb, tableName }).readOpenRanges(id)).toEqual([]);
  });

  it('peeks records as UTF-8 or base64 without committing anything', async () => {
    const res = (await handler({ peek: { topic, partition: 0, offset: 0, count: 2 } }, context)) as {
      records: Array<Record<string, unknown>>;
    };
    expect(res.records).toEqual([
      expect.objectContaining({
        offset: 0,
        key: 'a',
        value: '{"amount":5}',
        valueEncoding: 'utf8',
        headers: [{ key: 'source', value: 'test', valueEncoding: 'utf8' }],
      }),
      expect.objectContaining({ offset: 1, key: 'b', value: Buffer.from([0xff, 0xfe, 0x00]).toString('base64'), valueEncoding: 'base64' }),
    ]);
    expect(await createDynamoLedger({ client: ddb, tableName }).readPartitions(id)).toEqual([]);
  });

  it('processes a range the planner planned; a poison record is dead-lettered', async () => {
    process.env.PROCESSOR_FUNCTION_NAME = 'unused';
    const ledger = createDynamoLedger({ client: ddb, tableName });
    // Plan without dispatching to Lambda: a dry run shows the range, a real run needs a dispatcher.
    const dry = (await plannerHandler({ dryRun: true }, context)) as { streams: Array<{ rangesPlanned: number }> };
    expect(dry.streams[0]?.rangesPlanned).toBe(1);
    await planRange(ledger, { partition: 0, from: 0, until: 3 });
    const debug = jest.spyOn(Logger.prototype, 'debug');
    let res: { status: string; records: number; deadLetters: number };
    let logged: unknown[][];
    try {
      res = (await handler({ stream: id, topic, partition: 0, from: 0, until: 3 }, context)) as typeof res;
    } finally {
      logged = [...debug.mock.calls];
      debug.mockRestore();
    }
    expect(res).toMatchObject({ status: 'done', records: 2, deadLetters: 1 });
    // Its DEBUG line says what checked the batches' CRC-32C: the CPU's instructions, here.
    expect(logged).toContainEqual([
      'ranges processed',
      expect.objectContaining({ stream: id, ranges: expect.stringContaining('done'), crc32c: 'native' }),
    ]);
    const [dl] = await ledger.listDeadLetters(id);
    expect(dl).toMatchObject({ offset: 1, error: expect.stringMatching(/value is not JSON/) });
    // Dead letters are data too: they carry the table's TTL attribute (default retention 14 days).
    const raw = await DynamoDBDocumentClient.from(ddb).send(
      new GetCommand({ TableName: tableName, Key: { pk: `S#${id}`, sk: `D#${topic}#000000#${'1'.padStart(16, '0')}` } }),
    );
    expect(raw.Item?.expiresAt).toBe(Math.ceil((dl!.createdAtMs + 14 * 86_400_000) / 1000));
    expect(dl).toMatchObject({ kept: 'record', expiresAtMs: raw.Item!.expiresAt * 1000 });
    expect((await ledger.readPartition(id, topic, 0))?.committed).toBe(3);
  });

  it("stops reading by the stream's processor.timeoutMs, however long the function may still run, and gives the range back", async () => {
    const ledger = createDynamoLedger({ client: ddb, tableName });
    const stream = `${id}-short`;
    // The same topic with a processor timeout far below the function's.
    const config = process.env.STREAMS_CONFIG;
    const brokers = process.env.KAFKA_BROKERS!.split(',');
    const short = {
      id: stream,
      kafka: { brokers },
      topics: [topic],
      handler: { module: 'noop', mode: 'at-least-once' },
      processor: { timeoutMs: 1000 },
    };
    process.env.STREAMS_CONFIG = JSON.stringify({ ledgerTable: tableName, streams: [short] });
    await resetAwsRuntime();
    try {
      await planRange(ledger, { partition: 0, from: 0, until: 3 }, { stream });
      // 60 s left in the function, 1 s of processor.timeoutMs: the deadline is 0.8 s away, too close to read a chunk.
      const res = (await handler({ stream, topic, partition: 0, from: 0, until: 3 }, context)) as { status: string; records: number };
      expect(res).toMatchObject({ records: 0 });
      expect(res.status).not.toBe('done');
      expect(await ledger.readRange(stream, { topic, partition: 0, from: 0 })).toMatchObject({ progress: 0 });
    } finally {
      process.env.STREAMS_CONFIG = config;
      await resetAwsRuntime();
    }
  });

  it('refuses a forged payload (planned from, wrong until) before touching anything: a full table scan is unchanged', async () => {
    const ledger = createDynamoLedger({ client: ddb, tableName });
    const { range: planned } = await planRange(ledger, { partition: 0, from: 3, until: 6, progress: 3 }, { register: false });
    const doc = DynamoDBDocumentClient.from(ddb);
    const scan = async () => {
      const items: Record<string, unknown>[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(new ScanCommand({ TableName: tableName, ConsistentRead: true, ExclusiveStartKey: start }));
        items.push(...(page.Items ?? []));
        start = page.LastEvaluatedKey;
      } while (start);
      return items.sort((a, b) => `${a.pk}|${a.sk}`.localeCompare(`${b.pk}|${b.sk}`));
    };
    const before = await scan();
    // More forgeries than maxAttempts (3): not one of them may count as an attempt.
    for (const until of [4, 5, 7, 1000]) {
      await expect(handler({ stream: id, topic, partition: 0, from: 3, until }, context)).rejects.toThrow(
        /until=\d+ does not match the ledger's range .*\[3, 6\); nothing was changed/,
      );
    }
    // A `from` that starts no range, or a topic the ledger does not know: no such range, nothing written.
    expect(await handler({ stream: id, topic, partition: 0, from: 4, until: 6 }, context)).toMatchObject({ status: 'unknown-range' });
    expect(await handler({ stream: id, topic: `${topic}-other`, partition: 0, from: 3, until: 6 }, context)).toMatchObject({
      status: 'unknown-range',
    });
    expect(await scan()).toEqual(before);
    expect(await ledger.readRange(id, planned)).toMatchObject({ status: 'planned', attempts: 0 });
    expect(before.length).toBeGreaterThan(3);
  });

  it('a processor container whose clock runs 10 minutes ahead does not take a range lease that is still held', async () => {
    const ledger = createDynamoLedger({ client: ddb, tableName });
    // A partition of its own (the ledger only: a lease holder is refused before anything is read).
    const range = { stream: id, topic, partition: 7, from: 0, until: 3 };
    const { epoch } = await planRange(ledger, range);
    await ledger.releasePlannerLease({ stream: id, epoch, ownerToken: 't' });
    const taken = await ledger.takeRangeLease({ ...range, leaseToken: 'holder', nowMs: Date.now(), leaseMs: 120_000, maxAttempts: 3 });
    expect(taken.kind).toBe('taken');
    await withClockAhead(600_000, async () => {
      expect(await handler(range, context)).toMatchObject({ status: 'held-elsewhere', records: 0 });
    });
    expect(await ledger.readRange(id, range)).toMatchObject({ status: 'leased', leaseToken: 'holder', attempts: 1 });
  });
});

/**
 * Plans one range of `topic` under a planner lease of owner `t` (kept, not released), registering
 * its partition first unless `register` is false; returns the planner epoch and the planned range.
 */
async function planRange(
  ledger: Ledger,
  r: { partition: number; from: number; until: number; progress?: number },
  { register = true, stream = id } = {},
): Promise<{ epoch: number; range: RangeState }> {
  const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 't', nowMs: Date.now(), leaseMs: 1000 });
  if (!lease.acquired) throw new Error('lease');
  const { partition, from, until, progress = 0 } = r;
  const range: RangeState = {
    stream,
    topic,
    partition,
    from,
    until,
    status: 'planned',
    epoch: lease.epoch,
    plannedAtMs: Date.now(),
    dispatches: 1,
    attempts: 0,
    progress,
  };
  const registration: PlanWrite = {
    kind: 'register-partition',
    partition: { stream, topic, partition, status: 'active', startOffset: 0, committed: 0, nextFrom: 0, firstSeenAtMs: 0 },
  };
  const plan: PlanWrite = { kind: 'plan-range', range };
  await ledger.applyPlan({ stream, epoch: lease.epoch, ownerToken: 't', writes: register ? [registration, plan] : [plan] });
  return { epoch: lease.epoch, range };
}
