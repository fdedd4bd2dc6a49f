/**
 * Planner + processor on the real broker and the emulator: exactly-once running totals into a
 * DynamoDB sink table, duplicate invocations, a crash between handler and commit, transactions with
 * aborted records, a compacted topic, and the optional consumer-group commit.
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { parseStreamConfig, type StreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { createAuditLog } from '../../lib/handlers/audit-log';
import { runningTotals } from '../../lib/handlers/running-totals';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { createDynamoStoreClock } from '../../lib/ledger/clock.dynamodb';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { planStream } from '../../lib/planner/run';
import { processRange, type ProcessorDeps } from '../../lib/processor/process-range';
import type { RangePayload } from '../../lib/ranges';
import { createSinkTable, createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

const ddb = testDynamo();
const ledgerTable = uniqueName('proc-ledger');
const kafka = testKafka('processor-it');
const admin = kafka.admin();
const producer = kafka.producer();
const metadata = createMetadataCache();
const reader = createKafkajsRangeReader(kafka);
const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect(), producer.connect()]);
});
afterAll(async () => {
  await Promise.all([metadata.closeAll(), reader.close(), admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
});

const sinkTable = () => createSinkTable(ddb, 'totals');

async function totalsIn(table: string): Promise<Record<string, { total: number; count: number }>> {
  const res = await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
  return Object.fromEntries(
    (res.Items ?? []).map((i) => unmarshall(i)).map((i) => [i.pk as string, { total: i.total as number, count: i.count as number }]),
  );
}

function expectedTotals(values: Array<{ key: string; amount: number }>): Record<string, { total: number; count: number }> {
  const out: Record<string, { total: number; count: number }> = {};
  for (const v of values) {
    const e = (out[v.key] ??= { total: 0, count: 0 });
    e.total += v.amount;
    e.count += 1;
  }
  return out;
}

async function setup(over: Partial<StreamConfigInput> = {}, partitions = 2) {
  const id = uniqueName('p');
  const topic = `${id}-events`;
  const table = await sinkTable();
  await createTopicsReady(admin, [{ topic, numPartitions: partitions, ...(over as { configEntries?: [] }) }]);
  const stream: StreamConfig = parseStreamConfig(
    {
      id,
      kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
      topics: [topic],
      handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: table },
      ...over,
    },
    'test',
  );
  const dispatcher = createRecordingDispatcher();
  const plan = () =>
    planStream({ ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 60_000 }, stream, {
      dryRun: false,
      nowMs: Date.now(),
    });
  const deps: ProcessorDeps = { ledger, readerFor: async () => reader, handlerFor: () => runningTotals, maxChunkRecords: 50 };
  const processOne = (range: RangePayload, extra: Partial<ProcessorDeps> = {}) =>
    processRange({ ...deps, ...extra }, { stream, range, deadlineAtMs: Date.now() + 120_000 });
  return { id, topic, table, stream, dispatcher, plan, process: processOne };
}

async function produceAmounts(topic: string, n: number, partitions = 2): Promise<Array<{ key: string; amount: number }>> {
  const values = Array.from({ length: n }, (_, i) => ({ key: `acct-${i % 7}`, amount: i + 1, partition: i % partitions }));
  await producer.send({
    topic,
    messages: values.map((v) => ({ key: v.key, value: JSON.stringify({ amount: v.amount }), partition: v.partition })),
  });
  return values;
}

/** The offsets of [0, until) of partition 0 still in the log, once the cleaner has removed some (within 30 s). */
async function compactedOffsets(topic: string, until: number): Promise<number[]> {
  const present = async (): Promise<number[]> => {
    const offsets: number[] = [];
    for await (const chunk of reader.read({ topic, partition: 0, from: 0, until, isolationLevel: 'read_uncommitted' }))
      offsets.push(...chunk.records.map((r) => r.offset));
    return offsets;
  };
  return waitFor(`the cleaner to remove offsets of ${topic}`, present, {
    until: (offsets) => offsets.length < until,
    timeoutMs: 30_000,
    intervalMs: 300,
  });
}

