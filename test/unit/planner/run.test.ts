/** Planner runs on the in-memory ledger and Kafka: discovery, clamping, data loss, re-dispatch, fencing. */
import type { RangePayload } from '../../../lib/ranges';
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { planStream, runPlanner, type PlannerDeps } from '../../../lib/planner/run';
import { finishAllRanges } from '../../support/finish-ranges';

const stream = (over: Partial<StreamConfigInput> = {}) =>
  parseStreamConfig(
    { id: 's1', kafka: { brokers: ['localhost:9092'] }, topicPattern: 'orders.*', triggerIntervalMs: 10_000, ...over },
    'test',
  );

function setup(over: Partial<StreamConfigInput> = {}) {
  const kafka = createMemoryKafka();
  const ledger = createMemoryLedger();
  const dispatcher = createRecordingDispatcher();
  const deps: PlannerDeps = { ledger, dispatcher, metadataFor: async () => kafka, plannerLeaseMs: 60_000 };
  const cfg = stream(over);
  let now = 1_000_000;
  const run = (opts: { dryRun?: boolean; at?: number } = {}) => {
    now = opts.at ?? now + 10_000;
    return planStream(deps, cfg, { dryRun: opts.dryRun ?? false, nowMs: now });
  };
  /** Simulates processors finishing every dispatched range. */
  const finishAll = () => finishAllRanges(ledger, 's1');
  return { kafka, ledger, dispatcher, deps, cfg, run, finishAll, now: () => now };
}

/** Dispatched payloads without the topic id each carries (the memory metadata's own ids). */
const payloads = (ranges: RangePayload[]) => ranges.map(({ topicId: _id, ...r }) => r);

