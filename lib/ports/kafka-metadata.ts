/**
 * Port: what the planner needs to know about Kafka. Offsets are plain numbers (int64 offsets stay
 * below 2^53 in practice; adapters reject anything larger rather than round it).
 */

/**
 * A topic's partitions as the cluster reports them now. `topicId` (KIP-516) tells a topic deleted
 * and re-created under the same name apart from the old one; absent when the broker gives none
 * (Metadata below v10, brokers before 2.8).
 */
export type TopicPartitions = { topic: string; partitions: number[]; topicId?: string };

/** Earliest (log start) and latest (high watermark, or last stable offset under read_committed). */
export type PartitionOffsets = { topic: string; partition: number; earliest: number; latest: number };

export type IsolationLevel = 'read_committed' | 'read_uncommitted';

export type KafkaMetadata = {
  /**
   * Non-internal topics that exist now, with their partitions. `topics` limits the answer to those
   * names (missing ones are simply absent); `pattern` matches whole names. Internal topics
   * (`__consumer_offsets`, `__transaction_state`, ...) never appear.
   */
  describeTopics(selector: { topics: string[] } | { pattern: RegExp }): Promise<TopicPartitions[]>;
  /** Earliest and latest offsets of all given partitions, batched: one ListOffsets per leader and kind. */
  fetchOffsets(partitions: TopicPartitions[], isolationLevel: IsolationLevel): Promise<PartitionOffsets[]>;
  /**
   * The first offset whose timestamp is >= `timestampMs`, per partition; `latest` where no such
   * record exists (Flink's and Spark's `latest` fallback).
   */
  fetchOffsetsForTimestamp(
    partitions: TopicPartitions[],
    timestampMs: number,
    isolationLevel: IsolationLevel,
  ): Promise<Array<{ topic: string; partition: number; offset: number }>>;
  /** Number of Kafka requests sent so far (for benchmarks). */
  requestCount(): number;
  close(): Promise<void>;
};
