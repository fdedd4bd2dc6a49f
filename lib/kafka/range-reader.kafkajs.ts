/**
 * `RangeReader` over kafkajs 2.2.4's internal Cluster: a group-less Fetch (v11) from the partition
 * leader, like Spark's KafkaRDD (assign + seek, never a consumer group, so no rebalance and no
 * `group.initial.rebalance.delay.ms`). One cluster per reader, kept across `read` calls (a warm
 * Lambda reads many ranges); `close()` releases its connections.
 *
 * How a range is read:
 * - Offsets advance by record batch ends (`baseOffset + lastOffsetDelta + 1`), never by
 *   `offset + 1`: compaction leaves gaps and empty batches, transactions leave control batches,
 *   aborted data is skipped. The Fetch response is decoded batch by batch (fetch-response.ts)
 *   because kafkajs's decoder drops empty batches and would leave a compacted range stuck.
 * - Only `from <= offset < until` is delivered, in order, each offset once. The first batch of a
 *   response may start before the fetch offset (its earlier records are skipped) and the last may
 *   run past `until` (the rest is left).
 * - read_committed: the broker stops at the last stable offset (LSO); aborted transactions are
 *   dropped the way Java's consumer does it (aborted.ts); control records are never delivered.
 * - Lazy and bounded: a Fetch is sent only when the consumer asks for more, at most
 *   `maxFetchBytes` each (partition and response limit; kafkajs would send a partition limit of 0;
 *   the broker still returns one whole batch if that batch alone is larger). Records are decoded
 *   (decompressed) one batch at a time as the chunk fills. A chunk may span fetches and closes at
 *   `maxChunkRecords` records or once the batches it consumed reach `maxFetchBytes`, so memory holds
 *   one response, one decoded batch and one chunk, whatever the range size.
 * - Records: offsets and timestamps as numbers (an offset beyond Number.MAX_SAFE_INTEGER is an
 *   error, never rounded), the timestamp type, key/value Buffers or null, headers as an ordered
 *   list exactly as written (record-batch.ts).
 * - Retriable failures (leader moved, broker restarting, connection lost, request timed out)
 *   re-fetch the same offset after a metadata refresh, with exponential backoff bounded in total
 *   time. OFFSET_OUT_OF_RANGE becomes `OffsetOutOfRangeError` with the current log start offset
 *   (ListOffsets earliest); a topic or partition that stays gone from fresh metadata for
 *   `missingGraceMs`, `PartitionNotFoundError` (a topic created a moment ago is missing too, from a
 *   broker that has not caught up yet: within the grace that is retried like a leader change).
 * - Waiting: if the readable end (LSO under read_committed, else the high watermark) is below
 *   `until` (a transaction still open, or a leader whose high watermark lags), the reader hands
 *   over what it has, then polls with the broker's long-poll (`maxWaitMs`: the broker holds the
 *   Fetch until data becomes readable), never spinning, and gives up with `TimeoutError` after
 *   `stallTimeoutMs` without progress.
 * - `signal`: once aborted, the iteration ends at once, without an error, even mid-request or
 *   mid-wait (a request in flight is abandoned); records read but not yet yielded are dropped (they
 *   are read again next time). The last chunk's `nextOffset < until` tells the caller the range is
 *   unfinished, as when it stops iterating on its own.
 * - A failure after some records were read first yields them as a chunk, then throws.
 */
import type { Kafka } from 'kafkajs';
import { TimeoutError, ValidationError } from '../errors';
import type { KafkaRecord, RangeReader, ReadRequest, RecordChunk } from '../ports/range-reader';
import { controlRecordType, createAbortedBatchFilter } from './aborted';
import {
  EARLIEST_TIMESTAMP,
  ISOLATION_LEVEL,
  KafkajsCluster,
  LATEST_TIMESTAMP,
  protocolError,
  type FetchPartitionRequest,
} from './cluster.kafkajs';
import { registerCodecs } from './codecs';
import { KafkaError, OffsetOutOfRangeError, PartitionNotFoundError } from './errors';
import type { FetchedPartition, FetchResponse } from './fetch-response';
import { toSafeOffset } from './metadata.kafkajs';
import {
  backoffMs,
  DEFAULT_RETRY_POLICY,
  systemClock,
  withRetries,
  type Clock,
  type RetryPolicy,
} from './retry';

