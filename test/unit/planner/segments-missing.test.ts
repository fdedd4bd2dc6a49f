/**
 * SegmentsMissing (lib/planner/plan/segments.ts): a continuous stream's partitions without a live
 * segment at the run's `nowMs`, computed by the pure planner, reported by the run, published as the
 * planner metric the `segments-missing` alarm watches (the most of a loop window's ticks).
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { mergeReports } from '../../../lib/planner/loop-metrics';
import { recordPlannerMetrics } from '../../../lib/planner/metrics';
import { segmentLive } from '../../../lib/planner/plan/segments';
import { emptyReport, planStream, type PlannerDeps } from '../../../lib/planner/run';
import type { RangeState } from '../../../lib/ports/ledger-state';
import { OPEN_UNTIL } from '../../../lib/ranges';

const NOW = 1_000_000;
const LEASE = 10_000;

const range = (over: Partial<RangeState>): RangeState => ({
  stream: 's1',
  topic: 'orders',
  partition: 0,
  from: 0,
  until: OPEN_UNTIL,
  status: 'planned',
  epoch: 1,
  plannedAtMs: NOW - 60_000,
  dispatches: 1,
  attempts: 0,
  progress: 0,
  ...over,
});

describe('segmentLive: whether an open segment range has a segment, or one on its way', () => {
  it.each<[string, Partial<RangeState>, boolean]>([
    ['leased, the lease runs', { status: 'leased', attempts: 1, leaseExpiresAtMs: NOW + 3000 }, true],
    ['leased, the lease ends now', { status: 'leased', attempts: 1, leaseExpiresAtMs: NOW }, true],
    ['leased, the lease ran out', { status: 'leased', attempts: 1, leaseExpiresAtMs: NOW - 1, dispatchedAtMs: NOW - 600_000 }, false],
    [
      'leased, ran out, sent again since (the planner waits for that dispatch)',
      { status: 'leased', attempts: 2, leaseExpiresAtMs: NOW - 5000, dispatchedAtMs: NOW - 2000, redispatchedAtAttempts: 2 },
      true,
    ],
    ['planned, dispatched within the lease time (new, or handed over)', { dispatchedAtMs: NOW - LEASE }, true],
    ['planned, not taken within the lease time', { dispatchedAtMs: NOW - LEASE - 1 }, false],
    ['planned, given back (never sent since)', { dispatchedAtMs: undefined }, false],
    ['failed', { status: 'failed', attempts: 1, dispatchedAtMs: NOW - 600_000, lastError: 'boom' }, false],
    ['failed, sent again since', { status: 'failed', attempts: 1, dispatchedAtMs: NOW - 1000, redispatchedAtAttempts: 1 }, true],
    [
      'failed, sent again too long ago',
      { status: 'failed', attempts: 1, dispatchedAtMs: NOW - LEASE - 1, redispatchedAtAttempts: 1 },
      false,
    ],
    ['parked', { status: 'parked', attempts: 3, dispatchedAtMs: NOW - 1000 }, false],
  ])('%s', (_name, over, live) => {
    expect(segmentLive(range(over), NOW, LEASE)).toBe(live);
  });
});

function setup(over: Partial<StreamConfigInput> = {}) {
  const kafka = createMemoryKafka();
  const ledger = createMemoryLedger();
  const dispatcher = createRecordingDispatcher();
  const deps: PlannerDeps = { ledger, dispatcher, metadataFor: async () => kafka, plannerLeaseMs: 60_000 };
  const cfg = parseStreamConfig(
    { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 1000, continuous: {}, ...over },
    'test',
  );
  let now = NOW;
  const run = (at: number) => {
    now = at;
    return planStream(deps, cfg, { dryRun: false, nowMs: now });
  };
  const ranges = () => [...ledger.store('s1').ranges.values()].filter((r) => r.status !== 'done');
  const rangeOf = (partition: number) => ranges().find((r) => r.partition === partition) as RangeState;
  /** A segment takes a partition's range: leased until `untilMs` (the memory store's state, as a lease leaves it). */
  const take = (partition: number, untilMs: number) => {
    const r = rangeOf(partition);
    r.status = 'leased';
    r.attempts += 1;
    r.leaseToken = `segment-${partition}-${r.attempts}`;
    r.leaseExpiresAtMs = untilMs;
  };
  /** The holder renews its lease (a commit or a heartbeat). */
  const renew = (partition: number, untilMs: number) => void (rangeOf(partition).leaseExpiresAtMs = untilMs);
  return { kafka, ledger, dispatcher, deps, cfg, run, rangeOf, take, renew };
}

