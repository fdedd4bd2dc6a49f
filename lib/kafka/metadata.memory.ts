/** In-memory KafkaMetadata for fast planner tests: topics, partitions and offsets set by the test. */
import { randomBytes } from 'node:crypto';
import type {
  CommittedOffset,
  IsolationLevel,
  KafkaMetadata,
  OffsetsAnswer,
  PartitionOffsets,
  TimestampOffset,
  TimestampOffsetsAnswer,
  TopicPartitions,
  UnavailableCode,
  UnavailablePartition,
} from '../ports/kafka-metadata';
import { partitionKey } from '../ranges';
import { anchoredTopicPattern, isInternalTopic } from '../config/topics';

const matcherOf =
  (re: RegExp) =>
  (t: string): boolean =>
    re.test(t);

type Log = { earliest: number; latest: number; lastStable?: number; timestamps?: number[] };

export type MemoryKafka = KafkaMetadata & {
  createTopic(topic: string, partitions: number): void;
  addPartitions(topic: string, count: number): void;
  deleteTopic(topic: string): void;
  /**
   * Leaves `topic` out of metadata answers (a broker that has not caught up with it yet), keeping
   * its log and topic id, until called with false.
   */
  hideTopic(topic: string, hidden?: boolean): void;
  /** Appends `n` records to a partition (timestamps optional, for timestamp look-ups). */
  produce(topic: string, partition: number, n: number, timestampMs?: number): void;
  /**
   * An open transaction: under read_committed the log ends at `offset` (the last stable offset)
   * instead of its high watermark, until called with undefined.
   */
  setLastStable(topic: string, partition: number, offset: number | undefined): void;
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
  /** Makes one partition's offsets unavailable with `code` (a dead leader by default), until called with `code` null. */
  setUnavailable(topic: string, partition: number, code?: UnavailableCode | null): void;
  /** Sets consumer group `group`'s committed offset of a partition (as a consumer of the group commits it). */
  commitGroupOffset(group: string, at: CommittedOffset): void;
  /** Makes every read of a group's committed offsets throw `error` (access refused, coordinator down), until called with null. */
  failGroupReads(error: Error | null): void;
};

/** How the kafkajs adapter reports a topic created a moment ago (see `notReady`). */
const NOT_READY_CODES = { LEADER_NOT_AVAILABLE: 'NO_LEADER', UNKNOWN_TOPIC_OR_PARTITION: 'UNKNOWN_PARTITION' } as const;

/**
 * Creates an empty in-memory cluster. Internal topics (`__*`) are never listed, as in the adapter.
 * Each created topic gets a new id (as Kafka does), unless `topicIds: false` (a broker before 2.8).
 */
