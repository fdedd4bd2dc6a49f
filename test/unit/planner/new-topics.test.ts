/**
 * newTopics: a topic that appears after the stream's first run starts at `newTopics`; the topics
 * present at the first run (pending ones included) start at `startingOffsets`, and partitions added
 * to a known topic at earliest. "First run" comes from the ledger, so a new planner process (a cold
 * Lambda) decides alike. In-memory ledger and Kafka.
 */
import fc from 'fast-check';
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { createMemoryKafka, type MemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { planStream } from '../../../lib/planner/run';

function setup(over: Partial<StreamConfigInput> = {}) {
  const kafka = createMemoryKafka();
  const ledger = createMemoryLedger();
  const dispatcher = createRecordingDispatcher();
  const stream = parseStreamConfig(
    { id: 's1', kafka: { brokers: ['localhost:9092'] }, topicPattern: 'orders-.*', triggerIntervalMs: 10_000, ...over },
    'test',
  );
  let now = 1_000_000;
  // Each run gets deps of its own, as each planner invocation of a cold container does: only the ledger is shared.
  const run = (dryRun = false) =>
    planStream({ ledger, dispatcher, metadataFor: async () => kafka, plannerLeaseMs: 60_000 }, stream, { dryRun, nowMs: (now += 10_000) });
  const start = (topic: string, p = 0) => ledger.store('s1').partitions.get(`${topic}/${p}`)?.startOffset;
  const created = (topic: string, partitions: number, records: number, timestampMs = 0) => {
    kafka.createTopic(topic, partitions);
    for (let p = 0; p < partitions; p++) kafka.produce(topic, p, records, timestampMs);
  };
  return { kafka, ledger, dispatcher, run, start, created };
}

describe('newTopics', () => {
  it('default earliest: a topic created after the first run starts at its earliest offset, one present then at startingOffsets', async () => {
    const t = setup({ startingOffsets: 'latest' });
    t.created('orders-a', 1, 10);
    await t.run();
    t.created('orders-b', 1, 6);
    await t.run();
    expect([t.start('orders-a'), t.start('orders-b')]).toEqual([10, 0]);
  });

  it('latest: a topic created later starts at its end; startingOffsets earliest still applies to the first run', async () => {
    const t = setup({ newTopics: 'latest' });
    t.created('orders-a', 1, 10);
    await t.run();
    t.created('orders-b', 2, 6);
    const rep = await t.run();
    expect([t.start('orders-a'), t.start('orders-b', 0), t.start('orders-b', 1)]).toEqual([0, 6, 6]);
    expect(rep.partitions.find((p) => p.topic === 'orders-b')?.note).toBe(
      'starts at 6: a topic that appeared after the stream started: newTopics latest',
    );
    t.kafka.produce('orders-b', 0, 2);
    await t.run();
    expect(t.dispatcher.dispatched.filter((r) => r.topic === 'orders-b')).toEqual([
      expect.objectContaining({ partition: 0, from: 6, until: 8 }),
    ]);
  });

  it('timestamp: a topic created later starts at its first record at or after the timestamp', async () => {
    const t = setup({ newTopics: { timestampMs: 150 }, startingOffsets: 'latest' });
    t.created('orders-a', 1, 10, 100);
    await t.run();
    t.created('orders-b', 1, 4, 100);
    t.kafka.produce('orders-b', 0, 3, 200);
    await t.run();
    expect([t.start('orders-a'), t.start('orders-b')]).toEqual([10, 4]);
  });

  it('timestampMs in both: each rule looks up its own timestamp', async () => {
    const t = setup({ startingOffsets: { timestampMs: 150 }, newTopics: { timestampMs: 250 } });
    t.created('orders-a', 1, 2, 100);
    t.kafka.produce('orders-a', 0, 2, 200);
    t.kafka.produce('orders-a', 0, 2, 300);
    await t.run();
    t.created('orders-b', 1, 2, 100);
    t.kafka.produce('orders-b', 0, 2, 200);
    t.kafka.produce('orders-b', 0, 2, 300);
    await t.run();
    expect([t.start('orders-a'), t.start('orders-b')]).toEqual([2, 4]);
  });

  it('a new topic starts whole: while one partition cannot be read, none is registered; then all at that run', async () => {
    const t = setup({ newTopics: 'latest' });
    t.created('orders-a', 1, 1);
    await t.run();
    t.created('orders-b', 3, 5);
    t.kafka.setUnavailable('orders-b', 2);
    const waiting = await t.run();
    expect(waiting.registered).toBe(0);
    expect(waiting.partitions.filter((p) => p.topic === 'orders-b').map((p) => p.note)).toEqual([
      'not registered yet (a new topic starts whole: partition 2 not placed this run): a topic that appeared after the stream started, it will start at newTopics',
      'not registered yet (a new topic starts whole: partition 2 not placed this run): a topic that appeared after the stream started, it will start at newTopics',
      expect.stringMatching(
        /^offsets unavailable this run: LEADER_UNREACHABLE: .*; not registered yet \(no offsets this run\): a topic that appeared after the stream started, it will start at newTopics$/,
      ),
    ]);
    for (const p of [0, 1, 2]) t.kafka.produce('orders-b', p, 3);
    t.kafka.setUnavailable('orders-b', 2, null);
    expect(await t.run()).toMatchObject({ registered: 3 });
    expect([0, 1, 2].map((p) => t.start('orders-b', p))).toEqual([8, 8, 8]);
  });

  it('a topic present but unreadable at the first run is not a new topic: it starts at startingOffsets, its added partitions at earliest', async () => {
    const t = setup({ startingOffsets: 'latest', newTopics: 'latest' });
    t.created('orders-a', 1, 10);
    t.kafka.setUnavailable('orders-a', 0);
    await t.run();
    t.kafka.setUnavailable('orders-a', 0, null);
    t.kafka.addPartitions('orders-a', 1);
    t.kafka.produce('orders-a', 1, 4);
    await t.run();
    expect([t.start('orders-a', 0), t.start('orders-a', 1)]).toEqual([10, 0]);
  });

  it('a partition added later to a topic that appeared later starts at earliest', async () => {
    const t = setup({ newTopics: 'latest' });
    t.created('orders-a', 1, 1);
    await t.run();
    t.created('orders-b', 1, 5);
    await t.run();
    t.kafka.addPartitions('orders-b', 1);
    t.kafka.produce('orders-b', 1, 2);
    await t.run();
    expect([t.start('orders-b', 0), t.start('orders-b', 1)]).toEqual([5, 0]);
  });

  it('a listed topic created after the first run is a new topic too', async () => {
    const t = setup({ topicPattern: undefined, topics: ['orders-a', 'orders-b'], newTopics: 'latest' });
    t.created('orders-a', 1, 3);
    expect((await t.run()).topicsMissing).toBe(1);
    t.created('orders-b', 1, 3);
    await t.run();
    expect([t.start('orders-a'), t.start('orders-b')]).toEqual([0, 3]);
  });

  it('a first run that crashed before it marked the stream started is still the first run: startingOffsets for every topic', async () => {
    const t = setup({ startingOffsets: 'latest', newTopics: 'earliest' });
    t.created('orders-a', 1, 4);
    // The start mark is written after the registrations: a run dying in between leaves the stream unstarted.
    const markStreamStarted = t.ledger.markStreamStarted;
    t.ledger.markStreamStarted = async () => {
      throw new Error('crash before the start mark');
    };
    await expect(t.run()).rejects.toThrow('crash before the start mark');
    t.ledger.markStreamStarted = markStreamStarted;
    t.created('orders-b', 1, 4);
    await t.run();
    expect([t.start('orders-a'), t.start('orders-b')]).toEqual([4, 4]);
    t.created('orders-c', 1, 4);
    await t.run();
    expect(t.start('orders-c')).toBe(0);
  });

  it('property: topics of the first run start at startingOffsets (latest), later topics at newTopics, added partitions at 0', async () => {
    // Per topic: the run that creates it, its partitions then, partitions added one run later, records per run.
    const topic = fc.record({
      createdAt: fc.integer({ min: 0, max: 2 }),
      partitions: fc.integer({ min: 1, max: 3 }),
      added: fc.integer({ min: 0, max: 2 }),
      records: fc.integer({ min: 0, max: 5 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(topic, { minLength: 1, maxLength: 4 }),
        fc.constantFrom('earliest' as const, 'latest' as const),
        async (topics, newTopics) => {
          const t = setup({ startingOffsets: 'latest', newTopics });
          const expected = new Map<string, number>();
          for (let runNo = 0; runNo < 4; runNo++) {
            topics.forEach((tp, i) => grow(t.kafka, `orders-${i}`, tp, runNo, expected, newTopics));
            await t.run();
          }
          for (const [key, offset] of expected) {
            const [name, p] = key.split('/');
            expect(`${key}@${t.start(name!, Number(p))}`).toBe(`${key}@${offset}`);
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});

/** Creates, grows and writes a property topic before run `runNo`, noting where each partition must start. */
function grow(
  kafka: MemoryKafka,
  name: string,
  tp: { createdAt: number; partitions: number; added: number; records: number },
  runNo: number,
  expected: Map<string, number>,
  newTopics: 'earliest' | 'latest',
): void {
  if (runNo < tp.createdAt) return;
  if (runNo === tp.createdAt) kafka.createTopic(name, tp.partitions);
  if (runNo === tp.createdAt + 1 && tp.added) kafka.addPartitions(name, tp.added);
  const count = tp.partitions + (runNo > tp.createdAt ? tp.added : 0);
  for (let p = 0; p < count; p++) {
    kafka.produce(name, p, tp.records);
    const key = `${name}/${p}`;
    if (expected.has(key)) continue;
    const atEnd = p < tp.partitions && (tp.createdAt === 0 || newTopics === 'latest');
    expected.set(key, atEnd ? tp.records : 0);
  }
}