export type RangeReaderOptions = {
  /** Default of `ReadRequest.maxChunkRecords`. Default 500. */
  maxChunkRecords?: number;
  /** Default of `ReadRequest.maxFetchBytes`. Default 1 MiB (Java's max.partition.fetch.bytes). */
  maxFetchBytes?: number;
  /** Broker-side long poll of a Fetch that finds nothing readable yet. Default 500 ms. */
  maxWaitMs?: number;
  /** Longest wait without progress below `until` (open transaction, lagging leader). Default 30 s. */
  stallTimeoutMs?: number;
  /** Retries of one Fetch on retriable errors. Default 100 ms doubling to 2 s, 30 s in total. */
  retry?: Partial<RetryPolicy>;
  /**
   * How long the topic or partition must stay missing from fresh metadata before the reader
   * concludes it was deleted (`PartitionNotFoundError`). A broker that has not yet applied the
   * metadata of a topic created a moment ago (or of partitions just added) answers exactly like one
   * whose topic was deleted; until then it is retried like a leader change. Default 5 s.
   */
  missingGraceMs?: number;
  clock?: Clock;
  random?: () => number;
};

export type KafkajsRangeReaderOptions = RangeReaderOptions & {
  /** Cached partition leaders older than this are looked up again. Default 5 minutes. */
  metadataMaxAgeMs?: number;
  /** Verify record batch CRC32C checksums (Java's `check.crcs`). Default true. */
  checkCrcs?: boolean;
};

/** What the reader needs from Kafka: the kafkajs cluster in production, a fake in unit tests. */
export type FetchTransport = {
  /** Leader node id of the partition; `refresh` forces a Metadata request. Throws PartitionNotFoundError. */
  leader(topic: string, partition: number, refresh: boolean): Promise<number>;
  fetch(nodeId: number, req: FetchPartitionRequest): Promise<FetchResponse>;
  /** The partition's log start offset and high watermark (ListOffsets earliest and latest). */
  logOffsets(topic: string, partition: number): Promise<{ earliest: number; latest: number }>;
  /** The topic's id now (fresh Metadata), undefined when the broker gives none or the topic is gone. */
  topicId?(topic: string): Promise<string | undefined>;
  close(): Promise<void>;
};

const NO_ERROR = 0;
const OFFSET_OUT_OF_RANGE = 1;
const UNKNOWN_TOPIC_OR_PARTITION = 3;
const INVALID_TOPIC_EXCEPTION = 17;
const DEFAULT_MAX_CHUNK_RECORDS = 500;
const DEFAULT_MAX_FETCH_BYTES = 1024 * 1024;
const MAX_INT32 = 2 ** 31 - 1;

/** kafkajs errors that mean "the connection or the broker, not the request": retry elsewhere or later. */
const RETRIABLE_KAFKAJS_ERRORS = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSLockTimeout',
  'KafkaJSMetadataNotLoaded',
]);

/** Whether a failed fetch attempt may succeed if retried at the same offset after a metadata refresh. */
export function isRetriableFetchError(error: unknown): boolean {
  if (error instanceof PartitionNotFoundError || error instanceof OffsetOutOfRangeError) return false;
  if (error instanceof KafkaError) return error.retriable;
  const e = error as { name?: unknown; retriable?: unknown; cause?: unknown } | undefined;
  if (typeof e?.name !== 'string') return false;
  if (RETRIABLE_KAFKAJS_ERRORS.has(e.name)) return true;
  if (e.name === 'KafkaJSProtocolError') return e.retriable === true;
  // kafkajs's own connect/metadata retrier gave up: judge by what it gave up on (our budget bounds it).
  if (e.name === 'KafkaJSNumberOfRetriesExceeded') return isRetriableFetchError(e.cause);
  return false;
}

