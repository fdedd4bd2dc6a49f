/** In-memory KafkaMetadata for fast planner tests: topics, partitions and offsets set by the test. */
import type { KafkaMetadata, PartitionOffsets, TopicPartitions } from '../ports/kafka-metadata';
import { KafkaError } from './errors';

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
  /**
   * Makes `topic` look created a moment ago, until called with false: listed, but its offset
   * look-ups fail the way the kafkajs adapter's do then (LEADER_NOT_AVAILABLE: no leader elected
   * yet; UNKNOWN_TOPIC_OR_PARTITION: the answering broker has not seen the topic yet).
   */
  notReady(topic: string, type?: 'LEADER_NOT_AVAILABLE' | 'UNKNOWN_TOPIC_OR_PARTITION' | false): void;
};

/** Creates an empty in-memory cluster. Internal topics (`__*`) are never listed, as in the adapter. */
export function createMemoryKafka(): MemoryKafka {
  const topics = new Map<string, Log[]>();
  const failing = new Set<string>();
  const notReady = new Map<string, 'LEADER_NOT_AVAILABLE' | 'UNKNOWN_TOPIC_OR_PARTITION'>();
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
    notReady(topic, type = 'LEADER_NOT_AVAILABLE') {
      if (type) notReady.set(topic, type);
      else notReady.delete(topic);
    },
    deleteTopic(topic) {
      topics.delete(topic);
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
        .map(([topic, parts]) => ({ topic, partitions: parts.map((_, i) => i) }));
    },
    async fetchOffsets(parts): Promise<PartitionOffsets[]> {
      requests += 2;
      const bad = parts.find((t) => failing.has(t.topic));
      if (bad) throw new Error(`NOT_LEADER_OR_FOLLOWER for ${bad.topic}`);
      const young = parts.find((t) => notReady.has(t.topic));
      const type = young && notReady.get(young.topic);
      if (young && type === 'LEADER_NOT_AVAILABLE') {
        throw new KafkaError(`partition ${young.topic}/${young.partitions[0] ?? 0} has no leader`, { type, retriable: true });
      }
      if (young && type) throw new KafkaError(`topic ${young.topic} does not exist`, { type });
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
