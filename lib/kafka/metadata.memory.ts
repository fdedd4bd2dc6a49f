/** In-memory KafkaMetadata for fast planner tests: topics, partitions and offsets set by the test. */
import { randomBytes } from 'node:crypto';
import type { KafkaMetadata, PartitionOffsets, TopicPartitions } from '../ports/kafka-metadata';

type Log = { earliest: number; latest: number; lastStable?: number; timestamps?: number[] };

export type MemoryKafka = KafkaMetadata & {
  createTopic(topic: string, partitions: number): void;
  addPartitions(topic: string, count: number): void;
  deleteTopic(topic: string): void;
  /** Appends `n` records to a partition (timestamps optional, for timestamp look-ups). */
  produce(topic: string, partition: number, n: number, timestampMs?: number): void;
  /** Retention: moves the log start offset. */
  truncate(topic: string, partition: number, earliest: number): void;
  /** Makes offset look-ups that include `topic` fail (a leader moving), until called with false. */
  failOffsetsFor(topic: string, failing?: boolean): void;
};

/**
 * Creates an empty in-memory cluster. Internal topics (`__*`) are never listed, as in the adapter.
 * Each created topic gets a new id (as Kafka does), unless `topicIds: false` (a broker before 2.8).
 */
export function createMemoryKafka(opts: { topicIds?: boolean } = {}): MemoryKafka {
  const topics = new Map<string, Log[]>();
  const ids = new Map<string, string>();
  const failing = new Set<string>();
  let requests = 0;
  const log = (topic: string, partition: number): Log => {
    const l = topics.get(topic)?.[partition];
    if (!l) throw new Error(`no partition ${topic}/${partition}`);
    return l;
  };
  return {
    requestCount: () => requests,
    async close() {},
    createTopic(topic, partitions) {
      topics.set(topic, Array.from({ length: partitions }, () => ({ earliest: 0, latest: 0, timestamps: [] })));
      if (opts.topicIds !== false) ids.set(topic, randomBytes(16).toString('base64url'));
    },
    addPartitions(topic, count) {
      const parts = topics.get(topic);
      if (!parts) throw new Error(`no topic ${topic}`);
      for (let i = 0; i < count; i++) parts.push({ earliest: 0, latest: 0, timestamps: [] });
    },
    failOffsetsFor(topic, on = true) {
      if (on) failing.add(topic);
      else failing.delete(topic);
    },
    deleteTopic(topic) {
      topics.delete(topic);
      ids.delete(topic);
    },
    produce(topic, partition, n, timestampMs = 0) {
      const l = log(topic, partition);
      for (let i = 0; i < n; i++) l.timestamps?.push(timestampMs);
      l.latest += n;
    },
    truncate(topic, partition, earliest) {
      const l = log(topic, partition);
      l.earliest = Math.min(earliest, l.latest);
    },
    async describeTopics(selector): Promise<TopicPartitions[]> {
      requests++;
      return [...topics.entries()]
        .filter(([t]) => !t.startsWith('__') && ('topics' in selector ? selector.topics.includes(t) : selector.pattern.test(t)))
        .map(([topic, parts]) => ({ topic, partitions: parts.map((_, i) => i), ...(ids.has(topic) ? { topicId: ids.get(topic) } : {}) }));
    },
    async fetchOffsets(parts): Promise<PartitionOffsets[]> {
      requests += 2;
      const bad = parts.find((t) => failing.has(t.topic));
      if (bad) throw new Error(`NOT_LEADER_OR_FOLLOWER for ${bad.topic}`);
      return parts.flatMap((t) =>
        t.partitions.map((partition) => {
          const l = log(t.topic, partition);
          return { topic: t.topic, partition, earliest: l.earliest, latest: l.latest };
        }),
      );
    },
    async fetchOffsetsForTimestamp(parts, timestampMs) {
      requests++;
      return parts.flatMap((t) =>
        t.partitions.map((partition) => {
          const l = log(t.topic, partition);
          const idx = (l.timestamps ?? []).findIndex((ts, i) => i >= l.earliest && ts >= timestampMs);
          return { topic: t.topic, partition, offset: idx === -1 ? l.latest : idx };
        }),
      );
    },
  };
}
