/**
 * startingOffsets.fromGroup through planner runs: partitions start at the group's committed offset,
 * or at the fallback where it has none; offsets below the log start, past the end or past the last
 * stable offset; a missing group; a group that cannot be read; partitions added later. In-memory
 * ledger and Kafka.
 */
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { KafkaError } from '../../../lib/errors';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { planStream, runPlanner, type PlannerDeps } from '../../../lib/planner/run';
import { finishAllRanges } from '../../support/finish-ranges';

const GROUP = 'orders-app';

function setup(over: Partial<StreamConfigInput> = {}) {
  const kafka = createMemoryKafka();
  const ledger = createMemoryLedger();
  const dispatcher = createRecordingDispatcher();
  const deps: PlannerDeps = { ledger, dispatcher, metadataFor: async () => kafka, plannerLeaseMs: 60_000 };
  const stream = parseStreamConfig(
    {
      id: 's1',
      kafka: { brokers: ['localhost:9092'] },
      topics: ['orders'],
      triggerIntervalMs: 10_000,
      startingOffsets: { fromGroup: GROUP, fallback: 'earliest' },
      ...over,
    },
    'test',
  );
  let now = 1_000_000;
  const run = (dryRun = false) => planStream(deps, stream, { dryRun, nowMs: (now += 10_000) });
  const partition = (p: number, topic = 'orders') => ledger.store('s1').partitions.get(`${topic}/${p}`);
  const ranges = (p: number) => dispatcher.dispatched.filter((r) => r.partition === p).map((r) => [r.from, r.until]);
  const commit = (partition: number, offset: number, topic = 'orders') => kafka.commitGroupOffset(GROUP, { topic, partition, offset });
  const topic = (partitions: number, records: number) => {
    kafka.createTopic('orders', partitions);
    for (let p = 0; p < partitions; p++) kafka.produce('orders', p, records);
  };
  return { kafka, ledger, dispatcher, deps, stream, run, partition, ranges, commit, topic };
}

