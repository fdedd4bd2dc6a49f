/** The planner Lambda handler, invoked as Lambda would, against the broker and the emulator. */
import type { Context } from 'aws-lambda';
import { handler } from '../../functions/planner';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { resetAwsRuntime } from '../../lib/runtime/aws';
import { withClockAhead } from '../support/clock-ahead';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const ddb = testDynamo();
const tableName = uniqueName('handler-ledger');
const prefix = uniqueName('h');
const admin = testKafka('handler-it').admin();
const context = { awsRequestId: 'req-1', functionName: 'planner', getRemainingTimeInMillis: () => 30_000 } as unknown as Context;
const saved = { ...process.env };

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, tableName), admin.connect()]);
  await createTopicsReady(admin, [{ topic: `${prefix}-t`, numPartitions: 2 }]);
  const streams = ['one', 'two'].map((id) => ({
    id: `${prefix}-${id}`,
    kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
    topics: [`${prefix}-t`],
  }));
  process.env.STREAMS_CONFIG = JSON.stringify({ ledgerTable: tableName, streams });
  await resetAwsRuntime();
});
afterAll(async () => {
  process.env = saved;
  await resetAwsRuntime();
  await admin.disconnect();
  ddb.destroy();
});

describe('planner handler', () => {
  const ledger = () => createDynamoLedger({ client: ddb, tableName });

  it('returns the plan of {"dryRun": true} and writes nothing', async () => {
    const res = (await handler({ dryRun: true, streams: [`${prefix}-one`] }, context)) as {
      dryRun: boolean;
      streams: Array<{ stream: string; registered: number; partitions: unknown[] }>;
    };
    expect(res.dryRun).toBe(true);
    expect(res.streams).toHaveLength(1);
    expect(res.streams[0]).toMatchObject({ stream: `${prefix}-one`, registered: 2 });
    expect(await ledger().readMeta(`${prefix}-one`)).toBeUndefined();
    expect(await ledger().readPartitions(`${prefix}-one`)).toEqual([]);
  });

  it.each([
    [{ dryRun: 'yes' }, /invalid planner payload: dryRun: .*boolean/],
    [{ dryRn: true }, /invalid planner payload: .*dryRn/],
    [{ streams: ['nope'] }, /unknown stream nope \(configured: .*-one, .*-two\)/],
    [[1, 2], /invalid planner payload/],
  ])('rejects %j with a clear error and changes nothing', async (payload, message) => {
    await expect(handler(payload, context)).rejects.toThrow(message);
    expect(await ledger().readMeta(`${prefix}-one`)).toBeUndefined();
    expect(await ledger().readMeta(`${prefix}-two`)).toBeUndefined();
  });

  it('treats an EventBridge scheduled event as the schedule: a loop over every stream, handed back when the next tick does not fit', async () => {
    process.env.PROCESSOR_FUNCTION_NAME = 'unused-no-ranges';
    const event = {
      version: '0',
      id: 'e1',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      time: new Date().toISOString(),
      detail: {},
    };
    const res = (await handler(event, context)) as {
      loop: boolean;
      streams: Array<{ stream: string; outcome: string; ticks: number; last?: { status: string; registered: number } }>;
    };
    // The default trigger interval is a minute: one tick fits in the 30 s the context gives.
    expect(res.loop).toBe(true);
    expect(res.streams.map((s) => [s.stream, s.outcome, s.ticks, s.last?.status, s.last?.registered])).toEqual([
      [`${prefix}-one`, 'time-up', 1, 'planned', 2],
      [`${prefix}-two`, 'time-up', 1, 'planned', 2],
    ]);
    expect((await ledger().readMeta(`${prefix}-one`))?.loop).toMatchObject({ nextTickDueMs: expect.any(Number) });
    expect((await ledger().readPartitions(`${prefix}-two`)).length).toBe(2);
  });

  it('a planner whose clock runs 10 minutes ahead does not take a planner lease that is still held', async () => {
    process.env.PROCESSOR_FUNCTION_NAME = 'unused-lease-held';
    const stream = `${prefix}-two`;
    const held = await ledger().acquirePlannerLease({ stream, ownerToken: 'other-planner', nowMs: Date.now(), leaseMs: 120_000 });
    expect(held.acquired).toBe(true);
    await withClockAhead(600_000, async () => {
      const res = (await handler({ streams: [stream] }, context)) as {
        streams: Array<{ stream: string; status: string; reason?: string }>;
      };
      expect(res.streams[0]).toMatchObject({
        stream,
        status: 'skipped',
        reason: expect.stringMatching(/another planner run holds the lease/),
      });
    });
    expect(await ledger().readMeta(stream)).toMatchObject({ ownerToken: 'other-planner', epoch: held.acquired ? held.epoch : -1 });
  });
});
