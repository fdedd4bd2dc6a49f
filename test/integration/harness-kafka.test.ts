/** Proves the local Kafka broker is real: topic admin, produce, and the offsets the planner will read. */
import { createTopicsReady, testKafka, uniqueName } from '../support/env';

describe('local Kafka broker', () => {
  const kafka = testKafka('harness-kafka');
  const admin = kafka.admin();
  const producer = kafka.producer();

  beforeAll(async () => {
    await admin.connect();
    await producer.connect();
  });
  afterAll(async () => {
    await producer.disconnect();
    await admin.disconnect();
  });

  it('creates a 3-partition topic, takes 10,000 records and reports earliest/latest offsets', async () => {
    const topic = uniqueName('harness');
    await createTopicsReady(admin, [{ topic, numPartitions: 3 }]);

    const perPartition = [0, 0, 0];
    for (let batch = 0; batch < 10; batch++) {
      const messages = Array.from({ length: 1000 }, (_, i) => {
        const n = batch * 1000 + i;
        const partition = n % 7 === 0 ? 0 : n % 3; // uneven on purpose
        perPartition[partition]! += 1;
        return { key: `k${n}`, value: JSON.stringify({ n }), partition };
      });
      await producer.send({ topic, messages });
    }

    const offsets = await admin.fetchTopicOffsets(topic);
    const byPartition = offsets.sort((a, b) => a.partition - b.partition);
    expect(byPartition.map((o) => o.partition)).toEqual([0, 1, 2]);
    expect(byPartition.map((o) => Number(o.low))).toEqual([0, 0, 0]);
    expect(byPartition.map((o) => Number(o.high))).toEqual(perPartition);
    expect(byPartition.reduce((s, o) => s + Number(o.high), 0)).toBe(10_000);

    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(meta.topics[0]?.partitions).toHaveLength(3);
  });

  it('refuses to auto-create topics (a typo never creates a topic)', async () => {
    const topic = uniqueName('missing');
    // A producer would retry UNKNOWN_TOPIC for a while; a metadata request answers at once.
    await expect(admin.fetchTopicMetadata({ topics: [topic] })).rejects.toThrow(/does not host this topic-partition/);
    const topics = await admin.listTopics();
    expect(topics).not.toContain(topic);
  });
});