describe('startingOffsets.fromGroup', () => {
  it.each(['earliest', 'latest'] as const)(
    'starts each partition at its committed offset, one without a commit at the fallback (%s)',
    async (fallback) => {
      const t = setup({ startingOffsets: { fromGroup: GROUP, fallback } });
      t.topic(4, 20);
      t.commit(0, 5);
      t.commit(1, 20);
      t.commit(3, 0);
      const rep = await t.run();
      expect(rep).toMatchObject({ status: 'planned', registered: 4 });
      const fallbackAt = fallback === 'earliest' ? 0 : 20;
      expect([0, 1, 2, 3].map((p) => t.partition(p)?.startOffset)).toEqual([5, 20, fallbackAt, 0]);
      expect(t.ranges(0)).toEqual([[5, 20]]);
      expect(t.ranges(1)).toEqual([]);
      expect(t.ranges(2)).toEqual(fallback === 'earliest' ? [[0, 20]] : []);
      expect(t.ranges(3)).toEqual([[0, 20]]);
      const notes = rep.partitions.map((p) => p.note);
      expect(notes[0]).toMatch(/^starts at 5: committed offset 5 of group "orders-app"/);
      expect(notes[2]).toMatch(new RegExp(`^starts at ${fallbackAt}: group "orders-app" has no committed offset: fallback ${fallback}`));
    },
  );

  it('a group that does not exist: every partition at the fallback, not an error', async () => {
    const t = setup({ startingOffsets: { fromGroup: 'nobody-uses-this', fallback: 'latest' } });
    t.topic(2, 7);
    expect(await t.run()).toMatchObject({ status: 'planned', registered: 2, rangesPlanned: 0 });
    expect([t.partition(0)?.startOffset, t.partition(1)?.startOffset]).toEqual([7, 7]);
  });

  it('a committed offset below the log start fails the partition under failOnDataLoss, naming the lost span', async () => {
    const t = setup();
    t.topic(2, 20);
    t.kafka.truncate('orders', 0, 8);
    t.commit(0, 3);
    t.commit(1, 4);
    const rep = await t.run();
    expect(t.partition(0)).toMatchObject({
      status: 'failed',
      startOffset: 3,
      reason: expect.stringMatching(/^DATA_LOSS: offsets \[3, 8\)/),
    });
    expect(rep.partitions[0]).toMatchObject({
      action: 'failed',
      note: expect.stringMatching(/^starts at 3: .* below the log start 8; DATA_LOSS/),
    });
    expect(t.ranges(0)).toEqual([]);
    expect(t.ranges(1)).toEqual([[4, 20]]);
  });

  it('a committed offset below the log start without failOnDataLoss: the lost span is recorded and reading starts at the log start', async () => {
    const t = setup({ failOnDataLoss: false });
    t.topic(1, 20);
    t.kafka.truncate('orders', 0, 8);
    t.commit(0, 3);
    const rep = await t.run();
    expect(rep.dataLoss).toEqual([expect.objectContaining({ topic: 'orders', partition: 0, from: 3, until: 8 })]);
    expect(t.partition(0)).toMatchObject({ status: 'active', startOffset: 3 });
    expect(t.ranges(0)).toEqual([[8, 20]]);
  });

  it('a committed offset past the end is out of range: the fallback, as a consumer resets', async () => {
    const t = setup({ startingOffsets: { fromGroup: GROUP, fallback: 'latest' }, isolationLevel: 'read_uncommitted' });
    t.topic(1, 20);
    t.commit(0, 35);
    const rep = await t.run();
    expect(t.partition(0)).toMatchObject({ startOffset: 20 });
    expect(rep.partitions[0]?.note).toContain('is past the end 20 (out of range): fallback latest (20)');
  });

  it('read_committed: past the last stable offset but not the high watermark waits for the transaction, then starts exactly there', async () => {
    const t = setup({ startingOffsets: { fromGroup: GROUP, fallback: 'earliest' } });
    t.topic(2, 20);
    t.kafka.setLastStable('orders', 0, 12);
    t.commit(0, 15);
    t.commit(1, 30); // past the high watermark too: out of range
    const first = await t.run();
    expect(first.registered).toBe(1);
    expect(t.partition(0)).toBeUndefined();
    expect(t.partition(1)).toMatchObject({ startOffset: 0 });
    expect(first.partitions[0]?.note).toMatch(
      /^not registered yet \(committed offset 15 of group "orders-app" is past the last stable offset 12 \(a transaction is open\)/,
    );
    expect(t.ledger.store('s1').meta?.pendingStart).toEqual([{ topic: 'orders', partitions: [0], topicId: expect.any(String) }]);
    t.kafka.setLastStable('orders', 0, undefined);
    await t.run();
    expect(t.partition(0)).toMatchObject({ startOffset: 15 });
    expect(t.ranges(0)).toEqual([[15, 20]]);
  });

  it('a group read that fails fails the first run with one line naming the group, and registers nothing', async () => {
    const t = setup();
    t.topic(2, 5);
    t.kafka.failGroupReads(
      new KafkaError('Kafka reading the committed offsets failed: Not authorized to access group', { type: 'GROUP_AUTHORIZATION_FAILED' }),
    );
    const [rep] = await runPlanner(t.deps, { streams: [t.stream], dryRun: false, nowMs: 2_000_000 });
    expect(rep).toMatchObject({ status: 'failed', registered: 0 });
    expect(rep?.reason).toBe(
      'KafkaError: startingOffsets.fromGroup: the committed offsets of consumer group "orders-app" could not be read: ' +
        'Kafka reading the committed offsets failed: Not authorized to access group; nothing was registered',
    );
    expect(rep?.reason).not.toContain('\n');
    expect(t.ledger.store('s1').partitions.size).toBe(0);
    expect(t.ledger.store('s1').meta?.startedAtMs).toBeUndefined();
    expect(t.dispatcher.dispatched).toEqual([]);

    t.kafka.failGroupReads(null);
    t.commit(1, 2);
    expect(await t.run()).toMatchObject({ status: 'planned', registered: 2 });
    expect([t.partition(0)?.startOffset, t.partition(1)?.startOffset]).toEqual([0, 2]);
  });

  it('a dry run reads the group and writes nothing', async () => {
    const t = setup();
    t.topic(1, 9);
    t.commit(0, 4);
    const rep = await t.run(true);
    expect(rep.partitions[0]).toMatchObject({
      status: 'new',
      planned: [{ from: 4, until: 9 }],
      note: expect.stringMatching(/^starts at 4: /),
    });
    expect(t.ledger.store('s1').partitions.size).toBe(0);
  });

  it('a partition unreadable at the first run starts from the group once readable', async () => {
    const t = setup({ startingOffsets: { fromGroup: GROUP, fallback: 'latest' } });
    t.topic(2, 10);
    t.kafka.setUnavailable('orders', 1);
    await t.run();
    t.commit(1, 6);
    t.kafka.produce('orders', 1, 5);
    t.kafka.setUnavailable('orders', 1, null);
    await t.run();
    expect(t.partition(1)).toMatchObject({ startOffset: 6 });
    expect(t.ranges(1)).toEqual([[6, 15]]);
  });

  it('a partition added later starts at the group offset where the group has one, else at earliest (never latest)', async () => {
    const t = setup({ startingOffsets: { fromGroup: GROUP, fallback: 'latest' } });
    t.topic(1, 10);
    await t.run();
    t.kafka.addPartitions('orders', 2);
    t.kafka.produce('orders', 1, 8);
    t.kafka.produce('orders', 2, 8);
    t.commit(1, 3);
    const rep = await t.run();
    expect(rep.registered).toBe(2);
    expect([t.partition(1)?.startOffset, t.partition(2)?.startOffset]).toEqual([3, 0]);
    expect(t.ranges(1)).toEqual([[3, 8]]);
    expect(t.ranges(2)).toEqual([[0, 8]]);
  });

  it('a failed group read on a later run holds back only the added partitions; the rest of the stream is planned', async () => {
    const t = setup();
    t.topic(1, 10);
    await t.run();
    finishAllRanges(t.ledger, 's1');
    t.kafka.addPartitions('orders', 1);
    t.kafka.produce('orders', 0, 5);
    t.kafka.produce('orders', 1, 5);
    t.kafka.failGroupReads(new KafkaError('coordinator not available'));
    const rep = await t.run();
    expect(rep).toMatchObject({ status: 'planned', registered: 0, unavailablePartitions: 1 });
    expect(rep.warnings).toEqual([expect.stringMatching(/^1 new partition\(s\) wait for the committed offsets of group "orders-app"/)]);
    expect(rep.partitions[1]?.note).toMatch(/it will start at the committed offset of group "orders-app", else earliest$/);
    expect(t.ranges(0)).toEqual([
      [0, 10],
      [10, 15],
    ]);
    t.kafka.failGroupReads(null);
    t.commit(1, 2);
    await t.run();
    expect(t.partition(1)).toMatchObject({ startOffset: 2 });
  });

  it('with consumerGroup the same group (the migration case) it starts from the group', async () => {
    const t = setup({ consumerGroup: GROUP, startingOffsets: { fromGroup: GROUP, fallback: 'latest' } });
    t.topic(1, 10);
    t.commit(0, 7);
    await t.run();
    expect(t.ranges(0)).toEqual([[7, 10]]);
  });

  it('reads the group only when a new partition needs it', async () => {
    const t = setup();
    t.topic(1, 10);
    let reads = 0;
    const committedOffsets = t.kafka.committedOffsets.bind(t.kafka);
    t.kafka.committedOffsets = async (...args) => {
      reads++;
      return committedOffsets(...args);
    };
    await t.run();
    await t.run();
    t.kafka.produce('orders', 0, 3);
    await t.run();
    expect(reads).toBe(1);
  });
});
