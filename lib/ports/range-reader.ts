/**
 * Port: reads exactly one offset range `[from, until)` of one partition, with no consumer group.
 * Offsets are not contiguous (compaction gaps, transaction markers, aborted records), so a chunk
 * says where reading continues (`nextOffset`) instead of callers assuming `offset + 1`.
 */
import { KafkaError } from '../errors';
import type { IsolationLevel } from './kafka-metadata';

/** One record header as written: names may repeat, a value may be null (Kafka allows both). */
export type RecordHeader = { key: string; value: Buffer | null };

/** What the record's timestamp means: set by the producer, or by the broker on append (topic config). */
export type TimestampType = 'CreateTime' | 'LogAppendTime';

export type KafkaRecord = {
  topic: string;
  partition: number;
  offset: number;
  /** Milliseconds since the epoch, of the kind `timestampType` says. */
  timestampMs: number;
  timestampType: TimestampType;
  key: Buffer | null;
  value: Buffer | null;
  /**
   * Every header in write order, exactly as the producer wrote it (repeated names and null values
   * kept), as Java's `ConsumerRecord.headers()` iterates them. Shared and frozen when empty: do not
   * mutate. Look-ups by name: `lastHeader`, `headerValues`, `headerMap`.
   */
  headers: readonly RecordHeader[];
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
  /**
   * An open read: records arrive while it runs (a continuous stream's open segment range, `until`
   * OPEN_UNTIL). Waiting for records is normal, so there is no stall timeout, and a chunk is
   * yielded as soon as the read has caught up with the partition's readable end (high watermark,
   * or last stable offset under read_committed), instead of filling up to `maxChunkRecords`: each
   * small batch reaches the handler as soon as it is readable. The iteration ends only when the
   * signal aborts (then without an error), `until` is reached, or on an error.
   */
  open?: boolean;
  /**
   * How long the broker may hold a Fetch that finds nothing readable yet (its long poll), for this
   * read; default the reader's `maxWaitMs` option. Readers without a broker ignore it.
   */
  maxWaitMs?: number;
};

export type RangeReader = {
  /**
   * Yields chunks covering `[from, until)` in order (an open read: as records arrive, see
   * `ReadRequest.open`). Leader changes and broker restarts are retried
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

// The errors `read` throws: part of the port's contract, so callers branch on them whatever the adapter.

/**
 * The offset to read is outside the partition's log: retention (or `deleteRecords`) removed it, or,
 * rarely, it lies beyond the log end. `logStartOffset` is the partition's earliest offset when it
 * could be looked up, so the caller can record the exact lost span.
 */
export class OffsetOutOfRangeError extends KafkaError {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: number;
  readonly logStartOffset: number | undefined;

  constructor(
    message: string,
    details: { topic: string; partition: number; fetchOffset: number; logStartOffset?: number; cause?: unknown },
  ) {
    super(message, { cause: details.cause, type: 'OFFSET_OUT_OF_RANGE', retriable: false });
    this.topic = details.topic;
    this.partition = details.partition;
    this.fetchOffset = details.fetchOffset;
    this.logStartOffset = details.logStartOffset;
  }
}

/** The topic, or that partition of it, does not exist (deleted, or never created); nothing is auto-created. */
export class PartitionNotFoundError extends KafkaError {
  readonly topic: string;
  readonly partition: number;

  constructor(message: string, details: { topic: string; partition: number; cause?: unknown }) {
    super(message, { cause: details.cause, type: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: false });
    this.topic = details.topic;
    this.partition = details.partition;
  }
}

/**
 * The value of the last header named `key` (Java's `Headers.lastHeader`): `null` when that header's
 * value is null, `undefined` when there is no such header.
 */
export function lastHeader(headers: readonly RecordHeader[], key: string): Buffer | null | undefined {
  for (let i = headers.length - 1; i >= 0; i--) if (headers[i]!.key === key) return headers[i]!.value;
  return undefined;
}

/** The values of every header named `key`, in write order (Java's `Headers.headers(key)`). */
export function headerValues(headers: readonly RecordHeader[], key: string): Array<Buffer | null> {
  const out: Array<Buffer | null> = [];
  for (const h of headers) if (h.key === key) out.push(h.value);
  return out;
}

/**
 * The headers grouped by name (a `Map`, so names such as `__proto__` or `constructor` are plain
 * keys), each name's values in write order; the order across names is lost: use `headers` for that.
 */
export function headerMap(headers: readonly RecordHeader[]): Map<string, Array<Buffer | null>> {
  const out = new Map<string, Array<Buffer | null>>();
  for (const h of headers) {
    const values = out.get(h.key);
    if (values) values.push(h.value);
    else out.set(h.key, [h.value]);
  }
  return out;
}
