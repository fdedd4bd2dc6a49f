/**
 * A planner ticking every second sends a range again only when no processor can be on it: a failed
 * or expired range once (not on every run until a processor starts), never one whose processor
 * holds a live lease, and never on the word of a lagging open-ranges index alone. In-memory ledger
 * and Kafka; processors are the ledger calls a processor makes.
 */
import { parseStreamConfig } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { planStream, type PlannerDeps } from '../../../lib/planner/run';
import type { Ledger } from '../../../lib/ports/ledger';
import type { RangeState } from '../../../lib/ports/ledger-state';

const stream = parseStreamConfig(
  { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 1000, processor: { timeoutMs: 60_000 } },
  'test',
);
const LEASE_MS = stream.processor.leaseMs;

function setup(opts: { staleIndex?: boolean } = {}) {
  const kafka = createMemoryKafka();
  kafka.createTopic('orders', 1);
  kafka.produce('orders', 0, 10);
  const memory = createMemoryLedger();
  // A lagging index: each read of the open ranges returns what the read before it found.
  let lagging: RangeState[] | undefined;
  const ledger: Ledger = opts.staleIndex
    ? Object.assign(Object.create(memory) as Ledger, {
        readOpenRanges: async (s: string) => {
          const fresh = await memory.readOpenRanges(s);
          const seen = lagging ?? fresh;
          lagging = fresh;
          return seen;
        },
      })
    : memory;
  const dispatcher = createRecordingDispatcher();
  const deps: PlannerDeps = { ledger, dispatcher, metadataFor: async () => kafka, plannerLeaseMs: 30_000 };
  let now = 1_000_000;
  const tick = (ms = 1000) => {
    now += ms;
    return planStream(deps, stream, { dryRun: false, nowMs: now });
  };
  const range = { stream: 's1', topic: 'orders', partition: 0, from: 0, until: 10 };
  const processor = {
    take: (token: string) =>
      memory.takeRangeLease({ ...range, leaseToken: token, nowMs: now, leaseMs: LEASE_MS, maxAttempts: stream.maxAttempts }),
    fail: (token: string) => memory.failRange({ range: { ...range, leaseToken: token }, status: 'failed', error: 'boom', nowMs: now }),
    renew: (token: string) =>
      memory.commitChunk({ range: { ...range, leaseToken: token }, expectProgress: 0, to: 0, nowMs: now, leaseMs: LEASE_MS }),
  };
  const sent = () => dispatcher.dispatched.length;
  return { memory, tick, processor, sent, stored: () => memory.store('s1').ranges.get('orders/0/0') };
}

describe('re-sends at 1 s ticks', () => {
  it('sends a failed range again once, then waits for that dispatch until a processor takes it', async () => {
    const t = setup();
    await t.tick();
    expect(t.sent()).toBe(1);
    await t.processor.take('A');
    await t.processor.fail('A');
    await t.tick();
    expect(t.sent()).toBe(2);
    expect(t.stored()).toMatchObject({ status: 'failed', attempts: 1, redispatchedAtAttempts: 1, dispatches: 2 });
    // The processor is starting (a cold start, Lambda's queue): the next runs do not send it again.
    for (let i = 0; i < 5; i++) expect(await t.tick()).toMatchObject({ redispatched: 0 });
    expect(t.sent()).toBe(2);
    // It starts and fails too: a new attempt, sent again at once.
    await t.processor.take('B');
    await t.processor.fail('B');
    expect(await t.tick()).toMatchObject({ redispatched: 1 });
    expect(t.sent()).toBe(3);
    // A dispatch no processor took within the lease time is sent again.
    expect(await t.tick(LEASE_MS + 1)).toMatchObject({ redispatched: 1 });
  });

  it('sends an expired range again once, and never one whose lease a processor keeps renewing', async () => {
    const t = setup();
    await t.tick();
    await t.processor.take('A');
    for (let i = 0; i < 5; i++) {
      await t.tick(LEASE_MS / 2);
      await t.processor.renew('A');
    }
    expect(t.sent()).toBe(1);
    // The processor dies: its lease lapses, the range is sent again once.
    await t.tick(LEASE_MS + 1);
    expect(t.sent()).toBe(2);
    for (let i = 0; i < 5; i++) await t.tick();
    expect(t.sent()).toBe(2);
    expect(t.stored()).toMatchObject({ status: 'leased', attempts: 1, redispatchedAtAttempts: 1 });
  });

  it.each([
    ['not taken yet', false],
    ['taken by a processor since', true],
  ])('reads a range consistently before sending it again: a lagging index alone sends nothing (%s)', async (_name, taken) => {
    const t = setup({ staleIndex: true });
    await t.tick();
    await t.processor.take('A');
    await t.processor.fail('A');
    expect(await t.tick()).toMatchObject({ redispatched: 1 });
    if (taken) await t.processor.take('B');
    // The index shows the range as before that re-send: failed, not sent since.
    expect(await t.tick()).toMatchObject({ redispatched: 0, dispatchFailures: [] });
    expect(t.sent()).toBe(2);
  });
});