describe('planner run', () => {
  it('registers discovered partitions, plans [start, latest) and dispatches each range once', async () => {
    const t = setup();
    t.kafka.createTopic('orders', 2);
    t.kafka.createTopic('payments', 1); // does not match the pattern
    t.kafka.produce('orders', 0, 100);
    t.kafka.produce('orders', 1, 5);
    const rep = await t.run();
    expect(rep).toMatchObject({ status: 'planned', registered: 2, rangesPlanned: 2, recordsPlanned: 105, dispatched: 2 });
    expect(payloads(t.dispatcher.dispatched)).toEqual([
      { stream: 's1', topic: 'orders', partition: 0, from: 0, until: 100 },
      { stream: 's1', topic: 'orders', partition: 1, from: 0, until: 5 },
    ]);
    const ranges = [...t.ledger.store('s1').ranges.values()];
    expect(ranges.every((r) => r.dispatches === 1 && r.dispatchedAtMs === t.now())).toBe(true);
    expect(t.ledger.store('s1').meta?.startedAtMs).toBe(t.now());
  });

  it('keeps one range in flight per partition and continues where the last one ended (I1)', async () => {
    const t = setup({ maxRatePerPartition: 3 }); // 3/s x 10 s = 30 per run
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 100);
    await t.run();
    expect(t.dispatcher.dispatched.map((r) => [r.from, r.until])).toEqual([[0, 30]]);
    const second = await t.run();
    expect(second.rangesPlanned).toBe(0);
    expect(second.partitions[0]?.action).toBe('in-flight');
    t.finishAll();
    await t.run();
    t.finishAll();
    await t.run();
    t.finishAll();
    await t.run();
    expect(t.dispatcher.dispatched.map((r) => [r.from, r.until])).toEqual([
      [0, 30],
      [30, 60],
      [60, 90],
      [90, 100],
    ]);
  });

  it('starts partitions found after the stream started at earliest, and initial ones per startingOffsets', async () => {
    const t = setup({ startingOffsets: 'latest' });
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 50);
    await t.run();
    expect(t.ledger.store('s1').partitions.get('orders/0')).toMatchObject({ startOffset: 50, nextFrom: 50 });
    t.kafka.addPartitions('orders', 1);
    t.kafka.produce('orders', 1, 7);
    t.kafka.createTopic('orders-eu', 1);
    t.kafka.produce('orders-eu', 0, 3);
    const rep = await t.run();
    expect(rep.registered).toBe(2);
    expect(payloads(t.dispatcher.dispatched)).toEqual([
      { stream: 's1', topic: 'orders', partition: 1, from: 0, until: 7 },
      { stream: 's1', topic: 'orders-eu', partition: 0, from: 0, until: 3 },
    ]);
  });

  it('retires partitions of a deleted topic with a reason and plans nothing more for them', async () => {
    const t = setup();
    t.kafka.createTopic('orders-old', 2);
    t.kafka.produce('orders-old', 0, 10);
    await t.run();
    t.finishAll();
    t.kafka.deleteTopic('orders-old');
    const rep = await t.run();
    expect(rep.retired).toBe(2);
    const p0 = t.ledger.store('s1').partitions.get('orders-old/0');
    expect(p0).toMatchObject({ status: 'retired' });
    expect(p0?.reason).toMatch(/^TOPIC_DELETED: .*committed 10, planned up to 10/);
    const again = await t.run();
    expect(again.retired).toBe(0);
    expect(again.partitions.map((p) => p.action)).toEqual(['inactive', 'inactive']);
  });

  it("does not retire a partition registered a moment ago that one run's metadata lacks (a broker not caught up yet)", async () => {
    const t = setup();
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 3);
    const first = await t.run();
    expect(first.registered).toBe(1);
    // The next run asks a broker that has not applied the new topic's metadata yet.
    t.kafka.hideTopic('orders');
    const soon = await t.run({ at: t.now() + 1_000 });
    expect(soon).toMatchObject({ status: 'planned', retired: 0 });
    expect(soon.partitions).toEqual([
      expect.objectContaining({ topic: 'orders', action: 'no-offsets', note: expect.stringMatching(/a moment after registration/) }),
    ]);
    expect(t.ledger.store('s1').partitions.get('orders/0')).toMatchObject({ status: 'active' });
    // Back in the next answer: carries on.
    t.kafka.hideTopic('orders', false);
    t.finishAll();
    t.kafka.produce('orders', 0, 2);
    expect(await t.run({ at: t.now() + 1_000 })).toMatchObject({ retired: 0, rangesPlanned: 1 });
    // Still missing once the grace has passed: retired.
    t.kafka.deleteTopic('orders');
    expect(await t.run({ at: t.now() + 5_000 })).toMatchObject({ retired: 1 });
  });

  it('fails a partition visibly on data loss when failOnDataLoss is true', async () => {
    const t = setup({ failOnDataLoss: true });
    t.kafka.createTopic('orders', 1);
    await t.run();
    t.kafka.produce('orders', 0, 100);
    t.kafka.truncate('orders', 0, 40);
    const rep = await t.run();
    expect(rep.failedPartitions).toBe(1);
    expect(rep.rangesPlanned).toBe(0);
    const p = t.ledger.store('s1').partitions.get('orders/0');
    expect(p?.status).toBe('failed');
    expect(p?.reason).toMatch(/DATA_LOSS: offsets \[0, 40\) were deleted by retention/);
  });

  it('records the exact lost span and continues from earliest when failOnDataLoss is false (I6)', async () => {
    const t = setup({ failOnDataLoss: false });
    t.kafka.createTopic('orders', 1);
    await t.run();
    t.kafka.produce('orders', 0, 100);
    t.kafka.truncate('orders', 0, 40);
    const rep = await t.run();
    expect(rep.dataLoss).toEqual([expect.objectContaining({ topic: 'orders', partition: 0, from: 0, until: 40 })]);
    expect(payloads(t.dispatcher.dispatched)).toEqual([{ stream: 's1', topic: 'orders', partition: 0, from: 40, until: 100 }]);
    expect(t.ledger.store('s1').losses).toHaveLength(1);
  });

  it('splits maxOffsetsPerTrigger by lag, rounding small shares up', async () => {
    const t = setup({ maxOffsetsPerTrigger: 100 });
    t.kafka.createTopic('orders', 3);
    t.kafka.produce('orders', 0, 1000);
    t.kafka.produce('orders', 1, 100);
    t.kafka.produce('orders', 2, 1);
    const rep = await t.run();
    const sizes = t.dispatcher.dispatched.map((r) => r.until - r.from);
    // shares 90.0, 9.0, 0.09 -> 90, 9, 1 (the tiny share rounds up so it never starves)
    expect(sizes).toEqual([90, 9, 1]);
    expect(rep.recordsPlanned).toBe(100);
  });

  it('waits for minOffsetsPerTrigger until maxTriggerDelay has passed', async () => {
    const t = setup({ minOffsetsPerTrigger: 50, maxTriggerDelayMs: 60_000 });
    t.kafka.createTopic('orders', 1);
    await t.run();
    t.kafka.produce('orders', 0, 10);
    const waiting = await t.run();
    expect(waiting.partitions[0]?.action).toBe('waiting-for-min-offsets');
    expect(waiting.rangesPlanned).toBe(0);
    const later = await t.run({ at: t.now() + 60_001 });
    expect(later.rangesPlanned).toBe(1);
  });

  it('splits a large range into sub-ranges for order-insensitive streams and advances over finished ones', async () => {
    const t = setup({ split: { orderInsensitive: true, maxRangeSize: 40 } });
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 100);
    await t.run();
    expect(t.dispatcher.dispatched.map((r) => [r.from, r.until])).toEqual([
      [0, 33],
      [33, 66],
      [66, 100],
    ]);
    // The middle and last finish first: committed cannot move past the unfinished first range.
    const s = t.ledger.store('s1');
    s.ranges.get('orders/0/33')!.status = 'done';
    s.ranges.get('orders/0/66')!.status = 'done';
    await t.run();
    expect(s.partitions.get('orders/0')?.committed).toBe(0);
    s.ranges.get('orders/0/0')!.status = 'done';
    await t.run();
    expect(s.partitions.get('orders/0')?.committed).toBe(100);
  });

  it('re-dispatches a never-dispatched range after a crash, an expired lease and a failure, then parks it', async () => {
    const t = setup({ maxAttempts: 2 });
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 10);
    t.dispatcher.failNext(1, 'Lambda throttled');
    const first = await t.run();
    expect(first.dispatchFailures).toEqual([{ range: 'orders/0/0', error: 'Lambda throttled' }]);
    const r = t.ledger.store('s1').ranges.get('orders/0/0')!;
    expect(r.dispatchedAtMs).toBeUndefined();
    const second = await t.run();
    expect(second.redispatched).toBe(1);
    expect(r.dispatches).toBe(1);

    // A processor took the lease and died: expired lease -> dispatched again.
    Object.assign(r, { status: 'leased', attempts: 1, leaseExpiresAtMs: t.now() + 15_000 });
    expect((await t.run()).redispatched).toBe(0); // still leased
    expect((await t.run()).redispatched).toBe(1);
    // The next attempt fails with an error: attempts == maxAttempts -> parked with the error.
    Object.assign(r, { status: 'failed', attempts: 2, lastError: 'handler threw: bad record' });
    const parked = await t.run();
    expect(parked.parked).toBe(1);
    expect(r).toMatchObject({ status: 'parked' });
    expect(r.lastError).toMatch(/gave up after 2 attempts .*handler threw: bad record/);
    expect((await t.run()).redispatched).toBe(0);
  });

  it('lets only one of two planners at the same instant plan (I5)', async () => {
    const t = setup();
    t.kafka.createTopic('orders', 4);
    for (let p = 0; p < 4; p++) t.kafka.produce('orders', p, 10);
    const [a, b] = await Promise.all([
      planStream(t.deps, t.cfg, { dryRun: false, nowMs: 5000 }),
      planStream({ ...t.deps, ownerToken: 'other' }, t.cfg, { dryRun: false, nowMs: 5000 }),
    ]);
    expect([a.status, b.status].sort()).toEqual(['planned', 'skipped']);
    expect(t.dispatcher.dispatched).toHaveLength(4);
    expect(t.ledger.store('s1').ranges.size).toBe(4);
  });

  it('a dry run returns the plan and writes nothing', async () => {
    const t = setup();
    t.kafka.createTopic('orders', 2);
    t.kafka.produce('orders', 0, 10);
    const before = JSON.stringify([...t.ledger.store('s1').partitions]);
    const rep = await t.run({ dryRun: true });
    expect(rep).toMatchObject({ dryRun: true, registered: 2, rangesPlanned: 1, recordsPlanned: 10 });
    expect(rep.partitions.map((p) => p.action)).toEqual(['planned', 'registered']);
    expect(JSON.stringify([...t.ledger.store('s1').partitions])).toBe(before);
    expect(t.ledger.store('s1').meta).toBeUndefined();
    expect(t.dispatcher.dispatched).toHaveLength(0);
  });

  it('completes after a crash at any step: the next run leaves the ledger as one run would', async () => {
    for (const crashAt of ['leased', 'registered', 'persisted', 'dispatched', 'recorded'] as const) {
      const t = setup();
      t.kafka.createTopic('orders', 2);
      t.kafka.produce('orders', 0, 10);
      t.kafka.produce('orders', 1, 20);
      const crashing = {
        ...t.deps,
        afterStep: (s: string) => {
          if (s === crashAt) throw new Error(`crash at ${s}`);
        },
      };
      await expect(planStream(crashing, t.cfg, { dryRun: false, nowMs: 1000 })).rejects.toThrow(`crash at ${crashAt}`);
      // A run that dies hard (timeout, OOM) keeps its lease until expiry; the next run after that completes.
      const next = await planStream(t.deps, t.cfg, { dryRun: false, nowMs: 1000 + 60_001 });
      const ranges = [...t.ledger.store('s1').ranges.values()].map((r) => [r.partition, r.from, r.until, r.dispatchedAtMs !== undefined]);
      expect({ crashAt, ranges }).toEqual({
        crashAt,
        ranges: [
          [0, 0, 10, true],
          [1, 0, 20, true],
        ],
      });
      const parts = [...t.ledger.store('s1').partitions.values()].map((p) => [p.partition, p.nextFrom]);
      expect(parts).toEqual([
        [0, 10],
        [1, 20],
      ]);
      // Every range reached a processor: re-sent unless the crashed run had recorded its dispatches.
      const sent = t.dispatcher.dispatched.map((r) => `${r.partition}/${r.from}`);
      expect({ crashAt, sent: [...new Set(sent)].sort() }).toEqual({ crashAt, sent: ['0/0', '1/0'] });
      expect({ crashAt, redispatched: next.redispatched }).toEqual({
        crashAt,
        redispatched: crashAt === 'persisted' || crashAt === 'dispatched' ? 2 : 0,
      });
    }
  });

  it('records new ranges as sent in the same write that persists them, and clears a refused one', async () => {
    // Each range its own invocation: the dispatcher refuses one of three.
    const t = setup({ processor: { shareInvocations: false } });
    t.kafka.createTopic('orders', 3);
    for (let p = 0; p < 3; p++) t.kafka.produce('orders', p, 10);
    t.dispatcher.failNext(1, 'Lambda throttled');
    const first = await t.run();
    expect(first).toMatchObject({
      rangesPlanned: 3,
      dispatched: 2,
      dispatchFailures: [{ range: 'orders/0/0', error: 'Lambda throttled' }],
    });
    const ranges = [...t.ledger.store('s1').ranges.values()].sort((a, b) => a.partition - b.partition);
    expect(ranges.map((r) => [r.partition, r.dispatches, r.dispatchedAtMs])).toEqual([
      [0, 0, undefined],
      [1, 1, t.now()],
      [2, 1, t.now()],
    ]);
    expect(t.ledger.store('s1').meta?.confirmedEpoch).toBe(1);
    const second = await t.run();
    expect(second).toMatchObject({ rangesPlanned: 0, redispatched: 1 });
    expect(t.dispatcher.dispatched.map((r) => r.partition).sort()).toEqual([0, 1, 2]);
  });

  it('sends small ranges in one invocation, and clears every range of an invocation the dispatcher refused', async () => {
    const t = setup();
    t.kafka.createTopic('orders', 3);
    for (let p = 0; p < 3; p++) t.kafka.produce('orders', p, 10);
    t.dispatcher.failNext(1, 'Lambda throttled');
    const first = await t.run();
    expect(first).toMatchObject({ rangesPlanned: 3, dispatched: 0, invocations: 1 });
    expect(first.dispatchFailures.map((f) => f.range).sort()).toEqual(['orders/0/0', 'orders/1/0', 'orders/2/0']);
    expect([...t.ledger.store('s1').ranges.values()].map((r) => [r.dispatches, r.dispatchedAtMs])).toEqual(
      new Array(3).fill([0, undefined]),
    );
    const second = await t.run();
    expect(second).toMatchObject({ rangesPlanned: 0, redispatched: 3, invocations: 1 });
    expect(t.dispatcher.invocations.map((inv) => inv.map((r) => r.partition).sort())).toEqual([[0, 1, 2]]);
  });

  it("plans the other topics when one topic's offsets are unavailable this run", async () => {
    const t = setup();
    t.kafka.createTopic('orders-a', 1);
    t.kafka.createTopic('orders-b', 1);
    t.kafka.produce('orders-a', 0, 5);
    t.kafka.produce('orders-b', 0, 6);
    t.kafka.failOffsetsFor('orders-b');
    const rep = await t.run();
    expect(rep.status).toBe('planned');
    expect(payloads(t.dispatcher.dispatched)).toEqual([{ stream: 's1', topic: 'orders-a', partition: 0, from: 0, until: 5 }]);
    expect(rep.partitions.find((p) => p.topic === 'orders-b')).toMatchObject({
      action: 'no-offsets',
      note: expect.stringMatching(/NOT_LEADER/),
    });
    t.kafka.failOffsetsFor('orders-b', false);
    await t.run();
    expect(payloads(t.dispatcher.dispatched)).toContainEqual({ stream: 's1', topic: 'orders-b', partition: 0, from: 0, until: 6 });
  });

  it.each(['LEADER_NOT_AVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION'] as const)(
    'a matching topic created a moment ago (%s) is reported not ready and planned next run, even when it is the only one',
    async (type) => {
      const t = setup();
      t.kafka.createTopic('orders', 2);
      t.kafka.produce('orders', 0, 4);
      t.kafka.notReady('orders', type);
      const first = await t.run();
      expect(first).toMatchObject({ status: 'planned', registered: 0, rangesPlanned: 0 });
      expect(first.partitions).toEqual([
        expect.objectContaining({
          topic: 'orders',
          partition: 0,
          status: 'new',
          action: 'no-offsets',
          note: expect.stringMatching(/offsets unavailable this run/),
        }),
        expect.objectContaining({ topic: 'orders', partition: 1, status: 'new', action: 'no-offsets' }),
      ]);
      expect(t.ledger.store('s1').partitions.size).toBe(0);
      t.kafka.notReady('orders', false);
      const second = await t.run();
      expect(second).toMatchObject({ status: 'planned', registered: 2, rangesPlanned: 1 });
      expect(payloads(t.dispatcher.dispatched)).toEqual([{ stream: 's1', topic: 'orders', partition: 0, from: 0, until: 4 }]);
    },
  );

  it('a known topic whose leader is moving keeps its partitions and open ranges: re-dispatch still happens', async () => {
    const t = setup({ maxAttempts: 5 });
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 4);
    await t.run();
    const r = [...t.ledger.store('s1').ranges.values()][0]!;
    r.status = 'failed';
    r.attempts = 1;
    t.kafka.notReady('orders');
    const rep = await t.run();
    expect(rep).toMatchObject({ status: 'planned', retired: 0, redispatched: 1 });
    expect(t.ledger.store('s1').partitions.get('orders/0')).toMatchObject({ status: 'active' });
  });

  it("plans the partitions whose leaders answered and reports a dead leader's partitions, in the same fenced run", async () => {
    const t = setup();
    t.kafka.createTopic('orders', 3);
    for (const p of [0, 1, 2]) t.kafka.produce('orders', p, 4 + p);
    t.kafka.setUnavailable('orders', 1);
    const first = await t.run();
    expect(first).toMatchObject({ status: 'planned', epoch: 1, registered: 2, rangesPlanned: 2, unavailablePartitions: 1 });
    expect(t.dispatcher.dispatched.map((r) => [r.partition, r.from, r.until])).toEqual([
      [0, 0, 4],
      [2, 0, 6],
    ]);
    expect(first.partitions.find((p) => p.partition === 1)).toMatchObject({
      status: 'new',
      action: 'no-offsets',
      unavailable: 'LEADER_UNREACHABLE',
      note: expect.stringMatching(/^offsets unavailable this run: LEADER_UNREACHABLE: /),
    });
    expect(t.ledger.store('s1').meta?.leaseExpiresAtMs).toBe(0); // the lease is released as usual

    // Known partitions: a later run plans the others and holds the unavailable one where it was.
    t.finishAll();
    t.kafka.setUnavailable('orders', 1, null);
    expect(await t.run()).toMatchObject({ registered: 1, rangesPlanned: 1, unavailablePartitions: 0 });
    t.finishAll();
    for (const p of [0, 1, 2]) t.kafka.produce('orders', p, 2);
    t.kafka.setUnavailable('orders', 2, 'NOT_LEADER');
    const third = await t.run();
    expect(third).toMatchObject({ status: 'planned', epoch: 3, rangesPlanned: 2, unavailablePartitions: 1 });
    expect(third.partitions.find((p) => p.partition === 2)).toMatchObject({
      status: 'active',
      action: 'no-offsets',
      unavailable: 'NOT_LEADER',
      committed: 6,
    });
    t.finishAll();
    t.kafka.setUnavailable('orders', 2, null);
    await t.run();
    expect(t.dispatcher.dispatched.filter((r) => r.partition === 2).map((r) => [r.from, r.until])).toEqual([
      [0, 6],
      [6, 8],
    ]);
  });

  it('runPlanner reports a failing stream without stopping the others', async () => {
    const t = setup();
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 3);
    const broken = {
      ...t.deps,
      metadataFor: async (s: { id: string }) => {
        if (s.id === 'bad') throw new Error('brokers unreachable');
        return t.kafka;
      },
    };
    const reps = await runPlanner(broken, { streams: [t.cfg, stream({ id: 'bad' })], dryRun: false, nowMs: 1 });
    expect(reps.map((r) => [r.stream, r.status])).toEqual([
      ['s1', 'planned'],
      ['bad', 'failed'],
    ]);
    expect(reps[1]?.reason).toMatch(/brokers unreachable/);
  });
});

describe('planner run: a subscription Kafka does not satisfy', () => {
  it('counts listed topics Kafka does not have and warns, planning the others', async () => {
    const { topicPattern: _p, ...rest } = stream();
    const t = setup({ ...rest, topicPattern: undefined, topics: ['orders', 'refunds', 'chargebacks'] } as Partial<StreamConfigInput>);
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 5);
    const rep = await t.run();
    expect(rep).toMatchObject({ status: 'planned', rangesPlanned: 1, topicsMissing: 2 });
    expect(rep.warnings).toEqual(['topics refunds, chargebacks of stream s1 do not exist in Kafka (topics in the stream config)']);
  });

  it('counts a pattern matching no topic as 1, and nothing once a topic matches', async () => {
    const t = setup();
    expect(await t.run()).toMatchObject({
      status: 'planned',
      topicsMissing: 1,
      warnings: ['topicPattern /orders.*/ of stream s1 matches no topic in Kafka'],
    });
    t.kafka.createTopic('orders-eu', 1);
    expect(await t.run()).toMatchObject({ topicsMissing: 0, warnings: [] });
  });
});
