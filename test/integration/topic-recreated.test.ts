/**
 * Topics deleted and re-created under the same name, on the real broker and the emulator, with the
 * planner and the processor: in each ordering every record of the new topic is read exactly once,
 * and the old incarnation is closed with a record of what it had reached.
 */
import { parseStreamConfig, type StreamConfig } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { createKafkajsMetadata } from '../../lib/kafka/metadata.kafkajs';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { NO_TOPIC_IDS, planStream, type StreamPlanReport } from '../../lib/planner/run';
import type { HandlerRecord, RecordsHandler } from '../../lib/processor/handler-api';
import { processRange, type ProcessorDeps } from '../../lib/processor/process-range';
import type { RangePayload } from '../../lib/ranges';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

const ddb = testDynamo();
const ledgerTable = uniqueName('recreate-ledger');
const kafka = testKafka('recreate-it');
const admin = kafka.admin();
const metadata = createMetadataCache();
const probe = createKafkajsMetadata(kafka);
const reader = createKafkajsRangeReader(kafka);
const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect()]);
});
afterAll(async () => {
  await Promise.all([metadata.closeAll(), probe.close(), reader.close(), admin.disconnect()]);
  ddb.destroy();
});

/** Produces `n` values `<tag>-<i>` with a fresh producer (a cached one would keep the deleted topic's metadata). */
async function produce(topic: string, tag: string, n: number): Promise<void> {
  if (n === 0) return;
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ value: `${tag}-${i}`, partition: 0 })) });
  } finally {
    await producer.disconnect();
  }
}

/** Deletes the topic and waits until metadata no longer lists it (deletion is asynchronous on the broker). */
async function deleteTopic(topic: string): Promise<void> {
  await admin.deleteTopics({ topics: [topic] });
  await waitFor(`${topic} gone from metadata after its deletion`, () => probe.describeTopics({ topics: [topic] }), {
    until: (listed) => listed.length === 0,
    timeoutMs: 30_000,
    intervalMs: 200,
  });
}

/** Creates the topic again once the broker has let go of the old one. */
async function createTopic(topic: string): Promise<void> {
  // Retried while it throws (the name is still taken) or metadata does not list the new topic yet.
  const created = async () => {
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    return (await probe.describeTopics({ topics: [topic] })).length > 0;
  };
  await waitFor(`${topic} to be created again`, created, { timeoutMs: 60_000, intervalMs: 200 });
}

/** Planner metadata without topic ids (kafkajs's Metadata v6), as against a broker before 2.8. */
const noIds = createKafkajsMetadata(kafka, { topicIds: false });
afterAll(() => noIds.close());

