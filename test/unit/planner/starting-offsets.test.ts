/**
 * startingOffsets for partitions the stream's first run found but could not read (their leader was
 * down): registered at the configured start once readable, not at earliest; partitions that appear
 * later still start at earliest. In-memory ledger and Kafka.
 */
import fc from 'fast-check';
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka, type MemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { planStream, type PlannerDeps } from '../../../lib/planner/run';
import type { KafkaMetadata } from '../../../lib/ports/kafka-metadata';

function setup(over: Partial<StreamConfigInput> = {}, wrap: (k: MemoryKafka) => KafkaMetadata = (k) => k) {
  const kafka = createMemoryKafka();
  const ledger = createMemoryLedger();
  const dispatcher = createRecordingDispatcher();
  const deps: PlannerDeps = { ledger, dispatcher, metadataFor: async () => wrap(kafka), plannerLeaseMs: 60_000 };
  const cfg = parseStreamConfig(
    { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 10_000, ...over },
    'test',
  );
  let now = 1_000_000;
  const run = (dryRun = false) => planStream(deps, cfg, { dryRun, nowMs: (now += 10_000) });
  const partition = (p: number) => ledger.store('s1').partitions.get(`orders/${p}`);
  const ranges = (p: number) => dispatcher.dispatched.filter((r) => r.partition === p).map((r) => [r.from, r.until]);
  return { kafka, ledger, dispatcher, run, partition, ranges };
}