function checkRequest(req: ReadRequest, defaults: { maxChunkRecords: number; maxFetchBytes: number }) {
  if (typeof req?.topic !== 'string' || req.topic === '') throw new ValidationError('read: topic must be a non-empty string');
  if (!Number.isInteger(req.partition) || req.partition < 0) {
    throw new ValidationError(`read: partition must be a non-negative integer, not ${JSON.stringify(req.partition)}`);
  }
  for (const [name, v] of [
    ['from', req.from],
    ['until', req.until],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new ValidationError(`read: ${name} must be a non-negative safe integer offset, not ${JSON.stringify(v)}`);
    }
  }
  if (req.until < req.from) throw new ValidationError(`read: until ${req.until} is before from ${req.from}`);
  if (req.isolationLevel !== 'read_committed' && req.isolationLevel !== 'read_uncommitted') {
    throw new ValidationError(`read: isolation level must be read_committed or read_uncommitted, not ${JSON.stringify(req.isolationLevel)}`);
  }
  const maxChunkRecords = req.maxChunkRecords ?? defaults.maxChunkRecords;
  const maxFetchBytes = req.maxFetchBytes ?? defaults.maxFetchBytes;
  if (!Number.isInteger(maxChunkRecords) || maxChunkRecords < 1) {
    throw new ValidationError(`read: maxChunkRecords must be a positive integer, not ${maxChunkRecords}`);
  }
  if (!Number.isInteger(maxFetchBytes) || maxFetchBytes < 1 || maxFetchBytes > MAX_INT32) {
    throw new ValidationError(`read: maxFetchBytes must be an integer in [1, 2^31 - 1], not ${maxFetchBytes}`);
  }
  return { maxChunkRecords, maxFetchBytes };
}

function protocolFailure(where: string, code: number): KafkaError {
  const cause = protocolError(code);
  return new KafkaError(`fetch ${where}: ${cause.message}`, { cause, type: cause.type, retriable: cause.retriable });
}

