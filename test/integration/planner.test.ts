/**
 * The planner against the real broker and the DynamoDB emulator: discovery while the stream runs,
 * retirement, two planners at once (I5), crash recovery, and the concurrency cap.
 */
import { parseStreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { planStream, type PlannerDeps } from '../../lib/planner/run';
import type { RangePayload } from '../../lib/ranges';
import { countRequests } from '../support/dynamo-requests';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const ddb = testDynamo();
/** Requests sent through `ddb` (tests run one at a time, so a difference is one ledger's). */
const ddbRequests = countRequests(ddb);
const tableName = uniqueName('planner-ledger');
const kafka = testKafka('planner-it');
const admin = kafka.admin();
const producer = kafka.producer();
const metadata = createMetadataCache();

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, tableName), admin.connect(), producer.connect()]);
});
afterAll(async () => {
  await Promise.all([metadata.closeAll(), admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
});

function setup(over: Partial<StreamConfigInput> = {}) {
  const prefix = uniqueName('plan');
  const stream = parseStreamConfig(
    {
      id: prefix,
      kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
      topicPattern: `${prefix}-.*`,
      triggerIntervalMs: 10_000,
      ...over,
    },
    'test',
  );
  const ledger = Object.assign(createDynamoLedger({ client: ddb, tableName }), { requestCount: ddbRequests });
  const dispatcher = createRecordingDispatcher();
  const deps: PlannerDeps = { ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 60_000 };
  let now = Date.now();
  const run = (extra: Partial<PlannerDeps> = {}) => {
    now += 10_000;
    return planStream({ ...deps, ...extra }, stream, { dryRun: false, nowMs: now });
  };
  const produce = (topic: string, partition: number, n: number) =>
    producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ value: `v${i}`, partition })) });
  const createTopic = (topic: string, numPartitions: number) => createTopicsReady(admin, [{ topic, numPartitions }]);
  return { prefix, stream, ledger, dispatcher, deps, run, produce, createTopic, at: () => now };
}

