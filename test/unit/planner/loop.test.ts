/**
 * The planner loop on the in-memory ledger and Kafka with a virtual clock: ticks every interval
 * until the deadline, hand-over to a successor at the next due tick (no gap, no tick twice),
 * overlapping invocations (one ticks, one waits, a third leaves), a holder that dies mid-loop
 * replaced once its lease expires, and a tick that overruns its interval.
 */
import { parseStreamConfig } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { runPlannerLoop, type LoopDeps, type TickRecord } from '../../../lib/planner/loop';
import type { Ledger } from '../../../lib/ports/ledger';
import { finishAllRanges } from '../../support/finish-ranges';
import { virtualClock, type VirtualClock } from '../../support/virtual-clock';

const T0 = 1_000_000;
const cfg = parseStreamConfig(
  { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 1000, startingOffsets: 'earliest' },
  'test',
);

function setup() {
  const kafka = createMemoryKafka();
  kafka.createTopic('orders', 2);
  const ledger = createMemoryLedger();
  const dispatcher = createRecordingDispatcher();
  const clock = virtualClock(T0);
  const ticks: Array<TickRecord & { owner: string }> = [];
  const deps = (over: Partial<LoopDeps> = {}): LoopDeps => ({
    ledger,
    dispatcher,
    metadataFor: async () => kafka,
    plannerLeaseMs: 60_000,
    clock: { nowMs: async () => clock.nowMs(), localMs: () => clock.nowMs(), sleep: (ms) => clock.sleep(ms) },
    ...over,
  });
  /** One scheduled invocation: `owner` loops until `deadline`. */
  const invocation = (owner: string, deadlineMs: number, over: Partial<LoopDeps> = {}) =>
    runPlannerLoop(deps(over), { streams: [cfg], ownerToken: owner, deadlineMs }, (t) => void ticks.push({ ...t, owner }));
  /** Processors: every dispatched range finishes at once. */
  const finishAll = () => finishAllRanges(ledger, 's1');
  return { kafka, ledger, dispatcher, clock, ticks, invocation, finishAll, deps };
}

/** Produces a record on each partition every 100 ms and finishes every dispatched range, until stopped. */
function traffic(t: ReturnType<typeof setup>, clock: VirtualClock): { stop(): void } {
  let stopped = false;
  void (async () => {
    while (!stopped) {
      await clock.sleep(100);
      t.kafka.produce('orders', 0, 1);
      t.kafka.produce('orders', 1, 1);
      t.finishAll();
    }
  })();
  return {
    stop: () => {
      stopped = true;
    },
  };
}

/** Every partition's ranges, in order: contiguous from 0, never overlapping (nothing planned twice or skipped). */
function expectContiguous(ledger: ReturnType<typeof createMemoryLedger>) {
  for (const p of [0, 1]) {
    const ranges = ledger
      .allRanges('s1')
      .filter((r) => r.partition === p)
      .sort((a, b) => a.from - b.from);
    let at = 0;
    for (const r of ranges) {
      expect(r.from).toBe(at);
      at = r.until;
    }
  }
}

