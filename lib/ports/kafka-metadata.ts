/**
 * Port: what the planner needs to know about Kafka. Offsets are plain numbers (int64 offsets stay
 * below 2^53 in practice; adapters reject anything larger rather than round it).
 */
import { KafkaError, ValidationError } from '../errors';

/**
 * A topic's partitions as the cluster reports them now. `topicId` (KIP-516) tells a topic deleted
 * and re-created under the same name apart from the old one; absent when the broker gives none
 * (Metadata below v10, brokers before 2.8).
 */
export type TopicPartitions = { topic: string; partitions: number[]; topicId?: string };

/** Earliest (log start) and latest (high watermark, or last stable offset under read_committed). */
export type PartitionOffsets = { topic: string; partition: number; earliest: number; latest: number };

export type IsolationLevel = 'read_committed' | 'read_uncommitted';

/**
 * `level` when it is an isolation level, else a `ValidationError` (callers in plain JavaScript may
 * pass anything); `where` prefixes the message (`read`).
 */
export function checkIsolationLevel(level: unknown, where?: string): IsolationLevel {
  if (level === 'read_committed' || level === 'read_uncommitted') return level;
  const prefix = where ? `${where}: ` : '';
  throw new ValidationError(`${prefix}isolation level must be read_committed or read_uncommitted, not ${JSON.stringify(level)}`);
}

/**
 * Why a partition's offsets could not be read:
 * - `LEADER_UNREACHABLE`: its leader broker refused the connection, dropped it or timed out (a dead
 *   broker stays leader in the metadata until the controller notices, ~`broker.session.timeout.ms`);
 * - `NO_LEADER`: the metadata names no live leader (an election under way);
 * - `NOT_LEADER`: the broker asked is no longer the leader, still after refreshing the metadata;
 * - `UNKNOWN_PARTITION`: the topic or partition no longer exists (deleted since discovery);
 * - `ERROR`: any other failure of that partition's request.
 */
export type UnavailableCode = 'LEADER_UNREACHABLE' | 'NO_LEADER' | 'NOT_LEADER' | 'UNKNOWN_PARTITION' | 'ERROR';

/** A partition whose offsets this call could not read, with the one-line reason. */
export type UnavailablePartition = { topic: string; partition: number; code: UnavailableCode; reason: string };

/**
 * One partition's offsets could not be read now (see `UnavailableCode`: its leader dead or moving),
 * for an operation that needs that very partition; `type` is the code.
 */
export class PartitionUnavailableError extends KafkaError {
  readonly topic: string;
  readonly partition: number;

  constructor(message: string, details: { topic: string; partition: number; code: string; cause?: unknown }) {
    super(message, { cause: details.cause, type: details.code, retriable: true });
    this.topic = details.topic;
    this.partition = details.partition;
  }
}

/** Every asked partition appears in exactly one of the two lists. */
export type OffsetsAnswer = { offsets: PartitionOffsets[]; unavailable: UnavailablePartition[] };

/** One partition's offset for a timestamp (see `fetchOffsetsForTimestamp`). */
export type TimestampOffset = { topic: string; partition: number; offset: number };

/** Every asked partition appears in exactly one of the two lists. */
export type TimestampOffsetsAnswer = { offsets: TimestampOffset[]; unavailable: UnavailablePartition[] };

/** A consumer group's committed offset of one partition: the next offset its consumers would read. */
export type CommittedOffset = { topic: string; partition: number; offset: number };

export type KafkaMetadata = {
  /**
   * Non-internal topics that exist now, with their partitions. `topics` limits the answer to those
   * names (missing ones are simply absent); `pattern` matches whole names. Internal topics
   * (`__consumer_offsets`, `__transaction_state`, ...) never appear.
   */
  describeTopics(selector: { topics: string[] } | { pattern: RegExp }): Promise<TopicPartitions[]>;
  /**
   * Earliest and latest offsets of all given partitions, batched: one ListOffsets per leader and kind.
   * All or nothing: throws when any partition is unavailable (see `fetchAvailableOffsets`).
   */
  fetchOffsets(partitions: TopicPartitions[], isolationLevel: IsolationLevel): Promise<PartitionOffsets[]>;
  /**
   * The same look-up, partial: the offsets of every partition whose leader answered, and the others
   * as unavailable with their reason, in a bounded time (a dead leader costs its own partitions,
   * not the others). Throws only for bad input, or when no metadata can be read at all.
   */
  fetchAvailableOffsets(partitions: TopicPartitions[], isolationLevel: IsolationLevel): Promise<OffsetsAnswer>;
  /**
   * The first offset whose timestamp is >= `timestampMs`, per partition; `latest` where no such
   * record exists (Flink's and Spark's `latest` fallback). All or nothing, as `fetchOffsets`.
   */
  fetchOffsetsForTimestamp(partitions: TopicPartitions[], timestampMs: number, isolationLevel: IsolationLevel): Promise<TimestampOffset[]>;
  /** The same look-up, partial, bounded in time, as `fetchAvailableOffsets`. */
  fetchAvailableOffsetsForTimestamp(
    partitions: TopicPartitions[],
    timestampMs: number,
    isolationLevel: IsolationLevel,
  ): Promise<TimestampOffsetsAnswer>;
  /**
   * The committed offsets of consumer group `group` for the given partitions (read from the group's
   * coordinator; nothing joins the group). A partition the group has no offset for is absent, and a
   * group that does not exist has none. Throws a `KafkaError` naming the group when the read fails
   * (coordinator unreachable, access to the group refused, an invalid group id).
   */
  committedOffsets(group: string, partitions: TopicPartitions[]): Promise<CommittedOffset[]>;
  /** Number of Kafka requests sent so far (for benchmarks). */
  requestCount(): number;
  close(): Promise<void>;
};
