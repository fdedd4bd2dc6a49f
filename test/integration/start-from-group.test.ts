/**
 * Start positions of a migration, on the real broker and emulator: a stream with
 * `startingOffsets.fromGroup` starts each partition exactly where another application's consumer
 * group committed (a kafkajs consumer group, and Kafka's Java consumer), a partition without a
 * commit at the fallback, a group that does not exist at the fallback, a committed offset retention
 * removed with its lost span recorded, a group read that fails registering nothing; and a topicPattern
 * stream whose topics created after its first run start at `newTopics`. The handler's records are
 * compared, partition by partition, with exactly what each start says it must see.
 */
import type { Admin, Producer } from 'kafkajs';
import { parseDeploymentConfig, type StreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { KafkaError } from '../../lib/errors';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { runPlanner } from '../../lib/planner/run';
import type { AtLeastOnceHandler } from '../../lib/processor/handler-api';
import { composeAdapters, type Adapters } from '../../lib/runtime/compose';
import { createLocalRunner, runnerDepsFrom } from '../../lib/runtime/local';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { javaGroupCommit } from '../support/java';
import { waitFor } from '../support/wait-for';

const brokers = process.env.KAFKA_BROKERS!;
const kafka = testKafka('start-from-group-it');
const admin: Admin = kafka.admin();
const producer: Producer = kafka.producer();
const ledgerTable = uniqueName('sfg-ledger');
const open: Adapters[] = [];

beforeAll(async () => {
  const ddb = testDynamo();
  await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect(), producer.connect()]);
  ddb.destroy();
});
afterAll(async () => {
  await Promise.all(open.map((a) => a.close()));
  await Promise.all([admin.disconnect(), producer.disconnect()]);
});

/** Writes `n` records to each partition, valued `topic/partition/offset` would be, with `timestampMs` when given. */
async function produce(topic: string, partitions: number[], n: number, timestampMs?: number): Promise<void> {
  const messages = partitions.flatMap((partition) =>
    Array.from({ length: n }, () => ({ partition, value: 'v', ...(timestampMs !== undefined ? { timestamp: String(timestampMs) } : {}) })),
  );
  await producer.send({ topic, messages });
}

/** `topic/partition/offset` for offsets [from, until) of one partition. */
const span = (topic: string, partition: number, from: number, until: number): string[] =>
  Array.from({ length: Math.max(0, until - from) }, (_, i) => `${topic}/${partition}/${from + i}`);

/**
 * A stream on the real stack whose at-least-once handler records every record it is given; `drain`
 * runs planner and in-process processors until every partition is committed up to its end. Each
 * `runner()` is a fresh planner and processors over the same ledger (a new process).
 */
function streamOf(input: Partial<StreamConfigInput> & Pick<StreamConfigInput, 'id'>) {
  const config = parseDeploymentConfig(
    {
      ledgerTable,
      streams: [{ kafka: { brokers: brokers.split(',') }, triggerIntervalMs: 1000, processor: { timeoutMs: 30_000 }, ...input }],
    },
    'test',
  );
  const stream = config.streams[0] as StreamConfig;
  const adapters = composeAdapters({ config, env: process.env, dynamo: testDynamo() });
  open.push(adapters);
  const seen: string[] = [];
  const handler: AtLeastOnceHandler = {
    mode: 'at-least-once',
    handle(records) {
      for (const r of records) seen.push(`${r.topic}/${r.partition}/${r.offset}`);
    },
  };
  const runner = () => createLocalRunner({ ...runnerDepsFrom({ ...adapters, handlerFor: () => handler }) }, [stream]);
  const drain = async () => {
    const r = runner();
    try {
      for (let i = 0; i < 40; i++) {
        const [rep] = await r.planOnce();
        await r.idle();
        if (rep?.status === 'failed') throw new Error(`planner run failed: ${rep.reason}`);
        if (rep && rep.partitions.length && rep.partitions.every((p) => p.lag === 0 && p.committed === p.nextFrom && p.status !== 'new'))
          return rep;
      }
      throw new Error('the stream did not catch up');
    } finally {
      await r.stop();
    }
  };
  const planOnce = async () => {
    const r = runner();
    try {
      const [rep] = await r.planOnce();
      await r.idle();
      return rep!;
    } finally {
      await r.stop();
    }
  };
  const sorted = () => [...new Set(seen)].sort();
  return { stream, adapters, seen, sorted, drain, planOnce };
}

/** Commits `commits` (partition -> offset) in group `group` with a kafkajs consumer that consumed up to them. */
async function kafkajsGroupCommit(group: string, topic: string, commits: Record<number, number>): Promise<void> {
  const consumer = kafka.consumer({ groupId: group });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const consumed = new Map<number, number>();
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        consumed.set(partition, Number(message.offset) + 1);
      },
    });
    await waitFor(`the kafkajs consumer to reach ${JSON.stringify(commits)}`, () => consumed, {
      until: (c) => Object.entries(commits).every(([p, offset]) => offset === 0 || (c.get(Number(p)) ?? 0) >= offset),
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    await consumer.commitOffsets(Object.entries(commits).map(([p, offset]) => ({ topic, partition: Number(p), offset: String(offset) })));
  } finally {
    await consumer.disconnect();
  }
}