/** A `RangeReader` over any `FetchTransport` (the kafkajs one below, or a fake). */
export function createRangeReader(transport: FetchTransport, opts: RangeReaderOptions = {}): RangeReader {
  const defaults = {
    maxChunkRecords: opts.maxChunkRecords ?? DEFAULT_MAX_CHUNK_RECORDS,
    maxFetchBytes: opts.maxFetchBytes ?? DEFAULT_MAX_FETCH_BYTES,
  };
  const maxWaitMs = opts.maxWaitMs ?? 500;
  const stallTimeoutMs = opts.stallTimeoutMs ?? 30_000;
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...opts.retry };
  const clock = opts.clock ?? systemClock;
  const missingGraceMs = opts.missingGraceMs ?? 5_000;
  let fetches = 0;

  /** One Fetch at `offset`, retried on retriable errors; returns the partition's data without errors. */
  async function fetchAt(
    req: ReadRequest,
    offset: number,
    level: number,
    maxBytes: number,
  ): Promise<FetchedPartition> {
    const { topic, partition, signal } = req;
    const where = `${topic}/${partition}`;
    /** When fresh metadata first lacked the partition (reset once it is back). */
    let missingSince: number | undefined;
    return withRetries(
      async (retry) => {
        let nodeId: number;
        try {
          nodeId = await transport.leader(topic, partition, retry > 0);
          missingSince = undefined;
        } catch (error) {
          if (error instanceof PartitionNotFoundError) missingSince ??= clock.now();
          throw error;
        }
        fetches += 1;
        const response = await transport.fetch(nodeId, {
          topic,
          partition,
          fetchOffset: offset,
          isolationLevel: level,
          maxWaitTimeMs: maxWaitMs,
          minBytes: 1,
          maxBytes,
        });
        if (response.errorCode !== NO_ERROR) throw protocolFailure(where, response.errorCode);
        const data = response.partitions.find((p) => p.topic === topic && p.partition === partition);
        if (!data) throw new KafkaError(`fetch ${where}: the response lacks the partition`, { retriable: true });
        if (data.errorCode === OFFSET_OUT_OF_RANGE) throw await offsetOutOfRange(topic, partition, offset);
        if (data.errorCode === UNKNOWN_TOPIC_OR_PARTITION || data.errorCode === INVALID_TOPIC_EXCEPTION) {
          // Deleted, or metadata not yet propagated to this broker: the refreshed metadata of the
          // retry tells which (PartitionNotFoundError when the cluster no longer knows it).
          throw protocolFailure(where, UNKNOWN_TOPIC_OR_PARTITION);
        }
        if (data.errorCode !== NO_ERROR) throw protocolFailure(where, data.errorCode);
        return data;
      },
      {
        operation: `fetch ${where} at offset ${offset}`,
        policy,
        // Missing from the metadata: "not there yet" within the grace, "deleted" once it has passed.
        isRetriable: (error) =>
          error instanceof PartitionNotFoundError
            ? missingSince !== undefined && clock.now() - missingSince < missingGraceMs
            : isRetriableFetchError(error),
        signal,
        clock,
        random: opts.random,
      },
    );
  }

  async function offsetOutOfRange(topic: string, partition: number, offset: number): Promise<OffsetOutOfRangeError> {
    const where = `${topic}/${partition}`;
    let log: { earliest: number; latest: number };
    try {
      log = await transport.logOffsets(topic, partition);
    } catch (cause) {
      return new OffsetOutOfRangeError(
        `${where}: offset ${offset} is out of range (the log start offset could not be looked up)`,
        { topic, partition, fetchOffset: offset, cause },
      );
    }
    const message =
      offset < log.earliest
        ? `${where}: offset ${offset} is no longer in the log; retention or deleteRecords moved the log start offset to ${log.earliest}`
        : `${where}: offset ${offset} is beyond the end of the log (high watermark ${log.latest})`;
    return new OffsetOutOfRangeError(message, { topic, partition, fetchOffset: offset, logStartOffset: log.earliest });
  }

  async function* readRange(
    req: ReadRequest,
    maxChunkRecords: number,
    maxFetchBytes: number,
  ): AsyncGenerator<RecordChunk, void, undefined> {
    const { topic, partition, until, signal } = req;
    const where = `${topic}/${partition}`;
    const committed = req.isolationLevel === 'read_committed';
    const level = ISOLATION_LEVEL[req.isolationLevel];
    /** Every offset below `position` is consumed: delivered (or in `chunk`) or legitimately skipped. */
    let position = req.from;
    let yieldedUpTo = req.from;
    let chunk: KafkaRecord[] = [];
    let chunkBytes = 0;
    let stalledSince: number | undefined;
    let stallRetry = 0;

    const take = (nextOffset: number): RecordChunk => {
      const out: RecordChunk = { records: chunk, nextOffset: Math.min(nextOffset, until), bytes: chunkBytes };
      chunk = [];
      chunkBytes = 0;
      yieldedUpTo = out.nextOffset;
      return out;
    };
    const hasUnyielded = (): boolean => chunk.length > 0 || Math.min(position, until) > yieldedUpTo;

    while (position < until) {
      if (signal?.aborted) return;
      const startedAt = clock.now();
      let data: FetchedPartition;
      try {
        data = await fetchAt(req, position, level, maxFetchBytes);
      } catch (error) {
        if (signal?.aborted) return;
        // Hand over what was read before the failure, then report it.
        if (hasUnyielded()) yield take(position);
        throw error;
      }

      const before = position;
      const isAborted = committed ? createAbortedBatchFilter(data.abortedTransactions) : () => false;
      for (const batch of data.batches) {
        if (batch.baseOffset >= until) {
          position = until;
          break;
        }
        // Every batch goes through the filter, in order: it tracks which producers are aborted.
        const controlType = committed && batch.isControl ? controlRecordType((await batch.records())[0]?.key) : undefined;
        const aborted = isAborted({ ...batch, controlType });
        if (batch.lastOffset < position) continue; // before the fetch offset (already consumed)
        // A batch's bytes count towards the chunk that takes its first record (or, if it delivers
        // none, the chunk pending at its end).
        let unaccountedBytes = batch.sizeBytes;
        if (!batch.isControl && !aborted && batch.recordCount > 0) {
          for (const record of await batch.records()) {
            const offset = record.offset;
            if (offset < position) continue;
            if (offset >= until) break;
            // A full chunk ends right before the next deliverable record: that record's offset is
            // where reading resumes.
            if (chunk.length >= maxChunkRecords) yield take(offset);
            chunk.push(record);
            chunkBytes += unaccountedBytes;
            unaccountedBytes = 0;
          }
        }
        chunkBytes += unaccountedBytes;
        position = Math.max(position, batch.lastOffset + 1);
        if (chunkBytes >= maxFetchBytes && position < until) yield take(position);
      }
      if (position > until) position = until;

      if (position > before) {
        stalledSince = undefined;
        stallRetry = 0;
        if (chunk.length >= maxChunkRecords) yield take(position);
        continue;
      }

      // No progress: nothing readable at `position` yet. Deliver what is pending, then wait.
      const readableEnd = committed ? data.lastStableOffset : data.highWatermark;
      if (hasUnyielded()) yield take(position);
      stalledSince ??= startedAt;
      const stalledMs = clock.now() - stalledSince;
      if (stalledMs >= stallTimeoutMs) {
        const why =
          position < readableEnd
            ? `the broker returned no record batch at offset ${position} although its ${committed ? 'last stable offset' : 'high watermark'} is ${readableEnd}`
            : committed
              ? `the last stable offset stayed at ${readableEnd} (a transaction is still open)`
              : `the high watermark stayed at ${readableEnd}`;
        throw new TimeoutError(`read ${where} [${req.from}, ${until}): no progress at offset ${position} for ${stalledMs} ms: ${why}`);
      }
      // The broker already held the Fetch for up to maxWaitMs waiting for readable data; only if it
      // answered early (or the end offset was below `position` anyway) wait here, so as not to spin.
      const elapsedMs = clock.now() - startedAt;
      if (elapsedMs < maxWaitMs / 2) {
        const delayMs = Math.min(backoffMs(stallRetry, policy, opts.random), stallTimeoutMs - stalledMs);
        stallRetry += 1;
        try {
          await clock.sleep(Math.max(delayMs, 0), signal);
        } catch (error) {
          if (signal?.aborted) return;
          throw error;
        }
      }
    }
    if (hasUnyielded()) yield take(until);
  }

  return {
    read(req) {
      const { maxChunkRecords, maxFetchBytes } = checkRequest(req, defaults);
      return {
        [Symbol.asyncIterator]: () => readRange(req, maxChunkRecords, maxFetchBytes),
      };
    },
    requestCount: () => fetches,
    ...(transport.topicId ? { topicId: (topic: string) => transport.topicId!(topic) } : {}),
    close: () => transport.close(),
  };
}