describe('planner on the real broker and emulator', () => {
  it('plans a partition added with createPartitions from offset 0, and a new matching topic', async () => {
    const t = setup();
    const topic = `${t.prefix}-a`;
    await t.createTopic(topic, 2);
    await t.produce(topic, 0, 30);
    const first = await t.run();
    expect(first).toMatchObject({ status: 'planned', registered: 2, rangesPlanned: 1, recordsPlanned: 30 });

    await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
    // kafkajs 2.2.4's producer drops messages for a partition missing from its cached metadata
    // without an error; a fresh producer fetches metadata that includes the new partition.
    const fresh = kafka.producer();
    await fresh.connect();
    await fresh.send({ topic, messages: Array.from({ length: 12 }, (_, i) => ({ value: `n${i}`, partition: 2 })) });
    await fresh.disconnect();
    expect((await admin.fetchTopicOffsets(topic)).find((o) => o.partition === 2)?.high).toBe('12');
    const later = `${t.prefix}-b`;
    await t.createTopic(later, 1);
    await t.produce(later, 0, 5);
    const second = await t.run();
    expect(second.registered).toBe(2);
    expect(t.dispatcher.dispatched).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ stream: t.prefix, topic, partition: 2, from: 0, until: 12 }),
        expect.objectContaining({ stream: t.prefix, topic: later, partition: 0, from: 0, until: 5 }),
      ]),
    );
    const parts = await t.ledger.readPartitions(t.prefix);
    expect(parts.map((p) => `${p.topic}/${p.partition}@${p.startOffset}`).sort()).toEqual(
      [`${topic}/0@0`, `${topic}/1@0`, `${topic}/2@0`, `${later}/0@0`].sort(),
    );
  });

  it('retires the partitions of a deleted topic with a reason', async () => {
    const t = setup();
    const topic = `${t.prefix}-gone`;
    await t.createTopic(topic, 2);
    await t.run();
    await admin.deleteTopics({ topics: [topic] });
    const rep = await t.run();
    expect(rep.retired).toBe(2);
    const parts = await t.ledger.readPartitions(t.prefix);
    expect(parts.map((p) => p.status)).toEqual(['retired', 'retired']);
    expect(parts[0]?.reason).toMatch(/^TOPIC_DELETED/);
  });

  it('a topic discovered this run whose offsets cannot be read (gone by then) is reported, not a failed run', async () => {
    const t = setup();
    const topic = `${t.prefix}-brief`;
    await t.createTopic(topic, 2);
    // Discovery sees the topic; it is gone before its offsets are read: the broker answers the
    // ListOffsets and the refreshed metadata as it does for a topic it has not caught up with yet.
    const between = async (s: Parameters<PlannerDeps['metadataFor']>[0]) => {
      const m = await metadata.forStream(s);
      return {
        ...m,
        async describeTopics(selector: Parameters<typeof m.describeTopics>[0]) {
          const found = await m.describeTopics(selector);
          await admin.deleteTopics({ topics: [topic] });
          return found;
        },
      };
    };
    const rep = await t.run({ metadataFor: between });
    expect(rep).toMatchObject({ status: 'planned', registered: 0, rangesPlanned: 0 });
    expect(rep.partitions.map((p) => [p.partition, p.action, p.note])).toEqual([
      [0, 'no-offsets', expect.stringMatching(/offsets unavailable this run: .*does not exist|not host/)],
      [1, 'no-offsets', expect.stringMatching(/offsets unavailable this run/)],
    ]);
    expect(await t.ledger.readPartitions(t.prefix)).toEqual([]);
  });

  it('plans topics that match the pattern the moment they are created: no failed run, each registered once ready', async () => {
    const t = setup();
    const names = Array.from({ length: 5 }, (_, i) => `${t.prefix}-new${i}`);
    const reports: Array<{ status: string; reason?: string }> = [];
    let creating = true;
    // Planner runs back to back while the topics are created one after the other.
    const planning = (async () => {
      for (let i = 0; i < 400 && (creating || reports.length < 3); i++) reports.push(await t.run());
    })();
    for (const topic of names) await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: false });
    for (const topic of names) await t.createTopic(topic, 3); // exist already: only waits for their leaders
    creating = false;
    await planning;
    for (let i = 0; i < 20 && (await t.ledger.readPartitions(t.prefix)).length < 15; i++) reports.push(await t.run());
    expect(reports.filter((r) => r.status !== 'planned')).toEqual([]);
    const parts = await t.ledger.readPartitions(t.prefix);
    expect(parts.map((p) => `${p.topic}/${p.partition}`).sort()).toEqual(names.flatMap((n) => [0, 1, 2].map((p) => `${n}/${p}`)).sort());
    expect(parts.every((p) => p.status === 'active' && p.startOffset === 0)).toBe(true);
  });

  it('lets exactly one of two planners started at the same instant plan (I5)', async () => {
    const t = setup();
    const topic = `${t.prefix}-race`;
    await t.createTopic(topic, 4);
    for (let p = 0; p < 4; p++) await t.produce(topic, p, 10 + p);
    const nowMs = Date.now();
    const [a, b] = await Promise.all([
      planStream({ ...t.deps, ownerToken: 'planner-a' }, t.stream, { dryRun: false, nowMs }),
      planStream({ ...t.deps, ownerToken: 'planner-b' }, t.stream, { dryRun: false, nowMs }),
    ]);
    expect([a.status, b.status].sort()).toEqual(['planned', 'skipped']);
    expect(t.dispatcher.dispatched).toHaveLength(4);
    const open = await t.ledger.readOpenRanges(t.prefix);
    expect(open.map((r) => [r.partition, r.from, r.until]).sort()).toEqual([
      [0, 0, 10],
      [1, 0, 11],
      [2, 0, 12],
      [3, 0, 13],
    ]);
  });

  it('completes after a crash between persisting and dispatching', async () => {
    const t = setup();
    const topic = `${t.prefix}-crash`;
    await t.createTopic(topic, 2);
    await t.produce(topic, 0, 7);
    await t.produce(topic, 1, 9);
    await expect(
      t.run({
        afterStep: (step) => {
          if (step === 'persisted') throw new Error('planner killed');
        },
      }),
    ).rejects.toThrow('planner killed');
    expect(t.dispatcher.dispatched).toHaveLength(0);
    // Persisted as sent, by a run that never confirmed its dispatches.
    const orphaned = await t.ledger.readOpenRanges(t.prefix);
    expect(orphaned.map((r) => [r.status, r.dispatches, r.dispatchedAtMs !== undefined])).toEqual([
      ['planned', 1, true],
      ['planned', 1, true],
    ]);
    expect((await t.ledger.readMeta(t.prefix))?.confirmedEpoch).toBeUndefined();

    const rep = await t.run();
    expect(rep).toMatchObject({ rangesPlanned: 0, redispatched: 2 });
    expect(t.dispatcher.dispatched.map((r) => [r.partition, r.from, r.until]).sort()).toEqual([
      [0, 0, 7],
      [1, 0, 9],
    ]);
    const open = await t.ledger.readOpenRanges(t.prefix);
    expect(open.every((r) => r.dispatches === 2)).toBe(true);
    expect((await t.ledger.readMeta(t.prefix))?.confirmedEpoch).toBe(rep.epoch);
    // Confirmed now: the next run sends nothing again.
    expect(await t.run()).toMatchObject({ rangesPlanned: 0, redispatched: 0 });
  });

  it('keeps a stream with maxConcurrency 2 at two open ranges over its six partitions, and drains them all', async () => {
    // 1 record/s x 10 s: ranges of 10 offsets, two per partition.
    const t = setup({ maxConcurrency: 2, maxRatePerPartition: 1 });
    const topic = `${t.prefix}-capped`;
    await t.createTopic(topic, 6);
    for (let p = 0; p < 6; p++) await t.produce(topic, p, 15);
    /** A processor: takes the range's lease and finishes it, as process-range does. */
    const finish = async (r: RangePayload) => {
      const leaseToken = `proc-${r.partition}-${r.from}`;
      const lease = await t.ledger.takeRangeLease({ ...r, leaseToken, nowMs: t.at(), leaseMs: t.stream.processor.leaseMs, maxAttempts: 3 });
      expect(lease.kind).toBe('taken');
      const stats = { records: r.until - r.from, processingMs: 5, schedulingDelayMs: 5, finishedAtMs: t.at() };
      await t.ledger.completeRange({ range: { ...r, leaseToken }, expectProgress: r.from, nowMs: t.at(), stats, advancePartition: true });
    };
    const open = async () =>
      (await t.ledger.readOpenRanges(t.prefix)).map((x) => ({
        r: { stream: x.stream, topic: x.topic, partition: x.partition, from: x.from, until: x.until } as RangePayload,
      }));

    const first = await t.run();
    expect(first).toMatchObject({ status: 'planned', registered: 6, rangesPlanned: 2 });
    expect(first.partitions.filter((p) => p.action === 'waiting-for-concurrency')).toHaveLength(4);
    let runs = 1;
    for (let busy = await open(); busy.length; busy = await open()) {
      expect(busy.length).toBeLessThanOrEqual(2);
      // One processor finishes between two planner runs.
      await finish(busy[0]!.r);
      expect(await t.run()).toMatchObject({ status: 'planned', dispatchFailures: [] });
      expect(++runs).toBeLessThan(30);
    }
    expect(t.dispatcher.dispatched).toHaveLength(12);
    const parts = await t.ledger.readPartitions(t.prefix);
    expect(parts.map((p) => [p.partition, p.committed, p.nextFrom])).toEqual([0, 1, 2, 3, 4, 5].map((p) => [p, 15, 15]));
  });

  it('makes no per-partition writes in an idle run', async () => {
    const t = setup();
    for (let i = 0; i < 3; i++) await t.createTopic(`${t.prefix}-idle${i}`, 4);
    await t.run();
    const before = t.ledger.requestCount();
    const idle = await t.run();
    expect(idle.rangesPlanned).toBe(0);
    // the stream's meta (read before Kafka is asked) + lease + one page of partitions + one of their
    // group items (their offsets and ranges) + release
    expect(t.ledger.requestCount() - before).toBe(5);
  });
});
