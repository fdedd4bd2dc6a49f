/**
 * Committed offsets repaired over split ranges that finished out of order: the planner reads the
 * finished ranges of many partitions side by side (a run with hundreds of such partitions must not
 * wait for one read after the other), and advances each partition over its finished chain.
 */
import { parseStreamConfig } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { planStream, type PlannerDeps } from '../../../lib/planner/run';
import type { Ledger } from '../../../lib/ports/ledger';

const PARTITIONS = 24;

it('reads finished ranges of several partitions at once and advances each over its chain', async () => {
  const kafka = createMemoryKafka();
  kafka.createTopic('orders', PARTITIONS);
  for (let p = 0; p < PARTITIONS; p++) kafka.produce('orders', p, 20);
  const memory = createMemoryLedger();
  let reading = 0;
  let peak = 0;
  const ledger: Ledger = {
    ...memory,
    async readRange(stream, r) {
      peak = Math.max(peak, ++reading);
      await new Promise((res) => setTimeout(res, 5));
      reading--;
      return memory.readRange(stream, r);
    },
  };
  const deps: PlannerDeps = { ledger, dispatcher: createRecordingDispatcher(), metadataFor: async () => kafka, plannerLeaseMs: 60_000 };
  const stream = parseStreamConfig(
    { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], split: { orderInsensitive: true, maxRangeSize: 5 } },
    'test',
  );
  await planStream(deps, stream, { dryRun: false, nowMs: 1_000_000 });
  // Every range finished, none advanced its partition (they finished out of order).
  for (const r of memory.store('s1').ranges.values()) {
    r.status = 'done';
    r.progress = r.until;
  }
  await planStream(deps, stream, { dryRun: false, nowMs: 1_010_000 });
  expect(peak).toBeGreaterThan(1);
  expect([...memory.store('s1').partitions.values()].map((p) => p.committed)).toEqual(Array.from({ length: PARTITIONS }, () => 20));
});
