/**
 * The `--config` run's closing summary says what the ledger and Kafka say at exit, not what the
 * watch last saw: partitions go on committing while the runner drains after a parked range ended the
 * watch, and `status` right after must show the same lag.
 */
import { parseDeploymentConfig } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { createProgressView } from '../../../lib/local/progress';
import { reportRun, type Look, type Watch } from '../../../lib/local/run-config';
import { planStream } from '../../../lib/planner/run';
import type { RunnerStats } from '../../../lib/runtime/local';

const config = parseDeploymentConfig(
  { ledgerTable: 'ledger', streams: [{ id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'] }] },
  'test',
);
const stream = config.streams[0]!;

async function setUp() {
  const kafka = createMemoryKafka();
  kafka.createTopic('orders', 2);
  kafka.produce('orders', 0, 3000);
  kafka.produce('orders', 1, 2000);
  const ledger = createMemoryLedger();
  const metadata = { forStream: async () => kafka, requestCount: () => 0, closeAll: async () => undefined };
  await planStream({ ledger, metadataFor: async () => kafka, dispatcher: createRecordingDispatcher(), plannerLeaseMs: 1000 }, stream, {
    dryRun: false,
    nowMs: Date.now(),
  });
  const stats = { plannerRuns: 3, invocations: 2, records: 2000, deadLetters: 0, byStatus: {} } as unknown as RunnerStats;
  const events: string[] = [];
  const w: Watch = {
    ops: { ledger, metadata },
    runner: { inFlight: () => [], stats: () => stats },
    view: { ...createProgressView(() => undefined, 'off'), event: (e) => events.push(e) },
    streams: [stream],
    t0: Date.now(),
  };
  const out: string[] = [];
  const report = (last: Look | undefined, reason: string) =>
    reportRun(
      w,
      { configFile: 'streams.yml', json: true, untilCaughtUp: true },
      { out: (s) => out.push(s) },
      { ledgerTable: 'ledger', sinkTablesCreated: [], end: { last, reason } },
    );
  /** Finishes the partition's open range: committed and the planning cursor reach its end. */
  const finish = (partition: number) => {
    const s = ledger.store('s1');
    const r = s.ranges.get(`orders/${partition}/0`)!;
    Object.assign(r, { status: 'done', progress: r.until });
    Object.assign(s.partitions.get(`orders/${partition}`)!, { committed: r.until, nextFrom: r.until });
  };
  return { ledger, w, report, finish, out, events };
}

/** What the watch saw when it stopped: nothing committed yet (lag 5,000). */
const staleLook = (parked: string[]): Look => ({
  rows: [
    { topic: 'orders', partition: 0, committed: 0, earliest: 0, latest: 3000, inFlight: 1 },
    { topic: 'orders', partition: 1, committed: 0, earliest: 0, latest: 2000, inFlight: 1 },
  ],
  caughtUp: false,
  parked,
  failedPartitions: [],
});

describe('config run summary', () => {
  it('exit 1 on a parked range: lag and parked ranges as the ledger has them after the runner drained', async () => {
    const t = await setUp();
    const s = t.ledger.store('s1');
    Object.assign(s.ranges.get('orders/0/0')!, { status: 'parked', lastError: 'POISON_RECORD: boom' });
    // Partition 1 finished while the runner drained, after the watch's last look.
    t.finish(1);
    const { summary, exitCode } = await t.report(staleLook(['s1 orders/0 [0, 3000): POISON_RECORD: boom']), 'a range was parked');
    expect(exitCode).toBe(1);
    expect(summary).toMatchObject({ lag: 3000, partitions: 2, caughtUp: false, parked: ['s1 orders/0 [0, 3000): POISON_RECORD: boom'] });
    expect(JSON.parse(t.out.join(''))).toMatchObject({ lag: 3000 });
  });

  it('exit 0 once caught up: the figures of the end, not of the last look', async () => {
    const t = await setUp();
    t.finish(0);
    t.finish(1);
    const { summary, exitCode } = await t.report(staleLook([]), 'caught up');
    expect(exitCode).toBe(0);
    expect(summary).toMatchObject({ lag: 0, caughtUp: true, parked: [], failedPartitions: [] });
  });

  it("falls back to the watch's last look when the end cannot be read, saying so", async () => {
    const t = await setUp();
    t.w.ops.metadata.forStream = async () => {
      throw new Error('broker gone');
    };
    const { summary, exitCode } = await t.report(staleLook([]), 'interrupted');
    expect(summary).toMatchObject({ lag: 5000, caughtUp: false });
    expect(exitCode).toBe(1);
    expect(t.events).toEqual(['summary from the last look: broker gone']);
  });
});