describe('planner loop', () => {
  it('ticks every interval while a tick and the margin fit, then leaves the loop with the next due time', async () => {
    const t = setup();
    const [rep] = await t.clock.run(t.invocation('a', T0 + 10_000));
    // Due at T0..T0+8000: the tick at T0+9000 would end inside the 2 s margin.
    expect(t.ticks.map((x) => x.dueMs - T0)).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000]);
    expect(t.ticks.every((x) => x.lagMs === 0 && x.report.status === 'planned')).toBe(true);
    expect(rep).toMatchObject({ stream: 's1', outcome: 'time-up', ticks: 9, failedTicks: 0, waitedMs: 0, maxTickLagMs: 0 });
    expect(rep?.handoverGapMs).toBeUndefined();
    expect(t.ledger.store('s1').meta?.loop).toEqual({ lastTickAtMs: T0 + 8000, nextTickDueMs: T0 + 9000 });
    // Each tick was a planner run of its own (its own epoch).
    expect(t.ledger.store('s1').meta?.epoch).toBe(9);
  });

  it('keeps the planner lease between ticks (one lease write a tick), releases it at the end, and after the current tick for an operator who asks', async () => {
    const t = setup();
    const calls: string[] = [];
    const counted: Ledger = new Proxy(t.ledger, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (prop === 'acquirePlannerLease' || prop === 'releasePlannerLease') calls.push(String(prop));
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const loop = t.invocation('a', T0 + 10_000, { ledger: counted as LoopDeps['ledger'] });
    // An operator asks for the lease during the fifth tick's interval (as withOperatorLease does when refused).
    void (async () => {
      await t.clock.sleep(4500);
      await t.ledger.requestPlannerLease({ stream: 's1', ownerToken: 'operator:o' });
    })();
    const [rep] = await t.clock.run(loop);
    expect(rep).toMatchObject({ ticks: 9 });
    // 9 takes; one release for the operator after the tick it asked during, one at the end.
    expect(calls.filter((c) => c === 'acquirePlannerLease')).toHaveLength(9);
    expect(calls.filter((c) => c === 'releasePlannerLease')).toHaveLength(2);
    expect(calls.indexOf('releasePlannerLease')).toBe(6); // after the sixth tick, the first to see the request
    expect(t.ledger.store('s1').meta).toMatchObject({ leaseExpiresAtMs: 0, confirmedEpoch: 9 });
    expect(t.ledger.store('s1').meta?.leaseWanted).toBeUndefined();
  });

  it('hands over to the next invocation at the next due tick: no tick twice, no gap over one interval, nothing planned twice', async () => {
    const t = setup();
    const load = traffic(t, t.clock);
    const a = t.invocation('a', T0 + 20_000);
    const b = (async () => {
      await t.clock.sleep(5500);
      return t.invocation('b', T0 + 5500 + 20_000);
    })();
    const [[ra], [rb]] = await t.clock.run(Promise.all([a, b]));
    load.stop();
    expect(ra).toMatchObject({ outcome: 'handed-over', ticks: 7 });
    expect(rb).toMatchObject({ outcome: 'time-up', handoverGapMs: 1000 });
    expect(rb?.waitedMs).toBeGreaterThan(0);
    expect(rb?.waitedMs).toBeLessThanOrEqual(1000);
    const dues = t.ticks.map((x) => x.dueMs - T0);
    expect(t.ticks.filter((x) => x.owner === 'a').map((x) => x.dueMs - T0)).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000]);
    expect(t.ticks.find((x) => x.owner === 'b')?.dueMs).toBe(T0 + 7000);
    // One tick per interval across the hand-over, in order.
    expect(dues).toEqual(dues.map((_, i) => i * 1000));
    const starts = t.ticks.map((x) => x.startedAtMs);
    expect(Math.max(...starts.slice(1).map((s, i) => s - (starts[i] as number)))).toBe(1000);
    expectContiguous(t.ledger);
    expect(t.dispatcher.dispatched.length).toBeGreaterThan(20);
  });

  it('of invocations that start together one ticks, one waits as the successor and a third leaves at once', async () => {
    const t = setup();
    const [[ra], [rb], [rc]] = await t.clock.run(
      Promise.all([t.invocation('a', T0 + 10_000), t.invocation('b', T0 + 10_000), t.invocation('c', T0 + 10_000)]),
    );
    const reps = [ra, rb, rc];
    expect(reps.filter((r) => r?.outcome === 'not-taken')).toHaveLength(1);
    expect(reps.find((r) => r?.outcome === 'not-taken')?.reason).toMatch(/another waits to take it over/);
    // The first hands over after its first tick; the second ticks from the next due time on.
    expect(reps.filter((r) => r?.outcome === 'handed-over').map((r) => r?.ticks)).toEqual([1]);
    const dues = t.ticks.map((x) => x.dueMs - T0);
    expect(dues).toEqual(dues.map((_, i) => i * 1000));
  });

  it('asks again when the loop was handed over between its refusal and the successor record (not taken by nobody)', async () => {
    const t = setup();
    // The store's answer in that race: refused, then the holder found gone when recording the successor.
    let raced = 0;
    const racing: Ledger = new Proxy(t.ledger, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== 'takePlannerLoop' || typeof v !== 'function') return v;
        return (...args: unknown[]) =>
          raced++ === 0
            ? Promise.resolve({ taken: false, holder: { lastTickAtMs: T0 - 1000, nextTickDueMs: T0 } })
            : (v as (...a: unknown[]) => unknown).apply(target, args);
      },
    });
    const [rep] = await t.clock.run(t.invocation('b', T0 + 5000, { ledger: racing as LoopDeps['ledger'] }));
    expect(raced).toBe(2);
    expect(rep).toMatchObject({ outcome: 'time-up' });
    expect(rep?.ticks).toBeGreaterThan(0);
  });

  it('replaces a holder that died mid-loop once its lease expires, without planning anything twice', async () => {
    const t = setup();
    const load = traffic(t, t.clock);
    // Invocation a stops answering after its third tick, as a killed process would (its loop lease stays).
    let calls = 0;
    const dying: Ledger = new Proxy(t.ledger, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (prop === 'acquirePlannerLease' && ++calls > 3) return new Promise(() => undefined);
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    void t.invocation('a', T0 + 60_000, { ledger: dying as LoopDeps['ledger'] });
    const b = (async () => {
      await t.clock.sleep(10_000);
      return t.invocation('b', T0 + 10_000 + 60_000);
    })();
    const [rb] = await t.clock.run(b);
    load.stop();
    expect(calls).toBeGreaterThan(3); // the fault fired: a's fourth tick hung
    // b waited as the successor until a's 30 s lease expired (taken at T0 + 30 s), then ticked.
    expect(rb?.outcome).toBe('time-up');
    expect(rb?.waitedMs).toBeGreaterThanOrEqual(20_000);
    const first = t.ticks.find((x) => x.owner === 'b');
    expect(first?.startedAtMs).toBeGreaterThan(T0 + 30_000);
    expect(first?.startedAtMs).toBeLessThanOrEqual(T0 + 30_000 + 250);
    expectContiguous(t.ledger);
  });

  it("times ticks on its own clock while the store clock's estimate moves, and records store times for the next holder", async () => {
    const t = setup();
    // The store is 5 s ahead at first; after the third tick the estimate moves 800 ms further.
    let offsetMs = 5000;
    const store = {
      nowMs: async () => t.clock.nowMs() + offsetMs,
      localMs: () => t.clock.nowMs(),
      sleep: (ms: number) => t.clock.sleep(ms),
    };
    const invocation = runPlannerLoop(t.deps({ clock: store }), { streams: [cfg], ownerToken: 'a', deadlineMs: T0 + 8000 }, (x) => {
      t.ticks.push({ ...x, owner: 'a' });
      if (t.ticks.length === 3) offsetMs += 800;
    });
    await t.clock.run(invocation);
    expect(t.ticks.map((x) => x.startedAtMs - T0)).toEqual([0, 1000, 2000, 3000, 4000, 5000, 6000]);
    expect(t.ticks.map((x) => x.storeStartedAtMs - x.startedAtMs)).toEqual([5000, 5000, 5000, 5800, 5800, 5800, 5800]);
    // The ledger's times are the store's: the last tick, and the next due one for whoever takes over.
    expect(t.ledger.store('s1').meta?.loop).toEqual({ lastTickAtMs: T0 + 6000 + 5800, nextTickDueMs: T0 + 7000 + 5800 });
    expect(t.ledger.store('s1').meta?.lastRunAtMs).toBe(T0 + 6000 + 5800);
  });

  it('ticks once per invocation when the interval is not shorter than the schedule period, leaving the next tick to the next schedule', async () => {
    const t = setup();
    const once = runPlannerLoop(
      t.deps(),
      { streams: [cfg], ownerToken: 'a', deadlineMs: T0 + 90_000, schedulePeriodMs: 1000 },
      (x) => void t.ticks.push({ ...x, owner: 'a' }),
    );
    const [rep] = await t.clock.run(once);
    expect(rep).toMatchObject({ outcome: 'time-up', ticks: 1, reason: expect.stringMatching(/one tick per invocation/) });
    // It returned right after its tick, not at its deadline.
    expect(t.clock.nowMs()).toBe(T0);
    expect(t.ledger.store('s1').meta?.loop).toEqual({ lastTickAtMs: T0, nextTickDueMs: T0 + 1000 });
    // A shorter interval than the period loops as usual.
    const loops = runPlannerLoop(t.deps(), { streams: [cfg], ownerToken: 'b', deadlineMs: T0 + 6000, schedulePeriodMs: 60_000 });
    const [looped] = await t.clock.run(loops);
    expect(looped?.ticks).toBeGreaterThan(1);
  });

  it('follows a tick that overran its interval at once, with its lag, and not with a burst', async () => {
    const t = setup();
    let n = 0;
    const slow = {
      dispatch: async (...args: Parameters<typeof t.dispatcher.dispatch>) => {
        // The third tick's dispatch takes 2.5 intervals.
        if (++n === 3) t.clock.advance(2500);
        return t.dispatcher.dispatch(...args);
      },
    };
    t.kafka.produce('orders', 0, 5);
    const load = traffic(t, t.clock);
    await t.clock.run(t.invocation('a', T0 + 20_000, { dispatcher: slow }));
    load.stop();
    const dues = t.ticks.map((x) => x.dueMs - T0);
    const starts = t.ticks.map((x) => x.startedAtMs - T0);
    expect(n).toBeGreaterThanOrEqual(3);
    // Ticks at 0, 1000, 2000 (ends at 4500), then at once at 4500 (due then), then 5500, ...
    expect(dues.slice(0, 5)).toEqual([0, 1000, 2000, 4500, 5500]);
    expect(starts.slice(0, 5)).toEqual([0, 1000, 2000, 4500, 5500]);
    expect(t.ticks[2]?.durationMs).toBe(2500);
    // The slow tick is expected again, and the margin grew to twice it: the last tick started by 20000 - 2500 - 5000.
    expect(Math.max(...starts)).toBe(12_500);
  });
});
