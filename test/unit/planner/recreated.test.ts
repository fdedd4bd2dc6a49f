/** A topic deleted and re-created under its name, on the in-memory ledger and Kafka, in every ordering. */
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { NO_TOPIC_IDS, planStream, type PlannerDeps } from '../../../lib/planner/run';
import { decidePlan } from '../../../lib/planner/decide';
import { recreationReason } from '../../../lib/planner/plan/recreation';
import type { PartitionState } from '../../../lib/ports/ledger-state';

function setup(over: Partial<StreamConfigInput> = {}, kafkaOpts: { topicIds?: boolean } = {}) {
  const kafka = createMemoryKafka(kafkaOpts);
  const ledger = createMemoryLedger();
  const dispatcher = createRecordingDispatcher();
  const deps: PlannerDeps = { ledger, dispatcher, metadataFor: async () => kafka, plannerLeaseMs: 60_000 };
  const cfg = parseStreamConfig(
    { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 10_000, ...over },
    'test',
  );
  let now = 1_000_000;
  const run = () => planStream(deps, cfg, { dryRun: false, nowMs: (now += 10_000) });
  const store = () => ledger.store('s1');
  /** Processors finishing every open range of the partitions' current incarnations. */
  const finishAll = () => {
    for (const r of store().ranges.values()) {
      const p = store().partitions.get(`${r.topic}/${r.partition}`)!;
      if (r.status === 'done' || (r.incarnation ?? 0) !== (p.incarnation ?? 0)) continue;
      Object.assign(r, { status: 'done', progress: r.until });
      if (p.committed === r.from) p.committed = r.until;
    }
  };
  const recreate = (records: number) => {
    kafka.deleteTopic('orders');
    kafka.createTopic('orders', 1);
    kafka.produce('orders', 0, records);
  };
  return { kafka, ledger, dispatcher, cfg, run, store, finishAll, recreate };
}

/** A stream that read `orders/0` up to 100 (committed), nothing in flight. */
async function readUpTo100(t: ReturnType<typeof setup>) {
  t.kafka.createTopic('orders', 1);
  t.kafka.produce('orders', 0, 100);
  await t.run();
  t.finishAll();
  expect(t.store().partitions.get('orders/0')).toMatchObject({ committed: 100, nextFrom: 100 });
  return t.store().partitions.get('orders/0')!.topicId!;
}