describe('a continuous stream run reports its partitions without a live segment', () => {
  it('none while segments start and hold their leases; one not taken in the lease time, or a lease run out, until sent again', async () => {
    const t = setup();
    t.kafka.createTopic('orders', 3);
    t.kafka.produce('orders', 0, 10);
    const first = await t.run(NOW);
    // The first run planned the open segment ranges (one invocation for the group) and saw none before.
    expect(first).toMatchObject({ status: 'planned', rangesPlanned: 3, segmentsMissing: 0 });
    expect(t.dispatcher.invocations).toHaveLength(1);
    expect(t.rangeOf(0).until).toBe(OPEN_UNTIL);

    // Dispatched a second ago, not yet taken: on their way.
    expect((await t.run(NOW + 1000)).segmentsMissing).toBe(0);

    // Partitions 0 and 1 are taken; partition 2's dispatch is not within the lease time (10 s).
    t.take(0, NOW + 20_000);
    t.take(1, NOW + 20_000);
    const late = await t.run(NOW + 10_001);
    expect(late.segmentsMissing).toBe(1);
    expect(late.redispatched).toBe(1);
    // Sent again: on its way once more.
    expect((await t.run(NOW + 11_000)).segmentsMissing).toBe(0);

    // Partition 0's segment dies: its lease runs out (not renewed), and the next run counts and resends it.
    t.renew(1, NOW + 40_000);
    t.take(2, NOW + 40_000);
    const dead = await t.run(NOW + 20_001);
    expect(dead.segmentsMissing).toBe(1);
    expect(t.rangeOf(0).redispatchedAtAttempts).toBe(t.rangeOf(0).attempts);
    expect((await t.run(NOW + 21_000)).segmentsMissing).toBe(0);
  });

  it('counts a partition waiting for a slot under maxConcurrency (it has no segment at all)', async () => {
    const t = setup({ maxConcurrency: 2 });
    t.kafka.createTopic('orders', 3);
    const first = await t.run(NOW);
    expect(first.rangesPlanned).toBe(2);
    expect(first.partitions.filter((p) => p.action === 'waiting-for-concurrency')).toHaveLength(1);
    expect(first.segmentsMissing).toBe(1);
  });

  it("is not capped by the processor's concurrency when its segments run on a function of their own (exempt)", async () => {
    const t = setup();
    t.kafka.createTopic('orders', 3);
    const capped = { ...t.deps, processorConcurrency: { limit: 1, streams: 1 } };
    const rep = await planStream(capped, t.cfg, { dryRun: false, nowMs: NOW });
    expect([rep.rangesPlanned, rep.segmentsMissing]).toEqual([1, 2]);
    const exempt = { ...t.deps, processorConcurrency: { limit: 1, streams: 1, exempt: ['s1'] } };
    const next = await planStream(exempt, t.cfg, { dryRun: false, nowMs: NOW + 1000 });
    expect([next.rangesPlanned, next.segmentsMissing]).toEqual([2, 0]);
  });

  it('a micro-batch stream reports none (no metric)', async () => {
    const kafka = createMemoryKafka();
    kafka.createTopic('orders', 1);
    kafka.produce('orders', 0, 5);
    const deps: PlannerDeps = {
      ledger: createMemoryLedger(),
      dispatcher: createRecordingDispatcher(),
      metadataFor: async () => kafka,
      plannerLeaseMs: 60_000,
    };
    const cfg = parseStreamConfig({ id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'] }, 'test');
    const rep = await planStream(deps, cfg, { dryRun: false, nowMs: NOW });
    expect(rep.rangesPlanned).toBe(1);
    expect(rep).not.toHaveProperty('segmentsMissing');
  });
});

describe('the SegmentsMissing metric', () => {
  function recording() {
    const added: Array<[string, number]> = [];
    const fake = {
      addMetric: (name: string, _unit: string, value: number) => void added.push([name, value]),
      addDimensions: () => undefined,
      publishStoredMetrics: () => undefined,
      singleMetric: () => fake,
    };
    return { metrics: fake as unknown as Metrics, added };
  }

  it("is published for a continuous stream's run only", () => {
    const r = recording();
    recordPlannerMetrics(r.metrics, [{ ...emptyReport('live', false), segmentsMissing: 2 }, emptyReport('batch', false)]);
    expect(r.added.filter(([name]) => name === 'SegmentsMissing')).toEqual([['SegmentsMissing', 2]]);
  });

  it("a loop window publishes the most of its ticks (a dead segment counts until the tick sending it again), not the last's", () => {
    const tick = (segmentsMissing?: number) => ({
      ...emptyReport('live', false),
      ...(segmentsMissing !== undefined ? { segmentsMissing } : {}),
    });
    expect(mergeReports([tick(0), tick(3), tick(0)]).segmentsMissing).toBe(3);
    // A skipped tick (another run held the lease) reports none: the others count.
    expect(mergeReports([tick(1), tick()]).segmentsMissing).toBe(1);
    expect(mergeReports([tick(), tick()])).not.toHaveProperty('segmentsMissing');
  });
});

describe("a continuous stream's segment payloads", () => {
  it("name the stream's partitions, which share its rate limit; a partition added is counted from the next run", async () => {
    const t = setup({ maxOffsetsPerTrigger: 600 });
    t.kafka.createTopic('orders', 3);
    await t.run(NOW);
    expect(t.dispatcher.dispatched.map((r) => [r.partition, r.streamPartitions])).toEqual([
      [0, 3],
      [1, 3],
      [2, 3],
    ]);
    t.kafka.addPartitions('orders', 1);
    await t.run(NOW + 1000);
    expect(t.dispatcher.dispatched.slice(3).map((r) => [r.partition, r.streamPartitions])).toEqual([[3, 4]]);
  });

  it('are not given to micro-batch ranges', async () => {
    const t = setup({ continuous: undefined });
    t.kafka.createTopic('orders', 2);
    t.kafka.produce('orders', 0, 10);
    await t.run(NOW);
    expect(t.dispatcher.dispatched.length).toBeGreaterThan(0);
    expect(t.dispatcher.dispatched.every((r) => r.streamPartitions === undefined)).toBe(true);
  });
});

describe('a micro-batch stream switched to continuous', () => {
  it('finishes its range in flight first, then each partition gets its open segment range from where the micro-batches ended', async () => {
    const t = setup({ continuous: undefined });
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 10);
    await t.run(NOW);
    expect(t.rangeOf(0)).toMatchObject({ from: 0, until: 10 });
    const switched = parseStreamConfig(
      { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 1000, continuous: {} },
      'test',
    );
    const plan = (at: number) => planStream(t.deps, switched, { dryRun: false, nowMs: at });
    // The micro-batch range is still in flight: nothing else is planned for its partition.
    expect((await plan(NOW + 1000)).rangesPlanned).toBe(0);
    // Its processor finishes it.
    const store = t.ledger.store('s1');
    Object.assign(t.rangeOf(0), { status: 'done', progress: 10 });
    Object.assign(store.partitions.get('orders/0')!, { committed: 10 });
    expect((await plan(NOW + 2000)).rangesPlanned).toBe(1);
    expect(t.rangeOf(0)).toMatchObject({ from: 10, until: OPEN_UNTIL });
    expect(t.dispatcher.dispatched.at(-1)).toMatchObject({ from: 10, until: OPEN_UNTIL, streamPartitions: 1 });
  });
});

describe('a continuous stream switched back to micro-batches', () => {
  const microBatch = parseStreamConfig(
    { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 1000 },
    'test',
  );

  it('ends each open segment range where it stands, held or not, then plans micro-batches from there', async () => {
    const t = setup();
    t.kafka.createTopic('orders', 3);
    t.kafka.produce('orders', 0, 50);
    t.kafka.produce('orders', 1, 50);
    await t.run(NOW);
    // Segments committed 20 and 30 records of partitions 0 and 1; partition 1's is still held; partition 2's was never taken.
    const store = t.ledger.store('s1');
    for (const [p, progress] of [
      [0, 20],
      [1, 30],
    ] as const) {
      t.take(p, NOW + 5_000);
      Object.assign(t.rangeOf(p), { progress });
      store.partitions.get(`orders/${p}`)!.committed = progress;
    }
    Object.assign(t.rangeOf(0), { status: 'planned', leaseExpiresAtMs: 0 });
    const sent = t.dispatcher.dispatched.length;
    const plan = (at: number) => planStream(t.deps, microBatch, { dryRun: false, nowMs: at });

    const ending = await plan(NOW + 1000);
    expect(ending).toMatchObject({ status: 'planned', segmentsEnded: 3, rangesPlanned: 0, redispatched: 0 });
    expect(t.dispatcher.dispatched).toHaveLength(sent);
    expect([...store.ranges.values()].filter((r) => r.until === OPEN_UNTIL)).toEqual([]);
    expect([0, 1, 2].map((p) => store.partitions.get(`orders/${p}`))).toMatchObject([
      { committed: 20, nextFrom: 20 },
      { committed: 30, nextFrom: 30 },
      { committed: 0, nextFrom: 0 },
    ]);

    const next = await plan(NOW + 2000);
    expect(next.segmentsEnded).toBeUndefined();
    expect(t.dispatcher.dispatched.slice(sent).map((r) => [r.partition, r.from, r.until, r.streamPartitions])).toEqual([
      [0, 20, 50, undefined],
      [1, 30, 50, undefined],
    ]);
  });

  it('leaves a range whose folded batch is pending to a holder to finish first (sent again once its lease ran out), then ends it', async () => {
    const t = setup();
    t.kafka.createTopic('orders', 1);
    t.kafka.produce('orders', 0, 50);
    await t.run(NOW);
    t.take(0, NOW + 500);
    Object.assign(t.rangeOf(0), { progress: 10, pendingUntil: 25 });
    t.ledger.store('s1').partitions.get('orders/0')!.committed = 10;
    const plan = (at: number) => planStream(t.deps, microBatch, { dryRun: false, nowMs: at });
    const sent = t.dispatcher.dispatched.length;

    const waiting = await plan(NOW + 1000);
    expect(waiting.segmentsEnded).toBeUndefined();
    expect(waiting.redispatched).toBe(1);
    expect(t.dispatcher.dispatched.slice(sent)).toMatchObject([{ from: 0, until: OPEN_UNTIL }]);
    // A processor finishes the batch and gives the range back.
    Object.assign(t.rangeOf(0), { status: 'planned', progress: 25, pendingUntil: undefined, leaseExpiresAtMs: 0 });
    t.ledger.store('s1').partitions.get('orders/0')!.committed = 25;
    expect(await plan(NOW + 2000)).toMatchObject({ segmentsEnded: 1, redispatched: 0 });
    expect(t.ledger.store('s1').partitions.get('orders/0')).toMatchObject({ committed: 25, nextFrom: 25 });
  });
});
