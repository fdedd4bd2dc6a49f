/**
 * Port: reads exactly one offset range `[from, until)` of one partition, with no consumer group.
 * Offsets are not contiguous (compaction gaps, transaction markers, aborted records), so a chunk
 * says where reading continues (`nextOffset`) instead of callers assuming `offset + 1`.
 */
import type { IsolationLevel } from './kafka-metadata';

export type RecordHeaders = Record<string, Buffer | Buffer[] | undefined>;

export type KafkaRecord = {
  topic: string;
  partition: number;
  offset: number;
  /** Milliseconds since the epoch (create time or log-append time, as the topic records it). */
  timestampMs: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeaders;
};

export type RecordChunk = {
  /** Data records only, in offset order, all within the range; never control records. */
  records: KafkaRecord[];
  /**
   * Where the next chunk starts: past every batch this chunk consumed, including batches with no
   * deliverable records. `nextOffset >= until` means the range is complete.
   */
  nextOffset: number;
  /** Bytes fetched for this chunk (for memory accounting and benchmarks). */
  bytes: number;
};

export type ReadRequest = {
  topic: string;
  partition: number;
  from: number;
  until: number;
  isolationLevel: IsolationLevel;
  /** Upper bound of one chunk's records (handler batch size). */
  maxChunkRecords?: number;
  /** Upper bound of bytes per fetch; bounds memory whatever the record count. */
  maxFetchBytes?: number;
  /** Stops reading (e.g. the Lambda deadline is near). */
  signal?: AbortSignal;
};

export type RangeReader = {
  /**
   * Yields chunks covering `[from, until)` in order. Leader changes and broker restarts are retried
   * (same offset, backoff, metadata refresh). Throws `OffsetOutOfRangeError` when retention removed
   * the next offset, `PartitionNotFoundError` when the topic or partition no longer exists.
   */
  read(req: ReadRequest): AsyncIterable<RecordChunk>;
  /**
   * The topic's id (KIP-516) as the cluster reports it now; undefined when the broker gives none or
   * the topic does not exist. Optional: readers without topic ids leave it out.
   */
  topicId?(topic: string): Promise<string | undefined>;
  /** Number of Fetch requests sent (benchmarks). */
  requestCount(): number;
  close(): Promise<void>;
};
