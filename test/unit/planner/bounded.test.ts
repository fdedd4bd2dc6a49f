/** Bounded streams (replays): partitions with stop offsets are planned up to them, then the stream finishes. */
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { decidePlan } from '../../../lib/planner/decide';
import { planStream } from '../../../lib/planner/run';
import type { PartitionState } from '../../../lib/ports/ledger-state';

const ID = 'replay1';
const config = (over: Partial<StreamConfigInput> = {}) =>
  parseStreamConfig({ id: ID, kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 10_000, ...over }, 'test');

const bounded = (partition: number, start: number, stop: number): PartitionState => ({
  stream: ID,
  topic: 'orders',
  partition,
  status: 'active',
  startOffset: start,
  committed: start,
  nextFrom: start,
  firstSeenAtMs: 1,
  stopOffset: stop,
});

async function setup(partitions: PartitionState[], over: Partial<StreamConfigInput> = {}) {
  const kafka = createMemoryKafka();
  const ledger = createMemoryLedger();
  const dispatcher = createRecordingDispatcher();
  kafka.createTopic('orders', 3);
  for (const p of [0, 1, 2]) kafka.produce('orders', p, 100);
  // What `replay` does: register the bounded partitions and mark the stream started, under the lease.
  const lease = await ledger.acquirePlannerLease({ stream: ID, ownerToken: 'cli', nowMs: 0, leaseMs: 1 });
  if (!lease.acquired) throw new Error('lease');
  await ledger.applyPlan({
    stream: ID,
    epoch: lease.epoch,
    ownerToken: 'cli',
    writes: partitions.map((partition) => ({ kind: 'register-partition' as const, partition })),
  });
  await ledger.markStreamStarted({ stream: ID, epoch: lease.epoch, ownerToken: 'cli', nowMs: 0 });
  const cfg = config(over);
  let now = 1_000_000;
  const run = () =>
    planStream({ ledger, dispatcher, metadataFor: async () => kafka, plannerLeaseMs: 60_000 }, cfg, {
      dryRun: false,
      nowMs: (now += 10_000),
    });
  const finishAll = () => {
    const s = ledger.store(ID);
    for (const r of s.ranges.values()) {
      if (r.status === 'done') continue;
      Object.assign(r, { status: 'done', progress: r.until });
      const p = s.partitions.get(`${r.topic}/${r.partition}`)!;
      if (p.committed === r.from) p.committed = r.until;
    }
  };
  return { kafka, ledger, dispatcher, run, finishAll };
}

describe('bounded streams (replay)', () => {
  it('plans exactly [start, stop) per partition, however far the partition has grown, and registers nothing new', async () => {
    const t = await setup([bounded(0, 10, 40), bounded(1, 0, 100)], { maxRatePerPartition: 3 }); // 30 per run
    t.kafka.produce('orders', 0, 500);
    const first = await t.run();
    expect(first.registered).toBe(0); // partition 2 exists but is not part of the replay
    expect(t.dispatcher.dispatched.map((r) => [r.partition, r.from, r.until])).toEqual([
      [0, 10, 40],
      [1, 0, 30],
    ]);
    expect(first.partitions.find((p) => p.partition === 0)).toMatchObject({ lag: 30, stopOffset: 40 });
    for (let i = 0; i < 5; i++) {
      t.finishAll();
      await t.run();
    }
    const ranges = t.dispatcher.dispatched.filter((r) => r.partition === 0);
    expect(ranges.map((r) => [r.from, r.until])).toEqual([[10, 40]]);
    expect(Math.max(...t.dispatcher.dispatched.filter((r) => r.partition === 1).map((r) => r.until))).toBe(100);
    expect((await t.ledger.readPartitions(ID)).map((p) => p.partition).sort()).toEqual([0, 1]);
  });

  it('finishes once every partition is committed up to its stop offset, then costs no Kafka request', async () => {
    const t = await setup([bounded(0, 0, 50), bounded(1, 20, 20)]);
    const first = await t.run();
    expect(first.finished).toBeUndefined();
    expect(first.partitions.find((p) => p.partition === 1)?.action).toBe('finished');
    t.finishAll();
    const second = await t.run();
    expect(second).toMatchObject({ finished: true, rangesPlanned: 0 });
    expect((await t.ledger.readMeta(ID))?.finishedAtMs).toBeDefined();
    const before = t.kafka.requestCount();
    const third = await t.run();
    expect(third).toMatchObject({ status: 'skipped', finished: true });
    expect(t.kafka.requestCount()).toBe(before);
    expect(t.dispatcher.dispatched).toHaveLength(1);
  });

  it('records only the lost span below the stop offset when retention overtook a bounded partition', async () => {
    const t = await setup([bounded(0, 0, 30)], { failOnDataLoss: false });
    t.kafka.truncate('orders', 0, 60);
    const rep = await t.run();
    expect(rep.dataLoss).toEqual([expect.objectContaining({ from: 0, until: 30 })]);
    expect(rep.rangesPlanned).toBe(0);
    expect(await t.ledger.readPartition(ID, 'orders', 0)).toMatchObject({ committed: 30, nextFrom: 30 });
    expect((await t.run()).finished).toBe(true);
  });

  it('is not finished while a partition has failed (an operator must look)', () => {
    const stream = config();
    const failed = { ...bounded(1, 0, 10), status: 'failed' as const, reason: 'DATA_LOSS' };
    const done = { ...bounded(0, 0, 10), committed: 10, nextFrom: 10 };
    const base = {
      stream,
      nowMs: 5,
      epoch: 1,
      initial: false,
      discovered: [{ topic: 'orders', partitions: [0, 1] }],
      offsets: [0, 1].map((partition) => ({ topic: 'orders', partition, earliest: 0, latest: 100 })),
      openRanges: [],
    };
    expect(decidePlan({ ...base, known: [done, failed] }).finished).toBe(false);
    expect(decidePlan({ ...base, known: [done, { ...failed, status: 'retired' }] }).finished).toBe(true);
    // Unbounded streams never finish.
    expect(decidePlan({ ...base, known: [{ ...done, stopOffset: undefined }] }).finished).toBe(false);
  });
});