describe('planner: topics re-created under the same name', () => {
  it('re-created with more records than the cursor: closes the old incarnation and reads all 300 new records', async () => {
    const t = setup();
    const oldId = await readUpTo100(t);
    t.recreate(300);
    const rep = await t.run();
    expect(rep.recreated).toHaveLength(1);
    expect(rep.recreated[0]).toMatchObject({
      incarnation: 0,
      topicId: oldId,
      committed: 100,
      nextFrom: 100,
      newStartOffset: 0,
      openRanges: [],
    });
    expect(rep.recreated[0]?.newTopicId).not.toBe(oldId);
    expect(rep.partitions[0]).toMatchObject({ action: 'recreated' });
    expect(rep.partitions[0]?.note).toMatch(
      /^TOPIC_RECREATED: topic id changed from .* \(committed 100, planned up to 100\); incarnation 1 starts at 0/,
    );
    expect(await t.ledger.readClosedIncarnations('s1')).toEqual(rep.recreated);
    expect(t.store().partitions.get('orders/0')).toMatchObject({
      status: 'active',
      incarnation: 1,
      committed: 0,
      nextFrom: 0,
      startOffset: 0,
    });

    const next = await t.run();
    expect(next.recordsPlanned).toBe(300);
    expect(t.dispatcher.dispatched.at(-1)).toEqual({
      stream: 's1',
      topic: 'orders',
      partition: 0,
      from: 0,
      until: 300,
      incarnation: 1,
      topicId: rep.recreated[0]?.newTopicId,
    });
    // The old incarnation's finished range [0, 100) (archived with the close) and the new one's [0, 300) are distinct.
    const ranges = t.ledger.allRanges('s1').map((r) => [r.incarnation ?? 0, r.from, r.until, r.topicId === oldId]);
    expect(ranges).toEqual([
      [0, 0, 100, true],
      [1, 0, 300, false],
    ]);
  });

  it('re-created with fewer records: closed and read from 0 instead of failing with OFFSET_REGRESSION', async () => {
    const t = setup();
    await readUpTo100(t);
    t.recreate(30);
    const rep = await t.run();
    expect(rep.failedPartitions).toBe(0);
    expect(rep.recreated).toHaveLength(1);
    await t.run();
    expect(t.dispatcher.dispatched.at(-1)).toMatchObject({ from: 0, until: 30, incarnation: 1 });
  });

  it('re-created after a run saw it gone: the retired partition is picked up as a new incarnation', async () => {
    const t = setup();
    await readUpTo100(t);
    t.kafka.deleteTopic('orders');
    expect((await t.run()).retired).toBe(1);
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 300);
    const rep = await t.run();
    expect(rep.recreated).toHaveLength(1);
    expect(rep.recreated[0]).toMatchObject({ status: 'retired', committed: 100, nextFrom: 100 });
    await t.run();
    expect(t.dispatcher.dispatched.at(-1)).toMatchObject({ from: 0, until: 300, incarnation: 1 });
  });

  it('deleted, re-created and deleted again within one interval: retired; a later topic of that name is read', async () => {
    const t = setup();
    await readUpTo100(t);
    t.recreate(50);
    t.kafka.deleteTopic('orders');
    const rep = await t.run();
    expect(rep.retired).toBe(1);
    expect(t.store().partitions.get('orders/0')?.reason).toMatch(/^TOPIC_DELETED: .*committed 100, planned up to 100/);
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 7);
    expect((await t.run()).recreated).toHaveLength(1);
    await t.run();
    expect(t.dispatcher.dispatched.at(-1)).toMatchObject({ from: 0, until: 7, incarnation: 1 });
  });

  it("removes the old incarnation's in-flight range in the same write and records it; twice re-created counts up", async () => {
    const t = setup({ maxRatePerPartition: 4 }); // 40 per run
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 100);
    await t.run(); // [0, 40) in flight
    t.recreate(10);
    const rep = await t.run();
    expect(rep.recreated[0]).toMatchObject({
      committed: 0,
      nextFrom: 40,
      openRanges: [{ from: 0, until: 40, status: 'planned', progress: 0 }],
    });
    expect([...t.store().ranges.values()].filter((r) => (r.incarnation ?? 0) === 0)).toEqual([]);
    await t.run();
    t.finishAll();
    t.recreate(5);
    const again = await t.run();
    expect(again.recreated[0]).toMatchObject({ incarnation: 1, committed: 10, nextFrom: 10 });
    expect(t.store().partitions.get('orders/0')).toMatchObject({ incarnation: 2, committed: 0 });
    await t.run();
    expect(t.dispatcher.dispatched.at(-1)).toMatchObject({ from: 0, until: 5, incarnation: 2 });
  });

  it('recreatedTopicOffsets latest: the new incarnation starts at the end of the new topic', async () => {
    const t = setup({ recreatedTopicOffsets: 'latest' });
    await readUpTo100(t);
    t.recreate(300);
    const rep = await t.run();
    expect(rep.recreated[0]).toMatchObject({ newStartOffset: 300 });
    expect(t.store().partitions.get('orders/0')).toMatchObject({ committed: 300, nextFrom: 300, incarnation: 1 });
  });

  it('a ledger written before topic ids records the id on the first run, without treating it as a re-creation', async () => {
    const t = setup();
    await readUpTo100(t);
    const p = t.store().partitions.get('orders/0')!;
    delete p.topicId;
    t.kafka.produce('orders', 0, 20);
    const rep = await t.run();
    expect(rep.recreated).toEqual([]);
    expect(rep.recordsPlanned).toBe(20);
    expect(t.store().partitions.get('orders/0')?.topicId).toEqual(expect.any(String));
  });

  it('without topic ids: re-creation is detected by offset regression only, and the run says so', async () => {
    const t = setup({}, { topicIds: false });
    await readUpTo100(t);
    t.recreate(30);
    const rep = await t.run();
    expect(rep.warnings).toEqual([NO_TOPIC_IDS]);
    expect(rep.recreated[0]?.reason).toMatch(
      /latest offset 30 is below planned offset 100 \(no topic ids from this broker: detected by offset regression\)/,
    );
    expect(rep.recreated[0]?.topicId).toBeUndefined();
  });

  it('the same topic id with fewer offsets is a truncated log: the partition fails as before', () => {
    const p: PartitionState = {
      stream: 's',
      topic: 'orders',
      partition: 0,
      status: 'active',
      startOffset: 0,
      committed: 100,
      nextFrom: 100,
      firstSeenAtMs: 0,
      topicId: 'A',
    };
    expect(recreationReason(p, 'A', { latest: 10 })).toBeUndefined();
    expect(recreationReason(p, 'B', { latest: 500 })).toMatch(/topic id changed from A to B/);
    expect(
      recreationReason({ ...p, status: 'retired', reason: 'UNSUBSCRIBED: ...', topicId: undefined }, undefined, { latest: 500 }),
    ).toBeUndefined();
    const cfg = parseStreamConfig({ id: 's', kafka: { brokers: ['b:9092'] }, topics: ['orders'] }, 'test');
    const d = decidePlan({
      stream: cfg,
      nowMs: 1,
      epoch: 2,
      initial: false,
      known: [p],
      discovered: [{ topic: 'orders', partitions: [0], topicId: 'A' }],
      offsets: [{ topic: 'orders', partition: 0, earliest: 0, latest: 10 }],
      openRanges: [],
    });
    expect(d.writes.map((w) => w.kind)).toEqual(['fail-partition']);
  });

  it('a bounded stream (replay) of a re-created topic retires the partition: its stop offsets name the old log', () => {
    const p: PartitionState = {
      stream: 's',
      topic: 'orders',
      partition: 0,
      status: 'active',
      startOffset: 0,
      committed: 10,
      nextFrom: 10,
      firstSeenAtMs: 0,
      topicId: 'A',
      stopOffset: 50,
    };
    const cfg = parseStreamConfig({ id: 's', kafka: { brokers: ['b:9092'] }, topics: ['orders'] }, 'test');
    const d = decidePlan({
      stream: cfg,
      nowMs: 1,
      epoch: 2,
      initial: false,
      known: [p],
      discovered: [{ topic: 'orders', partitions: [0], topicId: 'B' }],
      offsets: [{ topic: 'orders', partition: 0, earliest: 0, latest: 100 }],
      openRanges: [],
    });
    expect(d.writes).toEqual([
      expect.objectContaining({ kind: 'retire-partition', reason: expect.stringMatching(/^TOPIC_RECREATED: topic id changed/) }),
    ]);
    expect(d.recreated).toEqual([]);
  });
});