export function createMemoryKafka(opts: { topicIds?: boolean } = {}): MemoryKafka {
  const topics = new Map<string, Log[]>();
  const ids = new Map<string, string>();
  const failing = new Set<string>();
  const notReady = new Map<string, 'LEADER_NOT_AVAILABLE' | 'UNKNOWN_TOPIC_OR_PARTITION'>();
  const down = new Map<string, UnavailableCode>();
  const hidden = new Set<string>();
  const groups = new Map<string, Map<string, number>>();
  let groupReadError: Error | null = null;
  let requests = 0;
  const log = (topic: string, partition: number): Log => {
    const l = topics.get(topic)?.[partition];
    if (!l) throw new Error(`no partition ${topic}/${partition}`);
    return l;
  };
  /** Why a partition's offsets cannot be read now (as the kafkajs adapter would say), or undefined. */
  const unavailableCode = (topic: string, partition: number): UnavailableCode | undefined => {
    const young = notReady.get(topic);
    return failing.has(topic) ? 'NOT_LEADER' : young ? NOT_READY_CODES[young] : down.get(partitionKey(topic, partition));
  };
  /** Each asked partition as `read` gives it, or unavailable with its code. */
  const partial = <T>(parts: TopicPartitions[], read: (topic: string, partition: number) => T) => {
    const offsets: T[] = [];
    const unavailable: UnavailablePartition[] = [];
    for (const t of parts) {
      for (const partition of t.partitions) {
        const code = unavailableCode(t.topic, partition);
        if (code) unavailable.push({ topic: t.topic, partition, code, reason: `${code} (simulated)` });
        // As the adapter reports a topic or partition gone since discovery.
        else if (!topics.get(t.topic)?.[partition])
          unavailable.push({
            topic: t.topic,
            partition,
            code: 'UNKNOWN_PARTITION',
            reason: `partition ${t.topic}/${partition} does not exist`,
          });
        else offsets.push(read(t.topic, partition));
      }
    }
    return { offsets, unavailable };
  };
  const fetchAvailableOffsets = async (parts: TopicPartitions[], level?: IsolationLevel): Promise<OffsetsAnswer> => {
    requests += 2;
    return partial(parts, (topic, partition): PartitionOffsets => {
      const l = log(topic, partition);
      const latest = level === 'read_committed' && l.lastStable !== undefined ? Math.min(l.lastStable, l.latest) : l.latest;
      return { topic, partition, earliest: l.earliest, latest };
    });
  };
  const fetchAvailableOffsetsForTimestamp = async (parts: TopicPartitions[], timestampMs: number): Promise<TimestampOffsetsAnswer> => {
    requests++;
    return partial(parts, (topic, partition): TimestampOffset => {
      const l = log(topic, partition);
      const idx = (l.timestamps ?? []).findIndex((ts, i) => i >= l.earliest && ts >= timestampMs);
      return { topic, partition, offset: idx === -1 ? l.latest : idx };
    });
  };
  /** All or nothing, as the adapter's: the first unavailable partition becomes the error. */
  const strict = <T>({ offsets, unavailable }: { offsets: T[]; unavailable: UnavailablePartition[] }): T[] => {
    const bad = unavailable[0];
    if (bad) throw new Error(`${bad.code} for ${bad.topic}/${bad.partition}: ${bad.reason}`);
    return offsets;
  };
  return {
    requestCount: () => requests,
    async close() {},
    createTopic(topic, partitions) {
      topics.set(
        topic,
        Array.from({ length: partitions }, () => ({ earliest: 0, latest: 0, timestamps: [] })),
      );
      if (opts.topicIds !== false) ids.set(topic, randomBytes(16).toString('base64url'));
    },
    addPartitions(topic, count) {
      const parts = topics.get(topic);
      if (!parts) throw new Error(`no topic ${topic}`);
      for (let i = 0; i < count; i++) parts.push({ earliest: 0, latest: 0, timestamps: [] });
    },
    setUnavailable(topic, partition, code = 'LEADER_UNREACHABLE') {
      if (code === null) down.delete(partitionKey(topic, partition));
      else down.set(partitionKey(topic, partition), code);
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
      ids.delete(topic);
    },
    hideTopic(topic, hide = true) {
      if (hide) hidden.add(topic);
      else hidden.delete(topic);
    },
    produce(topic, partition, n, timestampMs = 0) {
      const l = log(topic, partition);
      for (let i = 0; i < n; i++) l.timestamps?.push(timestampMs);
      l.latest += n;
    },
    setLastStable(topic, partition, offset) {
      log(topic, partition).lastStable = offset;
    },
    truncate(topic, partition, earliest) {
      const l = log(topic, partition);
      l.earliest = Math.min(earliest, l.latest);
    },
    async describeTopics(selector): Promise<TopicPartitions[]> {
      requests++;
      // As the kafkajs adapter: a pattern matches whole names, internal topics never.
      const wanted = 'topics' in selector ? (t: string) => selector.topics.includes(t) : matcherOf(anchoredTopicPattern(selector.pattern));
      return [...topics.entries()]
        .filter(([t]) => !isInternalTopic(t) && !hidden.has(t) && wanted(t))
        .map(([topic, parts]) => ({ topic, partitions: parts.map((_, i) => i), ...(ids.has(topic) ? { topicId: ids.get(topic) } : {}) }));
    },
    async fetchOffsets(parts, level): Promise<PartitionOffsets[]> {
      return strict(await fetchAvailableOffsets(parts, level));
    },
    fetchAvailableOffsets,
    async fetchOffsetsForTimestamp(parts, timestampMs) {
      return strict(await fetchAvailableOffsetsForTimestamp(parts, timestampMs));
    },
    fetchAvailableOffsetsForTimestamp: (parts, timestampMs) => fetchAvailableOffsetsForTimestamp(parts, timestampMs),
    commitGroupOffset(group, at) {
      let offsets = groups.get(group);
      if (!offsets) groups.set(group, (offsets = new Map()));
      offsets.set(partitionKey(at.topic, at.partition), at.offset);
    },
    failGroupReads(error) {
      groupReadError = error;
    },
    async committedOffsets(group, parts): Promise<CommittedOffset[]> {
      requests++;
      if (groupReadError) throw groupReadError;
      const offsets = groups.get(group);
      return parts.flatMap((t) =>
        t.partitions.flatMap((partition) => {
          const offset = offsets?.get(partitionKey(t.topic, partition));
          return offset === undefined ? [] : [{ topic: t.topic, partition, offset }];
        }),
      );
    },
  };
}
