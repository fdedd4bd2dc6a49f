/**
 * The tick chain on the in-memory ledger and Kafka with a virtual clock and a virtual queue: each
 * message ticks once at its due time and sends the next; duplicates and stale messages tick
 * nothing; the watchdog starts a chain, leaves a live one alone and restarts a broken one; a stream
 * no longer chained ends its chain.
 */
import { parseStreamConfig, type StreamConfig } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { runChainTick, watchTickChains, type ChainDeps, type ChainTickReport } from '../../../lib/planner/tick-chain';
import type { ChainTick } from '../../../lib/ports/tick-queue';
import { finishAllRanges } from '../../support/finish-ranges';
import { virtualClock } from '../../support/virtual-clock';

const T0 = 1_000_000;
const SETTINGS = { chainFromMs: 5000, schedulePeriodMs: 60_000 };
const cfg = parseStreamConfig(
  { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 10_000, startingOffsets: 'earliest' },
  'test',
);

/** A virtual queue: each message is delivered (`copies` times) once its delay has passed on the virtual clock. */
function setup(o: { copies?: (t: ChainTick) => number; failSend?: (t: ChainTick) => boolean } = {}) {
  const kafka = createMemoryKafka();
  kafka.createTopic('orders', 2);
  const ledger = createMemoryLedger();
  const clock = virtualClock(T0);
  const sent: Array<ChainTick & { delayMs: number; atMs: number }> = [];
  const ticks: Array<ChainTickReport & { atMs: number }> = [];
  const deliveries: Promise<unknown>[] = [];
  let stopped = false;
  const deps: ChainDeps = {
    ledger,
    dispatcher: createRecordingDispatcher(),
    metadataFor: async () => kafka,
    plannerLeaseMs: 60_000,
    clock: { nowMs: async () => clock.nowMs(), sleep: (ms) => clock.sleep(ms) },
    tickQueue: {
      async sendTick(tick, delayMs) {
        if (o.failSend?.(tick)) throw new Error('queue unreachable');
        sent.push({ ...tick, delayMs, atMs: clock.nowMs() });
        if (stopped) return;
        for (let i = 0; i < (o.copies?.(tick) ?? 1); i++) deliveries.push(deliver(tick, delayMs));
      },
    },
  };
  const deliver = async (tick: ChainTick, delayMs: number, stream: StreamConfig | undefined = cfg) => {
    await clock.sleep(delayMs);
    if (stopped) return;
    const t = await runChainTick(deps, stream, tick, { ...SETTINGS, ownerToken: `inv-${tick.seq}` });
    ticks.push({ ...t, atMs: clock.nowMs() });
  };
  /** Lets the chain run until `untilMs` (virtual), traffic flowing and ranges finishing, then stops it. */
  const runUntil = async (untilMs: number) => {
    await clock.run(
      (async () => {
        while (clock.nowMs() < untilMs) {
          await clock.sleep(500);
          kafka.produce('orders', 0, 5);
          kafka.produce('orders', 1, 5);
          finishAllRanges(ledger, 's1');
        }
        stopped = true;
        await Promise.all(deliveries);
      })(),
    );
  };
  return { kafka, ledger, clock, deps, sent, ticks, deliver, runUntil };
}