/** The group's committed offsets of `topic` as Kafka's admin reads them (-1: none). */
async function groupOffsets(group: string, topic: string): Promise<Record<number, number>> {
  const [t] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  return Object.fromEntries((t?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
}

describe('startingOffsets.fromGroup on the real broker', () => {
  it('starts exactly at a kafkajs consumer group commits, partition by partition; no commit: fallback earliest', async () => {
    const id = uniqueName('sfg-kjs');
    const topic = `${id}-orders`;
    const group = `${id}-app`;
    await createTopicsReady(admin, [{ topic, numPartitions: 4 }]);
    await produce(topic, [0, 1, 2, 3], 10);
    await kafkajsGroupCommit(group, topic, { 0: 3, 1: 10, 3: 7 });
    expect(await groupOffsets(group, topic)).toEqual({ 0: 3, 1: 10, 2: -1, 3: 7 });

    const s = streamOf({ id, topics: [topic], startingOffsets: { fromGroup: group, fallback: 'earliest' } });
    // The port's read: partitions the group has no offset for are absent.
    const metadata = await s.adapters.metadata.forStream(s.stream);
    expect(await metadata.committedOffsets(group, [{ topic, partitions: [0, 1, 2, 3] }])).toEqual([
      { topic, partition: 0, offset: 3 },
      { topic, partition: 1, offset: 10 },
      { topic, partition: 3, offset: 7 },
    ]);
    const rep = await s.drain();
    expect(s.sorted()).toEqual([...span(topic, 0, 3, 10), ...span(topic, 2, 0, 10), ...span(topic, 3, 7, 10)].sort());
    expect((await s.adapters.ledger.readPartitions(id)).map((p) => `${p.partition}@${p.startOffset}`).sort()).toEqual([
      '0@3',
      '1@10',
      '2@0',
      '3@7',
    ]);
    expect(rep.status).toBe('planned');
  });

  it('starts exactly at commits of Kafka Java consumer group; no commit: fallback latest; with consumerGroup the same group it keeps committing there', async () => {
    const id = uniqueName('sfg-java');
    const topic = `${id}-orders`;
    const group = `${id}-app`;
    await createTopicsReady(admin, [{ topic, numPartitions: 4 }]);
    await produce(topic, [0, 1, 2, 3], 10);
    await javaGroupCommit(brokers, group, topic, { 0: 0, 1: 5, 2: 9 });
    expect(await groupOffsets(group, topic)).toEqual({ 0: 0, 1: 5, 2: 9, 3: -1 });

    const s = streamOf({ id, topics: [topic], startingOffsets: { fromGroup: group, fallback: 'latest' }, consumerGroup: group });
    const first = await s.drain();
    expect(first.partitions.find((p) => p.partition === 3)).toMatchObject({ committed: 10 });
    expect(s.sorted()).toEqual([...span(topic, 0, 0, 10), ...span(topic, 1, 5, 10), ...span(topic, 2, 9, 10)].sort());
    await produce(topic, [0, 1, 2, 3], 3);
    await s.drain();
    expect(s.sorted()).toEqual(
      [...span(topic, 0, 0, 13), ...span(topic, 1, 5, 13), ...span(topic, 2, 9, 13), ...span(topic, 3, 10, 13)].sort(),
    );
    // The stream commits its progress to the group it started from (for lag tools, and a way back).
    expect(await groupOffsets(group, topic)).toEqual({ 0: 13, 1: 13, 2: 13, 3: 13 });
  });

  it('a group that does not exist: every partition at the fallback (latest), not an error', async () => {
    const id = uniqueName('sfg-none');
    const topic = `${id}-orders`;
    await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
    await produce(topic, [0, 1], 5);
    const s = streamOf({ id, topics: [topic], startingOffsets: { fromGroup: `${id}-never-used`, fallback: 'latest' } });
    const rep = await s.planOnce();
    expect(rep).toMatchObject({ status: 'planned', registered: 2, rangesPlanned: 0 });
    expect(rep.partitions.map((p) => p.note)).toEqual([
      `starts at 5: group "${id}-never-used" has no committed offset: fallback latest (5)`,
      `starts at 5: group "${id}-never-used" has no committed offset: fallback latest (5)`,
    ]);
    await produce(topic, [0, 1], 2);
    await s.drain();
    expect(s.sorted()).toEqual([...span(topic, 0, 5, 7), ...span(topic, 1, 5, 7)].sort());
  });

  it('a committed offset retention has deleted: the lost span is recorded (failOnDataLoss false) and reading starts at the log start', async () => {
    const id = uniqueName('sfg-lost');
    const topic = `${id}-orders`;
    const group = `${id}-app`;
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    await produce(topic, [0], 10);
    await kafkajsGroupCommit(group, topic, { 0: 2 });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '6' }] });
    const s = streamOf({ id, topics: [topic], startingOffsets: { fromGroup: group, fallback: 'earliest' }, failOnDataLoss: false });
    await s.drain();
    expect(s.sorted()).toEqual(span(topic, 0, 6, 10).sort());
    expect(await s.adapters.ledger.readDataLoss(id)).toEqual([expect.objectContaining({ topic, partition: 0, from: 2, until: 6 })]);
  });

  it('a group read that fails fails the run with one line naming the group and registers nothing', async () => {
    const id = uniqueName('sfg-fail');
    const topic = `${id}-orders`;
    const group = `${id}-app`;
    await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
    const s = streamOf({ id, topics: [topic], startingOffsets: { fromGroup: group, fallback: 'earliest' } });
    const real = await s.adapters.metadata.forStream(s.stream);
    let refused = 0;
    const refusing = {
      ...real,
      // As the coordinator answers a principal without Describe on the group.
      committedOffsets: async () => {
        refused++;
        throw new KafkaError('Kafka reading the committed offsets failed: Not authorized to access group: Group authorization failed', {
          type: 'GROUP_AUTHORIZATION_FAILED',
        });
      },
    };
    const deps = {
      ledger: s.adapters.ledger,
      dispatcher: { dispatch: async () => [] },
      metadataFor: async () => refusing,
      plannerLeaseMs: 30_000,
    };
    const [rep] = await runPlanner(deps, { streams: [s.stream], dryRun: false, nowMs: Date.now() });
    expect(refused).toBe(1);
    expect(rep).toMatchObject({ status: 'failed', registered: 0 });
    expect(rep?.reason).toMatch(
      new RegExp(
        `^KafkaError: startingOffsets.fromGroup: the committed offsets of consumer group "${group}" could not be read: .*; nothing was registered$`,
      ),
    );
    expect(await s.adapters.ledger.readPartitions(id)).toEqual([]);
    expect((await s.adapters.ledger.readMeta(id))?.startedAtMs).toBeUndefined();
    // The real adapter reads the group (it has no commits): the next run registers at the fallback.
    expect(await real.committedOffsets(group, [{ topic, partitions: [0, 1] }])).toEqual([]);
  });
});