function setup(opts: { topicIds?: boolean } = {}) {
  const id = uniqueName('rc');
  const topic = `${id}-t`;
  const stream: StreamConfig = parseStreamConfig(
    { id, kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') }, topics: [topic], triggerIntervalMs: 10_000 },
    'test',
  );
  const dispatcher = createRecordingDispatcher();
  const seen: string[] = [];
  const keys = new Set<string>();
  const handler: RecordsHandler = {
    mode: 'at-least-once',
    handle: (records: HandlerRecord[]) => {
      seen.push(...records.map((r) => r.value?.toString() ?? ''));
      for (const r of records) keys.add(r.idempotencyKey);
    },
  };
  const deps: ProcessorDeps = { ledger, readerFor: async () => reader, handlerFor: () => handler };
  let now = Date.now();
  const plan = (): Promise<StreamPlanReport> =>
    planStream(
      { ledger, dispatcher, metadataFor: async (s) => (opts.topicIds === false ? noIds : metadata.forStream(s)), plannerLeaseMs: 60_000 },
      stream,
      { dryRun: false, nowMs: (now += 10_000) },
    );
  const processOne = (range: RangePayload) => processRange(deps, { stream, range, deadlineAtMs: Date.now() + 120_000 });
  /** Planner runs and processors until a run plans nothing; returns the reports. */
  const pump = async (): Promise<StreamPlanReport[]> => {
    const reports: StreamPlanReport[] = [];
    for (let i = 0; i < 10; i++) {
      const before = dispatcher.dispatched.length;
      const rep = await plan();
      reports.push(rep);
      const sent = dispatcher.dispatched.slice(before);
      for (const r of sent) await processOne(r);
      if (sent.length === 0 && rep.recreated.length === 0) return reports;
    }
    throw new Error('the stream did not settle in 10 planner runs');
  };
  const tagged = (tag: string) => seen.filter((v) => v.startsWith(`${tag}-`));
  const expectEach = (tag: string, n: number) =>
    expect(tagged(tag).sort()).toEqual(Array.from({ length: n }, (_, i) => `${tag}-${i}`).sort());
  return { id, topic, stream, dispatcher, seen, keys, plan, process: processOne, pump, tagged, expectEach };
}

/** Every run's re-created incarnations, flattened. */
const recreatedIn = (reports: StreamPlanReport[]) => reports.flatMap((r) => r.recreated);

describe('topic deleted and re-created under the same name (real broker, emulator)', () => {
  it('re-created with more records than the cursor before the next run: all 300 new records are read', async () => {
    const t = setup();
    await createTopic(t.topic);
    await produce(t.topic, 'old', 100);
    await t.pump();
    t.expectEach('old', 100);
    const [before] = await ledger.readPartitions(t.id);

    await deleteTopic(t.topic);
    await createTopic(t.topic);
    await produce(t.topic, 'new', 300);
    const reports = await t.pump();
    t.expectEach('new', 300);
    expect(t.tagged('old')).toHaveLength(100); // nothing of the old topic twice
    // Idempotency keys stay distinct across incarnations: a handler deduplicating by key keeps all 400.
    expect(t.keys.size).toBe(400);
    expect([...t.keys].filter((k) => k.endsWith('#1'))).toHaveLength(300);
    const closed = recreatedIn(reports);
    expect(closed).toEqual([
      expect.objectContaining({
        incarnation: 0,
        topicId: before?.topicId,
        committed: 100,
        nextFrom: 100,
        newStartOffset: 0,
        openRanges: [],
      }),
    ]);
    expect(closed[0]?.newTopicId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(closed[0]?.newTopicId).not.toBe(before?.topicId);
    expect(await ledger.readClosedIncarnations(t.id)).toEqual(closed);
    expect(await ledger.readPartition(t.id, t.topic, 0)).toMatchObject({
      status: 'active',
      incarnation: 1,
      committed: 300,
      topicId: closed[0]?.newTopicId,
    });
  });

  it('re-created after a planner run saw it gone: the retired partition comes back and all 300 records are read', async () => {
    const t = setup();
    await createTopic(t.topic);
    await produce(t.topic, 'old', 100);
    await t.pump();
    await deleteTopic(t.topic);
    expect(await t.plan()).toMatchObject({ retired: 1 });
    expect(await ledger.readPartition(t.id, t.topic, 0)).toMatchObject({ status: 'retired' });

    await createTopic(t.topic);
    await produce(t.topic, 'new', 300);
    const reports = await t.pump();
    t.expectEach('new', 300);
    expect(recreatedIn(reports)).toEqual([expect.objectContaining({ status: 'retired', committed: 100, nextFrom: 100 })]);
  });

  it('re-created with fewer records than the cursor: read from 0, no OFFSET_REGRESSION failure', async () => {
    const t = setup();
    await createTopic(t.topic);
    await produce(t.topic, 'old', 100);
    await t.pump();
    await deleteTopic(t.topic);
    await createTopic(t.topic);
    await produce(t.topic, 'new', 30);
    const reports = await t.pump();
    t.expectEach('new', 30);
    expect(reports.reduce((s, r) => s + r.failedPartitions, 0)).toBe(0);
    expect(recreatedIn(reports)).toHaveLength(1);
  });

  it('deleted, re-created and deleted again within one interval: retired with its cursor; the next topic of that name is read', async () => {
    const t = setup();
    await createTopic(t.topic);
    await produce(t.topic, 'old', 100);
    await t.pump();
    await deleteTopic(t.topic);
    await createTopic(t.topic);
    await produce(t.topic, 'between', 50);
    await deleteTopic(t.topic);
    const rep = await t.plan();
    expect(rep.retired).toBe(1);
    expect((await ledger.readPartition(t.id, t.topic, 0))?.reason).toMatch(/^TOPIC_DELETED: .*committed 100, planned up to 100/);

    await createTopic(t.topic);
    await produce(t.topic, 'third', 7);
    const reports = await t.pump();
    t.expectEach('third', 7);
    expect(recreatedIn(reports)).toHaveLength(1);
  });

  it('without topic ids: re-created with fewer records is caught by offset regression, and the run says ids are missing', async () => {
    const t = setup({ topicIds: false });
    await createTopic(t.topic);
    await produce(t.topic, 'old', 100);
    const first = await t.pump();
    expect(first[0]?.warnings).toEqual([NO_TOPIC_IDS]);
    expect((await ledger.readPartition(t.id, t.topic, 0))?.topicId).toBeUndefined();
    await deleteTopic(t.topic);
    await createTopic(t.topic);
    await produce(t.topic, 'new', 30);
    const reports = await t.pump();
    t.expectEach('new', 30);
    expect(recreatedIn(reports)).toEqual([expect.objectContaining({ committed: 100, nextFrom: 100, newStartOffset: 0 })]);
    expect(recreatedIn(reports)[0]?.reason).toMatch(
      /latest offset 30 is below planned offset 100 \(no topic ids from this broker: detected by offset regression\)/,
    );
  });

  it('a processor never reads a range planned against the old topic id from the new topic', async () => {
    const t = setup();
    await createTopic(t.topic);
    await produce(t.topic, 'old', 40);
    await t.plan(); // [0, 40) planned and sent, not processed yet
    const stale = t.dispatcher.dispatched.at(-1)!;
    await deleteTopic(t.topic);
    await createTopic(t.topic);
    await produce(t.topic, 'new', 60);

    const res = await t.process(stale);
    expect(res).toMatchObject({ status: 'parked', records: 0 });
    expect(res.reason).toMatch(/^TOPIC_RECREATED: topic .* now has id .*; its records were not read/);
    expect(t.seen).toEqual([]);

    const reports = await t.pump();
    expect(recreatedIn(reports)).toEqual([
      expect.objectContaining({
        committed: 0,
        nextFrom: 40,
        openRanges: [expect.objectContaining({ from: 0, until: 40, status: 'parked' })],
      }),
    ]);
    t.expectEach('new', 60);
    expect(t.tagged('old')).toEqual([]); // the old incarnation's records went with its topic
    expect(await t.process(stale)).toMatchObject({ status: 'unknown-range' });
  });
});