describe('the tick chain', () => {
  it('ticks once per interval at its due time, each tick claiming its number and sending the next', async () => {
    const t = setup();
    const [watch] = await watchTickChains(t.deps, [cfg], SETTINGS);
    expect(watch).toMatchObject({ stream: 's1', outcome: 'started', next: { seq: 1, dueMs: T0, delayMs: 0 } });
    await t.runUntil(T0 + 60_000);
    const ticked = t.ticks.filter((x) => x.outcome === 'ticked');
    expect(ticked.map((x) => x.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // On time: each run started at its due time, one interval after the last, whatever the whole-second delay.
    expect(ticked.map((x) => x.lagMs)).toEqual(ticked.map(() => 0));
    expect(t.sent.slice(1).map((m) => m.dueMs - T0)).toEqual([10_000, 20_000, 30_000, 40_000, 50_000, 60_000, 70_000]);
    expect(t.sent.every((m) => m.delayMs % 1000 === 0 && m.atMs + m.delayMs <= m.dueMs)).toBe(true);
    // Every tick was a planner run of its own (a new epoch), and planned what had arrived.
    expect(ticked.map((x) => x.report?.epoch)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // Each tick's message named when the tick before started: the gap the no-tick alarm watches.
    expect(ticked.map((x) => x.gapMs)).toEqual([undefined, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000]);
    expect(ticked.every((x) => x.report?.status === 'planned')).toBe(true);
    expect((await t.ledger.readMeta('s1'))?.tickChain).toEqual({
      seq: 7,
      lastTickAtMs: T0 + 60_000,
      claimedBy: expect.stringMatching(/^inv-7:/),
    });
  });

  it('ticks nothing for a duplicate delivery: one message of each number claims its tick', async () => {
    const t = setup({ copies: (m) => (m.seq % 2 === 0 ? 2 : 1) });
    await watchTickChains(t.deps, [cfg], SETTINGS);
    await t.runUntil(T0 + 40_000);
    const bySeq = (seq: number) => t.ticks.filter((x) => x.seq === seq).map((x) => x.outcome);
    expect([bySeq(1), bySeq(2), bySeq(3), bySeq(4)]).toEqual([['ticked'], ['ticked', 'duplicate'], ['ticked'], ['ticked', 'duplicate']]);
    // One chain, not two: each number was sent once.
    const seqs = t.sent.map((m) => m.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const ticked = t.ticks.filter((x) => x.outcome === 'ticked');
    expect(ticked.map((x) => x.report?.epoch)).toEqual(ticked.map((_, i) => i + 1));
    expect(t.ticks.filter((x) => x.outcome === 'duplicate').length).toBeGreaterThanOrEqual(2);
  });

  it("leaves a live chain alone, restarts a broken one, and a broken chain's late message then ticks nothing", async () => {
    // The message of tick 3 is never sent: the chain breaks after tick 2.
    const t = setup({ failSend: (m) => m.seq === 3 });
    await watchTickChains(t.deps, [cfg], SETTINGS);
    await t.runUntil(T0 + 15_000);
    expect(t.ticks.map((x) => [x.seq, x.outcome, x.sendError])).toEqual([
      [1, 'ticked', undefined],
      [2, 'ticked', 'Error: queue unreachable'],
    ]);
    t.clock.advance(5_000);
    expect((await watchTickChains(t.deps, [cfg], SETTINGS))[0]).toMatchObject({ outcome: 'alive', lastTickAtMs: T0 + 10_000 });
    t.clock.advance(40_000);
    const [restart] = await watchTickChains(t.deps, [cfg], SETTINGS);
    expect(restart).toMatchObject({ outcome: 'started', lastTickAtMs: T0 + 10_000, next: { seq: 3, delayMs: 0 } });
    // The restart's message and, late, the lost one: only one ticks.
    const late = await runChainTick(t.deps, cfg, { stream: 's1', seq: 3, dueMs: T0 + 20_000 }, { ...SETTINGS, ownerToken: 'late' });
    const restarted = await runChainTick(t.deps, cfg, restart?.next as ChainTick, { ...SETTINGS, ownerToken: 'restart' });
    expect([late.outcome, restarted.outcome]).toEqual(['ticked', 'duplicate']);
  });

  it('ends the chain of a stream no longer configured or no longer chained, sending nothing', async () => {
    const t = setup();
    const tick = { stream: 's1', seq: 1, dueMs: T0 };
    const fast = { ...cfg, triggerIntervalMs: 1000 };
    expect(await runChainTick(t.deps, undefined, tick, { ...SETTINGS, ownerToken: 'a' })).toMatchObject({ outcome: 'ended' });
    expect(await runChainTick(t.deps, fast, tick, { ...SETTINGS, ownerToken: 'a' })).toMatchObject({
      outcome: 'ended',
      reason: expect.stringContaining('no longer ticked by the tick chain'),
    });
    expect(await watchTickChains(t.deps, [fast], SETTINGS)).toEqual([]);
    expect(t.sent).toEqual([]);
    expect(await t.ledger.readMeta('s1')).toBeUndefined();
  });

  it('goes on after a failed run: the failure is the report, and the next tick is sent', async () => {
    const t = setup();
    const deps = { ...t.deps, metadataFor: async () => Promise.reject(new Error('brokers unreachable')) };
    const tick = await t.clock.run(runChainTick(deps, cfg, { stream: 's1', seq: 1, dueMs: T0 }, { ...SETTINGS, ownerToken: 'a' }));
    expect(tick).toMatchObject({ outcome: 'ticked', report: { status: 'failed', reason: 'Error: brokers unreachable' }, next: { seq: 2 } });
  });
});