describe('startingOffsets of partitions unreadable at the first run', () => {
  it('latest: starts at the log end when first readable; a partition added later starts at earliest', async () => {
    const t = setup({ startingOffsets: 'latest' });
    t.kafka.createTopic('orders', 3);
    for (const p of [0, 1, 2]) t.kafka.produce('orders', p, 10);
    t.kafka.setUnavailable('orders', 1);
    const first = await t.run();
    expect(first).toMatchObject({ status: 'planned', registered: 2, unavailablePartitions: 1 });
    expect(first.partitions.find((p) => p.partition === 1)).toMatchObject({
      status: 'new',
      action: 'no-offsets',
      note: expect.stringMatching(
        /^offsets unavailable this run: LEADER_UNREACHABLE: .*; not registered yet \(no offsets this run\): present when the stream started, it will start at startingOffsets$/,
      ),
    });
    expect(t.partition(0)).toMatchObject({ startOffset: 10, nextFrom: 10 });
    expect(t.partition(1)).toBeUndefined();

    // Written while its leader was down; readable again on the next run, with a partition added meanwhile.
    t.kafka.produce('orders', 1, 5);
    t.kafka.addPartitions('orders', 1);
    t.kafka.produce('orders', 3, 4);
    t.kafka.setUnavailable('orders', 1, null);
    t.kafka.setUnavailable('orders', 3);
    const waiting = await t.run(true);
    expect(waiting.partitions.find((p) => p.partition === 3)?.note).toMatch(
      /; not registered yet \(no offsets this run\): it will start at earliest$/,
    );
    t.kafka.setUnavailable('orders', 3, null);
    expect(await t.run(true)).toMatchObject({ registered: 2, rangesPlanned: 1 });
    const second = await t.run();
    expect(second).toMatchObject({ registered: 2, rangesPlanned: 1, unavailablePartitions: 0 });
    expect(t.partition(1)).toMatchObject({ startOffset: 15, committed: 15, nextFrom: 15 });
    expect(t.ranges(1)).toEqual([]);
    expect(t.partition(3)).toMatchObject({ startOffset: 0 });
    expect(t.ranges(3)).toEqual([[0, 4]]);

    t.kafka.produce('orders', 1, 2);
    await t.run();
    expect(t.ranges(1)).toEqual([[15, 17]]);
  });

  it('latest: a first run that could read no partition at all still starts them at latest', async () => {
    const t = setup({ startingOffsets: 'latest' });
    t.kafka.createTopic('orders', 2);
    for (const p of [0, 1]) {
      t.kafka.produce('orders', p, 20);
      t.kafka.setUnavailable('orders', p);
    }
    expect(await t.run()).toMatchObject({ status: 'planned', registered: 0, unavailablePartitions: 2 });
    expect(t.ledger.store('s1').meta?.startedAtMs).toBeDefined();
    t.kafka.setUnavailable('orders', 0, null);
    await t.run();
    t.kafka.setUnavailable('orders', 1, null);
    await t.run();
    expect([t.partition(0)?.startOffset, t.partition(1)?.startOffset]).toEqual([20, 20]);
    expect(t.dispatcher.dispatched).toEqual([]);
  });

  it('timestamp: starts at the first record at or after it, looked up once readable', async () => {
    const t = setup({ startingOffsets: { timestampMs: 150 } });
    t.kafka.createTopic('orders', 2);
    for (const p of [0, 1]) {
      t.kafka.produce('orders', p, 5, 100);
      t.kafka.produce('orders', p, 5 + p, 200);
    }
    t.kafka.setUnavailable('orders', 1);
    expect(await t.run()).toMatchObject({ registered: 1, unavailablePartitions: 1 });
    expect(t.partition(0)).toMatchObject({ startOffset: 5 });
    t.kafka.produce('orders', 1, 3, 300);
    t.kafka.setUnavailable('orders', 1, null);
    expect(await t.run()).toMatchObject({ registered: 1, unavailablePartitions: 0 });
    expect(t.partition(1)).toMatchObject({ startOffset: 5 });
    expect(t.ranges(1)).toEqual([[5, 14]]);
  });

  it('timestamp: the look-up is partial; a partition it cannot serve waits for a later run', async () => {
    // Offsets readable, but the timestamp look-up of partition 1 fails (its leader changed in between).
    let timestampDown = true;
    const t = setup({ startingOffsets: { timestampMs: 150 } }, (k) => ({
      ...k,
      fetchOffsetsForTimestamp: async () => {
        throw new Error('the planner asks the partial look-up');
      },
      fetchAvailableOffsetsForTimestamp: async (parts, ts, level) => {
        const answer = await k.fetchAvailableOffsetsForTimestamp(parts, ts, level);
        if (!timestampDown) return answer;
        const down = (o: { partition: number }) => o.partition === 1;
        return {
          offsets: answer.offsets.filter((o) => !down(o)),
          unavailable: [
            ...answer.unavailable,
            ...answer.offsets.filter(down).map((o) => ({ ...o, code: 'NOT_LEADER' as const, reason: 'moved' })),
          ],
        };
      },
    }));
    t.kafka.createTopic('orders', 2);
    for (const p of [0, 1]) {
      t.kafka.produce('orders', p, 5, 100);
      t.kafka.produce('orders', p, 5, 200);
    }
    const first = await t.run();
    expect(first).toMatchObject({ status: 'planned', registered: 1, unavailablePartitions: 1 });
    expect(first.partitions.find((p) => p.partition === 1)).toMatchObject({ action: 'no-offsets', unavailable: 'NOT_LEADER' });
    expect(t.partition(1)).toBeUndefined();
    timestampDown = false;
    await t.run();
    expect(t.partition(1)).toMatchObject({ startOffset: 5 });
  });

  it('explicit offsets: the named offset (capped at the end) once readable; an unnamed partition at earliest', async () => {
    const t = setup({ startingOffsets: { offsets: { orders: { '0': 3, '1': 4, '2': 99 } } } });
    t.kafka.createTopic('orders', 4);
    for (const p of [0, 1, 2, 3]) t.kafka.produce('orders', p, 10);
    for (const p of [1, 2, 3]) t.kafka.setUnavailable('orders', p);
    await t.run();
    expect(t.partition(0)).toMatchObject({ startOffset: 3 });
    for (const p of [1, 2, 3]) t.kafka.setUnavailable('orders', p, null);
    await t.run();
    expect([1, 2, 3].map((p) => t.partition(p)?.startOffset)).toEqual([4, 10, 0]);
  });

  it('a topic deleted and re-created before its pending partition was read starts at earliest', async () => {
    const t = setup({ startingOffsets: 'latest' });
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 10);
    t.kafka.setUnavailable('orders', 0);
    await t.run();
    t.kafka.deleteTopic('orders');
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 3);
    t.kafka.setUnavailable('orders', 0, null);
    await t.run();
    expect(t.partition(0)).toMatchObject({ startOffset: 0 });
    expect(t.ranges(0)).toEqual([[0, 3]]);
  });

  it('property (latest): a partition present at the first run begins at its log end when first read, one added later at 0', async () => {
    // Per partition: the run that adds it (0: present at the stream's first run), the run from which
    // its offsets can be read, and the records written before each run.
    const part = fc.record({
      addedAt: fc.integer({ min: 0, max: 3 }),
      readableAt: fc.integer({ min: 0, max: 3 }),
      writes: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 4, maxLength: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(part, { minLength: 1, maxLength: 5 }), async (parts) => {
        const sorted = [...parts].sort((a, b) => a.addedAt - b.addedAt); // partitions are only ever added at the end
        const t = setup({ startingOffsets: 'latest' });
        const expected = new Map<number, number>();
        for (let runNo = 0; runNo < 4; runNo++) {
          const present = sorted.filter((p) => p.addedAt <= runNo).length;
          const have = (await t.kafka.describeTopics({ topics: ['orders'] }))[0]?.partitions.length ?? 0;
          if (have === 0 && present > 0) t.kafka.createTopic('orders', present);
          else if (present > have) t.kafka.addPartitions('orders', present - have);
          sorted.forEach((p, i) => {
            if (p.addedAt > runNo) return;
            t.kafka.produce('orders', i, p.writes[runNo] ?? 0);
            t.kafka.setUnavailable('orders', i, runNo < p.readableAt ? 'LEADER_UNREACHABLE' : null);
          });
          await t.run();
          sorted.forEach((p, i) => {
            if (p.addedAt > runNo || runNo < p.readableAt || expected.has(i)) return;
            const written = p.writes.slice(p.addedAt, runNo + 1).reduce((s, n) => s + n, 0);
            expected.set(i, p.addedAt === 0 ? written : 0);
          });
        }
        for (const [i, start] of expected) expect(t.partition(i)?.startOffset).toBe(start);
        expect(expected.size).toBe(sorted.length);
      }),
      { numRuns: 200 },
    );
  });
});