describe('newTopics on the real broker (topicPattern)', () => {
  /** A stream whose first run sees topic `-a`; topic `-b` is created after it with `before` records (at `timestampMs`). */
  async function laterTopic(newTopics: StreamConfigInput['newTopics'], before: Array<{ n: number; timestampMs?: number }>) {
    const id = uniqueName('sfg-new');
    const [a, b] = [`${id}-a`, `${id}-b`];
    await createTopicsReady(admin, [{ topic: a, numPartitions: 1 }]);
    await produce(a, [0], 3);
    const s = streamOf({ id, topicPattern: `${id}-.*`, startingOffsets: 'latest', ...(newTopics ? { newTopics } : {}) });
    const first = await s.planOnce();
    expect(first).toMatchObject({ status: 'planned', registered: 1 });
    await createTopicsReady(admin, [{ topic: b, numPartitions: 2 }]);
    for (const { n, timestampMs } of before) await produce(b, [0, 1], n, timestampMs);
    return { ...s, a, b };
  }

  it('default (earliest): a topic created after the first run is read from its first record', async () => {
    const s = await laterTopic(undefined, [{ n: 4 }]);
    await s.drain();
    expect(s.sorted()).toEqual([...span(s.b, 0, 0, 4), ...span(s.b, 1, 0, 4)].sort());
  });

  it('latest: a topic created after the first run is read from its end at discovery', async () => {
    const s = await laterTopic('latest', [{ n: 4 }]);
    const rep = await s.drain();
    expect(rep.partitions.filter((p) => p.topic === s.b).map((p) => p.committed)).toEqual([4, 4]);
    await produce(s.b, [0, 1], 2);
    await produce(s.a, [0], 1);
    await s.drain();
    expect(s.sorted()).toEqual([...span(s.a, 0, 3, 4), ...span(s.b, 0, 4, 6), ...span(s.b, 1, 4, 6)].sort());
  });

  it('timestampMs: a topic created after the first run is read from its first record at or after the timestamp', async () => {
    const base = Date.now() - 3_600_000;
    const s = await laterTopic({ timestampMs: base + 1_000 }, [
      { n: 3, timestampMs: base },
      { n: 2, timestampMs: base + 1_000 },
      { n: 2, timestampMs: base + 2_000 },
    ]);
    await s.drain();
    expect(s.sorted()).toEqual([...span(s.b, 0, 3, 7), ...span(s.b, 1, 3, 7)].sort());
  });
});