describe('processor on the real broker and emulator', () => {
  it('applies every produced record exactly once into the sink table', async () => {
    const t = await setup();
    const values = await produceAmounts(t.topic, 500);
    await t.plan();
    expect(t.dispatcher.dispatched).toHaveLength(2);
    for (const r of t.dispatcher.dispatched) expect((await t.process(r)).status).toBe('done');
    expect(await totalsIn(t.table)).toEqual(expectedTotals(values));
    const parts = await ledger.readPartitions(t.id);
    expect(parts.map((p) => p.committed).reduce((a, b) => a + b, 0)).toBe(500);
    // Everything is done: another invocation of a finished range changes nothing.
    expect((await t.process(t.dispatcher.dispatched[0]!)).status).toBe('already-done');
    expect(await totalsIn(t.table)).toEqual(expectedTotals(values));
  });

  it('gives exactly one application when the same range is invoked twice at once', async () => {
    const t = await setup({}, 1);
    const values = await produceAmounts(t.topic, 300, 1);
    await t.plan();
    const [range] = t.dispatcher.dispatched;
    const results = await Promise.all([t.process(range!, { leaseToken: 'a' }), t.process(range!, { leaseToken: 'b' })]);
    expect(results.map((r) => r.status).sort()).toEqual(['done', 'held-elsewhere']);
    expect(await totalsIn(t.table)).toEqual(expectedTotals(values));
  });

  it('applies each record once after a crash between the handler and the commit and a retry', async () => {
    const t = await setup({}, 1);
    const values = await produceAmounts(t.topic, 200, 1);
    await t.plan();
    const [range] = t.dispatcher.dispatched;
    let handled = 0;
    await expect(
      t.process(range!, {
        // running-totals folds: batches of 50 records commit as 50-record chunks would.
        fold: { maxRecords: 50 },
        afterStep: (step) => {
          if (step === 'handled' && ++handled === 3) throw new Error('crash between handler and commit');
        },
      }),
    ).rejects.toThrow('crash between handler and commit');
    const partial = await totalsIn(t.table);
    expect(Object.values(partial).reduce((s, v) => s + v.count, 0)).toBe(100); // two chunks of 50 committed
    const retry = await t.process(range!);
    expect(retry).toMatchObject({ status: 'done', records: 100 });
    expect(await totalsIn(t.table)).toEqual(expectedTotals(values));
  });

  it('delivers exactly the committed records of interleaved transactions under read_committed', async () => {
    const t = await setup({ isolationLevel: 'read_committed' }, 1);
    const committed: Array<{ key: string; amount: number }> = [];
    const producers = await Promise.all(
      ['tx-a', 'tx-b'].map(async (id) => {
        const p = kafka.producer({ transactionalId: `${t.id}-${id}`, idempotent: true, maxInFlightRequests: 1 });
        await p.connect();
        return p;
      }),
    );
    try {
      for (let round = 0; round < 4; round++) {
        const [a, b] = await Promise.all(producers.map((p) => p.transaction()));
        const va = { key: 'acct-a', amount: 10 + round };
        const vb = { key: 'acct-b', amount: 1000 + round };
        await a!.send({ topic: t.topic, messages: [{ key: va.key, value: JSON.stringify({ amount: va.amount }), partition: 0 }] });
        await b!.send({ topic: t.topic, messages: [{ key: vb.key, value: JSON.stringify({ amount: vb.amount }), partition: 0 }] });
        await a!.send({ topic: t.topic, messages: [{ key: va.key, value: JSON.stringify({ amount: va.amount }), partition: 0 }] });
        // Interleaved: a commits on even rounds and aborts on odd ones, b the other way round.
        if (round % 2 === 0) {
          await a!.commit();
          await b!.abort();
          committed.push(va, va);
        } else {
          await b!.commit();
          await a!.abort();
          committed.push(vb);
        }
      }
    } finally {
      await Promise.all(producers.map((p) => p.disconnect()));
    }
    // Markers are written just after commit()/abort() return; wait until the stable offset covers them.
    const stable = async () => {
      const [o] = await (await metadata.forStream(t.stream)).fetchOffsets([{ topic: t.topic, partitions: [0] }], 'read_committed');
      return o?.latest;
    };
    await waitFor('the last stable offset to cover the 20 records and markers', stable, {
      until: (latest) => latest !== undefined && latest >= 20,
      timeoutMs: 10_000,
    });
    await t.plan();
    const [range] = t.dispatcher.dispatched;
    const res = await t.process(range!);
    expect(res.status).toBe('done');
    expect(res.records).toBe(committed.length);
    expect(await totalsIn(t.table)).toEqual(expectedTotals(committed));
  });

  it('completes a range over a compacted topic with offset gaps', async () => {
    const t = await setup({}, 1);
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: 2, // TOPIC
          name: t.topic,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'segment.ms', value: '100' },
            { name: 'min.cleanable.dirty.ratio', value: '0.01' },
            { name: 'delete.retention.ms', value: '100' },
          ],
        },
      ],
    });
    for (let round = 0; round < 5; round++) {
      await producer.send({
        topic: t.topic,
        messages: Array.from({ length: 40 }, (_, i) => ({ key: `acct-${i % 4}`, value: JSON.stringify({ amount: 1 }), partition: 0 })),
      });
      await new Promise((r) => setTimeout(r, 150)); // past segment.ms: the next round rolls a segment (time is what rolls it)
    }
    // Roll the last segment, then wait until the cleaner has really removed offsets (bounded).
    await producer.send({ topic: t.topic, messages: [{ key: 'acct-0', value: JSON.stringify({ amount: 1 }), partition: 0 }] });
    const left = await compactedOffsets(t.topic, 201);
    expect(left.length).toBeLessThan(201);
    await t.plan();
    const [range] = t.dispatcher.dispatched;
    expect(range).toMatchObject({ from: 0, until: 201 });
    const res = await t.process(range!);
    expect(res.status).toBe('done');
    expect(res.progress).toBe(201);
    // The range read had gaps: fewer records than offsets, no more than the cleaner had left.
    expect(res.records).toBeLessThan(201);
    expect(res.records).toBeLessThanOrEqual(left.length);
    expect(res.records).toBeGreaterThanOrEqual(4);
  });

  it('at-least-once: a crash after the handler redelivers the chunk; nothing is lost and duplicates are counted', async () => {
    // Progress committed every 50 records (one chunk), so the crash after the second commit redelivers one chunk.
    const t = await setup({ handler: { module: 'audit-log', mode: 'at-least-once' }, processor: { commitEveryRecords: 50 } }, 1);
    const audit = await createSinkTable(ddb, 'audit');
    const handler = createAuditLog({ tableName: audit, client: ddb });
    await produceAmounts(t.topic, 120, 1);
    await t.plan();
    const [range] = t.dispatcher.dispatched;
    let handled = 0;
    await expect(
      t.process(range!, {
        handlerFor: () => handler,
        afterStep: (step) => {
          // 'handled' fires before the handler runs; crash after the second chunk's side effects.
          if (step === 'committed' && ++handled === 2) throw new Error('crash after commit of chunk 2');
        },
      }),
    ).rejects.toThrow('crash after commit of chunk 2');
    let failHandlerOnce = true;
    const flaky = {
      ...handler,
      async handle(records: Parameters<typeof handler.handle>[0], ctx: Parameters<typeof handler.handle>[1]) {
        await handler.handle(records, ctx);
        if (failHandlerOnce) {
          failHandlerOnce = false;
          throw new Error('side effects done, then the handler failed');
        }
      },
    };
    const res = await t.process(range!, { handlerFor: () => flaky });
    expect(res.status).toBe('done');
    const items = await ddb.send(new ScanCommand({ TableName: audit, ConsistentRead: true }));
    expect(items.Count).toBe(120); // every record once in the audit table
    expect(handler.duplicates()).toBeGreaterThan(0); // the redelivered chunk was seen again and counted
  });

  it('skewed clock: a processor whose clock runs ahead by more than leaseMs cannot take a held lease; no record is handed twice', async () => {
    const t = await setup(
      { handler: { module: 'audit-log', mode: 'at-least-once' }, processor: { timeoutMs: 20_000, leaseMs: 30_000 } },
      1,
    );
    await produceAmounts(t.topic, 50, 1);
    await t.plan();
    const [range] = t.dispatcher.dispatched;
    const skewMs = 3 * t.stream.processor.leaseMs;
    const handed: number[] = [];
    const counting = {
      mode: 'at-least-once' as const,
      handle: async (records: Array<{ offset: number }>) => void handed.push(...records.map((r) => r.offset)),
    };
    // The skewed processor has its own client, clock and store clock, as another Lambda container would.
    const ddbAhead = testDynamo();
    const aheadClock = () => Date.now() + skewMs;
    const ahead = {
      ledger: createDynamoLedger({ client: ddbAhead, tableName: ledgerTable }),
      clock: aheadClock,
      storeClock: createDynamoStoreClock({ client: ddbAhead, tableName: ledgerTable, localClock: aheadClock }),
      handlerFor: () => counting,
    };
    let second: Awaited<ReturnType<typeof t.process>> | undefined;
    let leaseSeen: number | undefined;
    const first = await t.process(range!, {
      storeClock: createDynamoStoreClock({ client: ddb, tableName: ledgerTable }),
      handlerFor: () => counting,
      afterStep: async (step) => {
        if (step !== 'handled' || second) return;
        // Mid-range, lease held: the processor running ahead is invoked for the same range.
        leaseSeen = (await ledger.readRange(t.id, range!))?.leaseExpiresAtMs;
        second = await processRange(
          { ...ahead, readerFor: async () => reader },
          { stream: t.stream, range: range!, deadlineAtMs: aheadClock() + 120_000 },
        );
      },
    });
    ddbAhead.destroy();
    expect(first.status).toBe('done');
    expect(second?.status).toBe('held-elsewhere');
    // By its own clock the lease had long expired: only the store clock kept it out.
    expect(leaseSeen!).toBeLessThan(aheadClock());
    expect(handed.length).toBe(50);
    expect(new Set(handed).size).toBe(50);
    expect((await ledger.readRange(t.id, range!))?.attempts).toBe(1);
  });

  it('also commits the finished offset to a member-less consumer group when configured', async () => {
    const t = await setup({ consumerGroup: `${uniqueName('grp')}` }, 1);
    await produceAmounts(t.topic, 30, 1);
    await t.plan();
    const group = t.stream.consumerGroup!;
    const commitGroupOffset = (g: string, topic: string, partition: number, offset: number) =>
      admin.setOffsets({ groupId: g, topic, partitions: [{ partition, offset: String(offset) }] });
    expect((await t.process(t.dispatcher.dispatched[0]!, { commitGroupOffset })).status).toBe('done');
    const offsets = await admin.fetchOffsets({ groupId: group, topics: [t.topic] });
    expect(offsets[0]?.partitions).toEqual([expect.objectContaining({ partition: 0, offset: '30' })]);
  });
});
