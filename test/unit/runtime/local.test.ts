/**
 * The local runner behaves like warm Lambdas under reserved concurrency: at most `maxConcurrency`
 * processors at once, and the planner plans no more ranges than that (the others on later runs,
 * all of them eventually), range readers reused by the next invocation, at most one per processor
 * slot, and closed once idle. In-memory ledger, Kafka and readers.
 */
import { parseStreamConfig } from '../../../lib/config/schema';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryRangeReader } from '../../../lib/kafka/range-reader.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { createLocalRunner } from '../../../lib/runtime/local';
import type { RangeReader } from '../../../lib/ports/range-reader';
import type { RecordsHandler } from '../../../lib/processor/handler-api';

const PARTITIONS = 40;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function setup(maxConcurrency: number) {
  const stream = parseStreamConfig(
    {
      id: 's1',
      kafka: { brokers: ['localhost:9092'] },
      topics: ['t'],
      triggerIntervalMs: 1000,
      handler: { module: 'audit-log', mode: 'at-least-once' },
      // One processor per range: what the cap counts here is processors.
      processor: { shareInvocations: false },
    },
    'test',
  );
  const kafka = createMemoryKafka();
  kafka.createTopic('t', PARTITIONS);
  const data = createMemoryRangeReader();
  for (let p = 0; p < PARTITIONS; p++) {
    kafka.produce('t', p, 5);
    data.append(
      't',
      p,
      Array.from({ length: 5 }, (_, i) => ({ value: `${p}/${i}` })),
    );
  }
  const readers = { created: 0, closed: 0 };
  /** Resolved once every reader made so far is closed: the test waits for the event, not a time. */
  let allClosed: (() => void) | undefined;
  const everyReaderClosed = () =>
    new Promise<void>((r) => {
      allClosed = r;
      if (readers.closed === readers.created) r();
    });
  const createReader = async (): Promise<RangeReader> => {
    readers.created++;
    let open = true;
    return {
      ...data,
      close: async () => {
        if (open) readers.closed++;
        open = false;
        if (readers.closed === readers.created) allClosed?.();
      },
    };
  };
  const handled = new Set<string>();
  let running = 0;
  let peak = 0;
  const handler: RecordsHandler = {
    mode: 'at-least-once',
    async handle(records) {
      peak = Math.max(peak, ++running);
      await sleep(2);
      for (const r of records) handled.add(r.idempotencyKey);
      running--;
    },
  };
  const runner = createLocalRunner(
    {
      ledger: createMemoryLedger(),
      metadataFor: async () => kafka,
      createReader,
      handlerFor: () => handler,
      maxConcurrency,
      readerIdleMs: 30,
    },
    [stream],
  );
  /** Planner runs, each after the processors it started finished, until every range ran. */
  const drain = async () => {
    const dispatched: number[] = [];
    for (let i = 0; i < PARTITIONS && handled.size < PARTITIONS * 5; i++) {
      const [rep] = await runner.planOnce();
      dispatched.push(rep?.dispatched ?? 0);
      await runner.idle();
    }
    return dispatched;
  };
  return { runner, readers, everyReaderClosed, handled, drain, peak: () => peak };
}

describe('local runner', () => {
  it('runs at most maxConcurrency processors and plans no more ranges than that; every range runs', async () => {
    const t = setup(4);
    const [rep] = await t.runner.planOnce();
    expect(rep?.dispatched).toBe(4);
    expect(rep?.partitions.filter((p) => p.action === 'waiting-for-concurrency')).toHaveLength(PARTITIONS - 4);
    expect(t.runner.stats().queued).toBe(0);
    await t.runner.idle();
    expect(await t.drain()).toEqual(Array.from({ length: PARTITIONS / 4 - 1 }, () => 4));
    expect(t.handled.size).toBe(PARTITIONS * 5);
    expect(t.peak()).toBeLessThanOrEqual(4);
    expect(t.runner.stats().invocations).toBe(PARTITIONS);
    await t.runner.stop();
  });

  it('reuses readers across invocations, one per processor slot, and closes them once idle', async () => {
    const t = setup(4);
    await t.drain();
    expect(t.readers.created).toBeLessThanOrEqual(4);
    expect(t.runner.stats().readersOpen).toBe(t.readers.created);
    // Closed by the pool's idle timers (readerIdleMs 30), never by stop(): the wait ends when the last one closes.
    await t.everyReaderClosed();
    expect(t.readers.closed).toBe(t.readers.created);
    expect(t.runner.stats().readersOpen).toBe(0);
    await t.runner.stop();
  });
});
