/** The kafkajs KafkaMetadata adapter against the real local broker. */
import type { Admin, Kafka, Producer } from 'kafkajs';
import { AppError, KafkaError, ValidationError } from '../../lib/errors';
import { createKafkajsMetadata, toSafeOffset, type KafkajsMetadata } from '../../lib/kafka/metadata.kafkajs';
import type { TopicPartitions } from '../../lib/ports/kafka-metadata';
import { createTopicsReady, testKafka, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

/** The broker applies admin changes to its metadata asynchronously: its answers are awaited, this long. */
const SETTLES = { timeoutMs: 15_000, intervalMs: 200 };

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('kafkajs KafkaMetadata adapter (real broker)', () => {
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;
  let meta: KafkajsMetadata;

  async function createTopics(specs: Array<{ topic: string; numPartitions: number }>): Promise<void> {
    await createTopicsReady(admin, specs);
  }

  async function produce(topic: string, perPartition: number[]): Promise<void> {
    const messages = perPartition.flatMap((n, partition) =>
      Array.from({ length: n }, (_, i) => ({ partition, key: `k${i}`, value: `v${i}` })),
    );
    if (messages.length > 0) await producer.send({ topic, messages });
  }

  beforeAll(async () => {
    kafka = testKafka('kafka-metadata');
    admin = kafka.admin();
    producer = kafka.producer({ allowAutoTopicCreation: false });
    await Promise.all([admin.connect(), producer.connect()]);
    meta = createKafkajsMetadata(kafka);
  });

  afterAll(async () => {
    await meta.close();
    await producer.disconnect();
    await admin.disconnect();
  });

  it('describes listed topics; missing and internal names are absent and nothing is auto-created', async () => {
    const [a, b] = [uniqueName('kmeta-list-a'), uniqueName('kmeta-list-b')];
    const missing = uniqueName('kmeta-missing');
    await createTopics([
      { topic: a, numPartitions: 3 },
      { topic: b, numPartitions: 1 },
    ]);

    const found = await meta.describeTopics({ topics: [b, missing, a, '__consumer_offsets', a] });
    expect(found).toMatchObject(
      [
        { topic: a, partitions: [0, 1, 2] },
        { topic: b, partitions: [0] },
      ].sort((x, y) => x.topic.localeCompare(y.topic)),
    );
    expect(await meta.describeTopics({ topics: [missing] })).toEqual([]);
    expect(await admin.listTopics()).not.toContain(missing);

    const before = meta.requestCount();
    expect(await meta.describeTopics({ topics: [] })).toEqual([]);
    expect(meta.requestCount()).toBe(before); // an empty list never becomes "all topics"
  });

  it('matches a pattern against whole names and sees topics created after the previous call', async () => {
    const base = uniqueName('kmeta-re');
    await createTopics([{ topic: `${base}-a`, numPartitions: 2 }]);

    const pattern = new RegExp(`${escapeRe(base)}-.*`);
    expect(await meta.describeTopics({ pattern })).toMatchObject([{ topic: `${base}-a`, partitions: [0, 1] }]);
    // Anchored at both ends: a prefix or a suffix of a name does not match it.
    expect(await meta.describeTopics({ pattern: new RegExp(escapeRe(base)) })).toEqual([]);
    expect(await meta.describeTopics({ pattern: new RegExp(escapeRe(`${base}-a`.slice(1))) })).toEqual([]);
    expect(await meta.describeTopics({ pattern: /kmeta-re-.*-(a|b)/ })).toContainEqual(
      expect.objectContaining({ topic: `${base}-a`, partitions: [0, 1] }),
    );

    await createTopics([{ topic: `${base}-b`, numPartitions: 1 }]);
    // A global regex keeps lastIndex between test() calls; the adapter must not be affected by it.
    const sticky = new RegExp(`${escapeRe(base)}-[ab]`, 'g');
    for (let i = 0; i < 2; i++) {
      expect(await meta.describeTopics({ pattern: sticky })).toMatchObject([
        { topic: `${base}-a`, partitions: [0, 1] },
        { topic: `${base}-b`, partitions: [0] },
      ]);
    }
  });

  it('reports topic ids (Metadata v10+); a topic deleted and re-created under its name gets a new id', async () => {
    const topic = uniqueName('kmeta-id');
    await createTopics([{ topic, numPartitions: 2 }]);
    const [first] = await meta.describeTopics({ topics: [topic] });
    // Kafka's own form: 16 bytes as URL-safe base64 without padding (22 characters).
    expect(first?.topicId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const [again] = await meta.describeTopics({ pattern: new RegExp(escapeRe(topic)) });
    expect(again?.topicId).toBe(first?.topicId);
    // Without topic ids (kafkajs's own Metadata v6, as against a broker before 2.8): the same answer, no id.
    const v6 = createKafkajsMetadata(kafka, { topicIds: false });
    try {
      expect(await v6.describeTopics({ topics: [topic] })).toEqual([{ topic, partitions: [0, 1] }]);
    } finally {
      await v6.close();
    }
    await admin.deleteTopics({ topics: [topic] });
    await waitFor(
      `${topic} gone from metadata`,
      async () => {
        expect(await meta.describeTopics({ topics: [topic] })).toEqual([]);
        return true;
      },
      SETTLES,
    );
    await createTopics([{ topic, numPartitions: 1 }]);
    const [second] = await meta.describeTopics({ topics: [topic] });
    expect(second).toMatchObject({ topic, partitions: [0] });
    expect(second?.topicId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(second?.topicId).not.toBe(first?.topicId);
    // Offsets still resolve through the leaders the v10+ answer cached.
    expect(await meta.fetchOffsets([{ topic, partitions: [0] }], 'read_uncommitted')).toEqual([
      { topic, partition: 0, earliest: 0, latest: 0 },
    ]);
  });

  it('never returns internal topics, even for .*', async () => {
    // Looking up a group's coordinator makes the broker create __consumer_offsets (no group is joined).
    await admin.describeGroups([uniqueName('kmeta-group')]);
    await waitFor(
      'the broker to create __consumer_offsets',
      async () => {
        expect(await admin.listTopics()).toContain('__consumer_offsets');
        return true;
      },
      SETTLES,
    );

    const all = await meta.describeTopics({ pattern: /.*/ });
    expect(all.length).toBeGreaterThan(0);
    expect(all.filter((t) => t.topic.startsWith('__'))).toEqual([]);
    expect(await meta.describeTopics({ pattern: /__consumer_offsets/ })).toEqual([]);
    expect(await meta.describeTopics({ pattern: /_.*/ })).toEqual([]);
    expect(await meta.describeTopics({ topics: ['__consumer_offsets', '__transaction_state'] })).toEqual([]);
  });

  it('sees a partition-count increase, and reads offsets of the new partitions', async () => {
    const topic = uniqueName('kmeta-grow');
    await createTopics([{ topic, numPartitions: 1 }]);
    expect(await meta.describeTopics({ topics: [topic] })).toMatchObject([{ topic, partitions: [0] }]);

    await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] });
    const grown = await waitFor(
      `${topic} to have 4 partitions in metadata`,
      async () => {
        const d = await meta.describeTopics({ pattern: new RegExp(escapeRe(topic)) });
        expect(d).toMatchObject([{ topic, partitions: [0, 1, 2, 3] }]);
        return d;
      },
      SETTLES,
    );
    await produce(topic, [0, 0, 0, 2]);
    expect(await meta.fetchOffsets(grown, 'read_uncommitted')).toEqual([
      { topic, partition: 0, earliest: 0, latest: 0 },
      { topic, partition: 1, earliest: 0, latest: 0 },
      { topic, partition: 2, earliest: 0, latest: 0 },
      { topic, partition: 3, earliest: 0, latest: 2 },
    ]);
  });

  it('a deleted topic disappears; offsets for it fail with a KafkaError', async () => {
    const topic = uniqueName('kmeta-del');
    await createTopics([{ topic, numPartitions: 2 }]);
    expect(await meta.describeTopics({ topics: [topic] })).toMatchObject([{ topic, partitions: [0, 1] }]);

    await admin.deleteTopics({ topics: [topic] });
    await waitFor(
      `${topic} gone from metadata, by name and by pattern`,
      async () => {
        expect(await meta.describeTopics({ topics: [topic] })).toEqual([]);
        expect(await meta.describeTopics({ pattern: new RegExp(escapeRe(topic)) })).toEqual([]);
        return true;
      },
      SETTLES,
    );

    const err = await meta.fetchOffsets([{ topic, partitions: [0, 1] }], 'read_committed').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KafkaError);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'KAFKA', type: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it('fetchAvailableOffsets: a deleted topic costs only its own partitions, each with its reason', async () => {
    const [kept, gone] = [uniqueName('kmeta-avail-kept'), uniqueName('kmeta-avail-gone')];
    await createTopics([
      { topic: kept, numPartitions: 2 },
      { topic: gone, numPartitions: 1 },
    ]);
    await produce(kept, [3, 1]);
    const ask: TopicPartitions[] = [
      { topic: gone, partitions: [0] },
      { topic: kept, partitions: [1, 0, 7] },
    ];
    await admin.deleteTopics({ topics: [gone] });
    await waitFor(
      `${gone} gone from metadata`,
      async () => {
        expect(await meta.describeTopics({ topics: [gone] })).toEqual([]);
        return true;
      },
      SETTLES,
    );
    const answer = await meta.fetchAvailableOffsets(ask, 'read_committed');
    expect(answer.offsets).toEqual([
      { topic: kept, partition: 1, earliest: 0, latest: 1 },
      { topic: kept, partition: 0, earliest: 0, latest: 3 },
    ]);
    expect(answer.unavailable).toEqual([
      { topic: gone, partition: 0, code: 'UNKNOWN_PARTITION', reason: `topic ${gone} does not exist` },
      { topic: kept, partition: 7, code: 'UNKNOWN_PARTITION', reason: `partition ${kept}/7 does not exist` },
    ]);
    expect(await meta.fetchAvailableOffsets([], 'read_committed')).toEqual({ offsets: [], unavailable: [] });
    await expect(meta.fetchAvailableOffsets(ask, 'snapshot' as never)).rejects.toBeInstanceOf(ValidationError);
  });

  it('fetches earliest and latest offsets after producing, in the order asked', async () => {
    const [t1, t2] = [uniqueName('kmeta-off-1'), uniqueName('kmeta-off-2')];
    await createTopics([
      { topic: t1, numPartitions: 3 },
      { topic: t2, numPartitions: 1 },
    ]);
    await produce(t1, [5, 0, 12]);
    await produce(t2, [7]);

    const ask: TopicPartitions[] = [
      { topic: t2, partitions: [0] },
      { topic: t1, partitions: [2, 0, 1, 2] }, // duplicates collapse
    ];
    const expected = [
      { topic: t2, partition: 0, earliest: 0, latest: 7 },
      { topic: t1, partition: 2, earliest: 0, latest: 12 },
      { topic: t1, partition: 0, earliest: 0, latest: 5 },
      { topic: t1, partition: 1, earliest: 0, latest: 0 },
    ];
    expect(await meta.fetchOffsets(ask, 'read_uncommitted')).toEqual(expected);
    expect(await meta.fetchOffsets(ask, 'read_committed')).toEqual(expected);
    expect(await meta.fetchOffsets([], 'read_committed')).toEqual([]);
  });

  it('read_committed latest is the last stable offset while a transaction is open', async () => {
    const topic = uniqueName('kmeta-txn');
    await createTopics([{ topic, numPartitions: 1 }]);
    await produce(topic, [3]); // offsets 0..2, non-transactional

    const txProducer = kafka.producer({ transactionalId: uniqueName('kmeta-tx'), maxInFlightRequests: 1, idempotent: true });
    await txProducer.connect();
    try {
      const txn = await txProducer.transaction();
      try {
        await txn.send({ topic, messages: [0, 1, 2, 3].map((i) => ({ partition: 0, value: `t${i}` })) }); // offsets 3..6
        const tp = [{ topic, partitions: [0] }];
        expect(await meta.fetchOffsets(tp, 'read_uncommitted')).toEqual([{ topic, partition: 0, earliest: 0, latest: 7 }]);
        expect(await meta.fetchOffsets(tp, 'read_committed')).toEqual([{ topic, partition: 0, earliest: 0, latest: 3 }]);
        // A timestamp lookup under read_committed never lands past the last stable offset either.
        const now = await meta.fetchOffsetsForTimestamp(tp, Date.now() - 1000, 'read_committed');
        expect(now[0]!.offset).toBeLessThanOrEqual(3);
        await txn.commit();
      } catch (e) {
        await txn.abort().catch(() => undefined);
        throw e;
      }
      // Committed: the commit marker takes offset 7, and both levels agree. EndTxn returns before the
      // coordinator has written the markers, so the last stable offset moves shortly after commit().
      const tp = [{ topic, partitions: [0] }];
      await waitFor(
        'the commit markers, at both isolation levels',
        async () => {
          expect(await meta.fetchOffsets(tp, 'read_committed')).toEqual([{ topic, partition: 0, earliest: 0, latest: 8 }]);
          expect(await meta.fetchOffsets(tp, 'read_uncommitted')).toEqual([{ topic, partition: 0, earliest: 0, latest: 8 }]);
          return true;
        },
        SETTLES,
      );
    } finally {
      await txProducer.disconnect();
    }
  });

  it('earliest moves when records are deleted (deleteTopicRecords)', async () => {
    const topic = uniqueName('kmeta-trunc');
    await createTopics([{ topic, numPartitions: 2 }]);
    await produce(topic, [10, 3]);
    // kafkajs's deleteTopicRecords looks the leader up in the admin's metadata cache before loading
    // it (KafkaJSBrokerNotFound otherwise): load the topic's metadata first.
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] });

    expect(await meta.fetchOffsets([{ topic, partitions: [0, 1] }], 'read_committed')).toEqual([
      { topic, partition: 0, earliest: 4, latest: 10 },
      { topic, partition: 1, earliest: 0, latest: 3 },
    ]);
  });

  it('fetchOffsetsForTimestamp: first offset at or after the timestamp, latest when none', async () => {
    const topic = uniqueName('kmeta-ts');
    await createTopics([{ topic, numPartitions: 2 }]);
    const base = Date.now() - 60_000; // within the broker's accepted timestamp window
    await producer.send({
      topic,
      messages: Array.from({ length: 10 }, (_, i) => ({ partition: 0, value: `v${i}`, timestamp: String(base + i * 1000) })),
    });
    const tp = [{ topic, partitions: [0, 1] }];

    for (const level of ['read_committed', 'read_uncommitted'] as const) {
      const at = async (ts: number): Promise<number[]> => (await meta.fetchOffsetsForTimestamp(tp, ts, level)).map((o) => o.offset);
      expect(await at(0)).toEqual([0, 0]);
      expect(await at(base)).toEqual([0, 0]);
      expect(await at(base + 4500)).toEqual([5, 0]); // partition 1 is empty: its latest, 0
      expect(await at(base + 9000)).toEqual([9, 0]);
      expect(await at(base + 9001)).toEqual([10, 0]); // nothing at/after: latest
      expect(await at(Date.now() + 3_600_000)).toEqual([10, 0]);
    }
  });

  it('batches offsets per broker: 20 topics cost the same few requests as 1', async () => {
    const names = Array.from({ length: 20 }, (_, i) => uniqueName(`kmeta-batch-${i}`));
    await createTopics(names.map((topic) => ({ topic, numPartitions: 2 })));
    const m = createKafkajsMetadata(kafka);
    try {
      const cost = async (fn: () => Promise<unknown>): Promise<{ total: number; byApi: Record<string, number> }> => {
        const [t0, b0] = [m.requestCount(), m.requestCounts()];
        await fn();
        const b1 = m.requestCounts();
        const byApi = Object.fromEntries(
          Object.keys(b1)
            .map((k) => [k, b1[k]! - (b0[k] ?? 0)] as const)
            .filter(([, n]) => n > 0),
        );
        return { total: m.requestCount() - t0, byApi };
      };

      const many = await m.describeTopics({ topics: names }); // connects (ApiVersions)
      expect(many).toHaveLength(20);
      // Right after creation the broker can answer NOT_LEADER_OR_FOLLOWER for a moment (the adapter
      // then refreshes metadata and retries, which costs extra requests): settle before measuring.
      const probe = createKafkajsMetadata(kafka, { retries: 0 });
      const ready = (): Promise<unknown> => probe.fetchOffsets(many, 'read_committed');
      await waitFor('every new partition to answer ListOffsets', ready, SETTLES).finally(() => probe.close());
      const describeMany = await cost(() => m.describeTopics({ topics: names }));
      const offsetsMany = await cost(() => m.fetchOffsets(many, 'read_committed'));
      const tsMany = await cost(() => m.fetchOffsetsForTimestamp(many, Date.now() - 1000, 'read_uncommitted'));

      const one = await m.describeTopics({ topics: [names[0]!] });
      const offsetsOne = await cost(() => m.fetchOffsets(one, 'read_committed'));
      const describeAll = await cost(() => m.describeTopics({ pattern: /.*/ }));

      // One broker: one Metadata per describe, one ListOffsets per kind (earliest, latest).
      expect(describeMany).toEqual({ total: 1, byApi: { Metadata: 1 } });
      expect(describeAll).toEqual({ total: 1, byApi: { Metadata: 1 } });
      expect(offsetsMany).toEqual({ total: 2, byApi: { ListOffsets: 2 } });
      expect(tsMany).toEqual({ total: 2, byApi: { ListOffsets: 2 } });
      expect(offsetsOne.total).toBe(offsetsMany.total);
      expect(offsetsMany.total).toBeLessThanOrEqual(4);
      // Connections are reused across calls: the handshake happened once.
      expect(m.requestCounts().ApiVersions).toBe(1);

      // After close() the adapter reconnects on the next call.
      await m.close();
      expect(await m.describeTopics({ topics: [names[1]!] })).toMatchObject([{ topic: names[1], partitions: [0, 1] }]);
      expect(m.requestCounts().ApiVersions).toBe(2);
    } finally {
      await m.close();
      await admin.deleteTopics({ topics: names }).catch(() => undefined);
    }
  });

  it('rejects bad input with ValidationError and unsafe offsets with KafkaError', async () => {
    await expect(meta.fetchOffsets([{ topic: 'x', partitions: [0] }], 'snapshot' as never)).rejects.toBeInstanceOf(ValidationError);
    await expect(meta.fetchOffsetsForTimestamp([{ topic: 'x', partitions: [0] }], -5, 'read_committed')).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(meta.describeTopics({} as never)).rejects.toBeInstanceOf(ValidationError);

    expect(toSafeOffset('9007199254740991', 'latest')).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => toSafeOffset('9007199254740992', 'latest')).toThrow(KafkaError);
    expect(() => toSafeOffset('9223372036854775807', 'latest')).toThrow(/MAX_SAFE_INTEGER/);
  });
});