/** The kafkajs transport: leaders from (cached) metadata, Fetch and ListOffsets to the leader. */
export function createKafkajsTransport(
  kafka: Kafka,
  opts: { metadataMaxAgeMs?: number; checkCrcs?: boolean; clock?: Clock } = {},
): FetchTransport {
  const metadataMaxAgeMs = opts.metadataMaxAgeMs ?? 5 * 60_000;
  const clock = opts.clock ?? systemClock;
  const leaders = new Map<string, { nodeId: number; at: number }>();
  let cluster: KafkajsCluster | undefined;
  const getCluster = (): KafkajsCluster => (cluster ??= new KafkajsCluster(kafka));
  const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

  async function leader(topic: string, partition: number, refresh: boolean): Promise<number> {
    const cached = leaders.get(key(topic, partition));
    if (!refresh && cached && clock.now() - cached.at < metadataMaxAgeMs) return cached.nodeId;
    const metadata = await getCluster().metadata([topic]);
    const now = clock.now();
    const t = metadata.topicMetadata.find((x) => x.topic === topic);
    if (!t || t.topicErrorCode === UNKNOWN_TOPIC_OR_PARTITION || t.topicErrorCode === INVALID_TOPIC_EXCEPTION) {
      throw new PartitionNotFoundError(`topic ${topic} does not exist (deleted, or never created)`, { topic, partition });
    }
    if (t.topicErrorCode !== NO_ERROR) throw protocolFailure(`${topic}/${partition} (metadata)`, t.topicErrorCode);
    const brokers = new Set(metadata.brokers.map((b) => b.nodeId));
    for (const p of t.partitionMetadata) {
      if (p.leader >= 0 && brokers.has(p.leader)) leaders.set(key(topic, p.partitionId), { nodeId: p.leader, at: now });
      else leaders.delete(key(topic, p.partitionId));
    }
    const p = t.partitionMetadata.find((x) => x.partitionId === partition);
    if (!p) {
      throw new PartitionNotFoundError(
        `partition ${partition} of topic ${topic} does not exist (the topic has ${t.partitionMetadata.length} partitions)`,
        { topic, partition },
      );
    }
    const found = leaders.get(key(topic, partition));
    if (!found) {
      throw new KafkaError(`partition ${topic}/${partition} has no leader available`, {
        type: 'LEADER_NOT_AVAILABLE',
        retriable: true,
      });
    }
    return found.nodeId;
  }

  return {
    leader,
    fetch: (nodeId, req) => getCluster().fetch(nodeId, req, { checkCrcs: opts.checkCrcs }),
    async logOffsets(topic, partition) {
      const nodeId = await leader(topic, partition, true);
      const c = getCluster();
      const [earliest, latest] = await Promise.all(
        [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP].map(async (timestamp) => {
          const responses = await c.listOffsets(nodeId, ISOLATION_LEVEL.read_uncommitted, [
            { topic, partitions: [{ partition, timestamp }] },
          ]);
          const offset = responses.find((r) => r.topic === topic)?.partitions.find((x) => x.partition === partition)?.offset;
          if (offset === undefined) throw new KafkaError(`ListOffsets response lacks ${topic}/${partition}`);
          return toSafeOffset(offset, `offset of ${topic}/${partition}`);
        }),
      );
      return { earliest: earliest!, latest: latest! };
    },
    async topicId(topic) {
      const metadata = await getCluster().metadata([topic]);
      return metadata.topicMetadata.find((x) => x.topic === topic && x.topicErrorCode === NO_ERROR)?.topicId;
    },
    async close() {
      const c = cluster;
      cluster = undefined;
      leaders.clear();
      if (c) await c.disconnect();
    },
  };
}

/**
 * A `RangeReader` reading with kafkajs (group-less Fetch v11 from the leader); registers the
 * snappy/lz4/zstd codecs on first use.
 */
export function createKafkajsRangeReader(kafka: Kafka, opts: KafkajsRangeReaderOptions = {}): RangeReader {
  registerCodecs();
  return createRangeReader(
    createKafkajsTransport(kafka, { metadataMaxAgeMs: opts.metadataMaxAgeMs, checkCrcs: opts.checkCrcs, clock: opts.clock }),
    opts,
  );
}
