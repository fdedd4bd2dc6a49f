/**
 * The range reading algorithm behind the kafkajs `RangeReader` (range-reader.kafkajs.ts), over a
 * `FetchTransport`: leaders, Fetch and ListOffsets from Kafka (fetch-transport.kafkajs.ts), or a fake
 * in unit tests. A read goes in phases: position (a cursor over [from, until)) -> Fetch at the
 * position (`fetchAt`, retried) -> decode and filter the batches (`consumeBatches`, aborted
 * transactions out) -> yield chunks as they fill (`appendRecords`) -> wait while stalled
 * (`awaitReadable`).
 *
 * How a range is read:
 * - Offsets advance by record batch ends (`baseOffset + lastOffsetDelta + 1`), never by
 *   `offset + 1`: compaction leaves gaps and empty batches, transactions leave control batches,
 *   aborted data is skipped. The Fetch response is decoded batch by batch (protocol/fetch-response.ts)
 *   because kafkajs's decoder drops empty batches and would leave a compacted range stuck.
 * - Only `from <= offset < until` is delivered, in order, each offset once. The first batch of a
 *   response may start before the fetch offset (its earlier records are skipped) and the last may
 *   run past `until` (the rest is left).
 * - Every batch the read goes through has its CRC-32C checked (`verify`, unless checks are off)
 *   before its records or control type are used; the check comes after the prefetch is sent.
 * - read_committed: the broker stops at the last stable offset (LSO); aborted transactions are
 *   dropped the way Java's consumer does it (protocol/aborted.ts); control records are never delivered.
 * - Lazy and bounded: reading runs at most one Fetch ahead of what the consumer asked for, at most
 *   `maxFetchBytes` each (partition and response limit; kafkajs would send a partition limit of 0;
 *   the broker still returns one whole batch if that batch alone is larger). Records are decoded
 *   (decompressed) one batch at a time as the chunk fills. A chunk may span fetches and closes at
 *   `maxChunkRecords` records or once the batches it consumed reach `maxFetchBytes`, so memory holds
 *   two responses (the one being decoded and the prefetched next one), one decoded batch and one
 *   chunk, whatever the range size.
 * - Prefetch: as soon as a response arrives, the Fetch for where it ends (its last batch end, if
 *   that is progress below `until`) is sent, so the broker serves it while this one is decoded and
 *   its chunks are handled. Fetches stay one at a time per read, in offset order; the prefetch is
 *   used only if reading does continue at its offset, and its retries stop when the read ends.
 * - Records: offsets and timestamps as numbers (an offset beyond Number.MAX_SAFE_INTEGER is an
 *   error, never rounded), the timestamp type, key/value Buffers or null, headers as an ordered
 *   list exactly as written (protocol/record-batch.ts).
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
 * - Open reads (`open`, continuous mode): records arrive while the read runs, so waiting is normal
 *   (no stall timeout; the broker's long poll still does the waiting, an early answer still backs
 *   off) and the pending chunk is handed over as soon as a response that made progress brings the
 *   position to the readable end that response reports, instead of filling up to `maxChunkRecords`.
 * - `signal`: once aborted, the iteration ends at once, without an error, even mid-request or
 *   mid-wait (a request in flight is abandoned); records read but not yet yielded are dropped (they
 *   are read again next time). The last chunk's `nextOffset < until` tells the caller the range is
 *   unfinished, as when it stops iterating on its own.
 * - A failure after some records were read first yields them as a chunk, then throws.
 */
import { KafkaError, TimeoutError, ValidationError } from '../errors';
import type { KafkaRecord, RangeReader, ReadRequest, RecordChunk } from '../ports/range-reader';
import { controlRecordType, createAbortedBatchFilter } from './protocol/aborted';
import { ISOLATION_LEVEL, protocolError, type FetchPartitionRequest } from './cluster.kafkajs';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../ports/range-reader';
import { checkIsolationLevel } from '../ports/kafka-metadata';
import type { FetchedPartition, FetchResponse } from './protocol/fetch-response';
import { backoffMs, systemClock, type Clock, type RetryPolicy } from '../retry';
import { KAFKA_CALL_RETRIES, withRetries } from './retry';
import { isRetriableKafkaError } from './errors';
import { isMissingTopicCode, NO_ERROR, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION } from './protocol/error-codes';

export type RangeReaderOptions = {
  /** Default of `ReadRequest.maxChunkRecords`. Default 500. */
  maxChunkRecords?: number;
  /** Default of `ReadRequest.maxFetchBytes`. Default 4 MiB. */
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
  /**
   * Send the Fetch for where a response ends as soon as it arrives, so that the broker reads and
   * sends the next response while this one is decoded and its chunks are handled (what Java's
   * consumer and librdkafka do). Memory then holds up to two responses. Default true.
   */
  prefetch?: boolean;
  clock?: Clock;
  random?: () => number;
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

const DEFAULT_MAX_CHUNK_RECORDS = 500;
/**
 * 4 MiB: against 1 MiB (Java's max.partition.fetch.bytes) a quarter of the Fetch round trips, each
 * one a request the broker must serve and a socket write here; measured ~1.5x the read rate of one
 * partition (bench/processor.ts), while 8 and 16 MiB gained nothing more and raised peak RSS.
 */
const DEFAULT_MAX_FETCH_BYTES = 4 * 1024 * 1024;
const MAX_INT32 = 2 ** 31 - 1;

type ChunkLimits = { maxChunkRecords: number; maxFetchBytes: number };

function checkRequest(req: ReadRequest, defaults: ChunkLimits): ChunkLimits {
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
  checkIsolationLevel(req.isolationLevel, 'read');
  const maxChunkRecords = req.maxChunkRecords ?? defaults.maxChunkRecords;
  const maxFetchBytes = req.maxFetchBytes ?? defaults.maxFetchBytes;
  if (!Number.isInteger(maxChunkRecords) || maxChunkRecords < 1) {
    throw new ValidationError(`read: maxChunkRecords must be a positive integer, not ${maxChunkRecords}`);
  }
  if (!Number.isInteger(maxFetchBytes) || maxFetchBytes < 1 || maxFetchBytes > MAX_INT32) {
    throw new ValidationError(`read: maxFetchBytes must be an integer in [1, 2^31 - 1], not ${maxFetchBytes}`);
  }
  if (req.maxWaitMs !== undefined && (!Number.isInteger(req.maxWaitMs) || req.maxWaitMs < 0 || req.maxWaitMs > MAX_INT32)) {
    throw new ValidationError(`read: maxWaitMs must be an integer in [0, 2^31 - 1], not ${req.maxWaitMs}`);
  }
  return { maxChunkRecords, maxFetchBytes };
}

/** A Kafka protocol error code as a `KafkaError` of the fetch of `where` (type and retriability from the code). */
export function protocolFailure(where: string, code: number): KafkaError {
  const cause = protocolError(code);
  return new KafkaError(`fetch ${where}: ${cause.message}`, { cause, type: cause.type, retriable: cause.retriable });
}

/** Where the broker stops serving: the last stable offset under read_committed, else the high watermark. */
function readableEndOf(req: ReadRequest, data: FetchedPartition): number {
  return req.isolationLevel === 'read_committed' ? data.lastStableOffset : data.highWatermark;
}

/** A read that gets nothing at its position: since when (reset by progress), and how many waits so far. */
type Stall = { since: number | undefined; waits: number };

/**
 * Where the read of [from, until) stands: every offset below `position` is consumed (delivered, in
 * `chunk`, or legitimately skipped); `take` hands the pending chunk over.
 */
class RangeCursor {
  position: number;
  chunk: KafkaRecord[] = [];
  chunkBytes = 0;
  private yieldedUpTo: number;

  constructor(
    from: number,
    readonly until: number,
  ) {
    this.position = from;
    this.yieldedUpTo = from;
  }

  /** The pending records as a chunk that resumes at `nextOffset` (at most `until`); starts the next chunk. */
  take(nextOffset: number): RecordChunk {
    const out: RecordChunk = { records: this.chunk, nextOffset: Math.min(nextOffset, this.until), bytes: this.chunkBytes };
    this.chunk = [];
    this.chunkBytes = 0;
    this.yieldedUpTo = out.nextOffset;
    return out;
  }

  /** Whether records, or offsets consumed without a record, are not handed over yet. */
  hasUnyielded(): boolean {
    return this.chunk.length > 0 || Math.min(this.position, this.until) > this.yieldedUpTo;
  }
}

/**
 * One Fetch response into the cursor: batches in order through the aborted-transaction filter,
 * control and aborted batches skipped, the position moved past each batch end; yields every chunk
 * that fills up (records or bytes) on the way.
 */
async function* consumeBatches(
  data: FetchedPartition,
  cursor: RangeCursor,
  committed: boolean,
  limits: ChunkLimits,
): AsyncGenerator<RecordChunk, void, undefined> {
  const { until } = cursor;
  const isAborted = committed ? createAbortedBatchFilter(data.abortedTransactions) : () => false;
  for (const batch of data.batches) {
    if (batch.baseOffset >= until) {
      cursor.position = until;
      break;
    }
    // Every batch read is checked, even one skipped below, before anything in it is used.
    batch.verify();
    // Every batch goes through the filter, in order: it tracks which producers are aborted.
    const controlType = committed && batch.isControl ? controlRecordType((await batch.records())[0]?.key) : undefined;
    const aborted = isAborted({ ...batch, controlType });
    if (batch.lastOffset < cursor.position) continue; // before the fetch offset (already consumed)
    let unaccountedBytes = batch.sizeBytes;
    if (!batch.isControl && !aborted && batch.recordCount > 0) {
      unaccountedBytes = yield* appendRecords(await batch.records(), batch.sizeBytes, cursor, limits.maxChunkRecords);
    }
    cursor.chunkBytes += unaccountedBytes;
    cursor.position = Math.max(cursor.position, batch.lastOffset + 1);
    if (cursor.chunkBytes >= limits.maxFetchBytes && cursor.position < until) yield cursor.take(cursor.position);
  }
  if (cursor.position > until) cursor.position = until;
}

/**
 * A batch's records in [position, until) into the chunk, yielding each full chunk. The batch's bytes
 * count towards the chunk that takes its first record; returns those not counted yet (all of them
 * if no record was taken: they go to the chunk pending at the batch's end).
 */
async function* appendRecords(
  records: readonly KafkaRecord[],
  batchBytes: number,
  cursor: RangeCursor,
  maxChunkRecords: number,
): AsyncGenerator<RecordChunk, number, undefined> {
  let unaccountedBytes = batchBytes;
  for (const record of records) {
    const offset = record.offset;
    if (offset < cursor.position) continue;
    if (offset >= cursor.until) break;
    // A full chunk ends right before the next deliverable record: that record's offset is where
    // reading resumes.
    if (cursor.chunk.length >= maxChunkRecords) yield cursor.take(offset);
    cursor.chunk.push(record);
    cursor.chunkBytes += unaccountedBytes;
    unaccountedBytes = 0;
  }
  return unaccountedBytes;
}

/** A Fetch in flight: where, since when, its outcome, and how to stop its retries. */
type PendingFetch = { offset: number; startedAt: number; response: Promise<FetchOutcome>; stop: () => void };
type FetchOutcome = { data: FetchedPartition; receivedAt: number } | { error: unknown };

/**
 * How recent a response must be for an open read to take its readable end as the partition's end
 * now (and yield): older, it was a prefetch waiting while the consumer handled the chunk before.
 */
const OPEN_FRESH_MS = 5;

/**
 * Where reading continues once `data` is consumed from `position` (batch ends, as consumeBatches
 * moves the cursor), if that is progress still below `until`: the offset worth prefetching.
 */
function prefetchOffset(data: FetchedPartition, position: number, until: number): number | undefined {
  let next = position;
  for (const batch of data.batches) {
    if (batch.baseOffset >= until) return undefined;
    if (batch.lastOffset + 1 > next) next = batch.lastOffset + 1;
  }
  return next > position && next < until ? next : undefined;
}

/** Why a read made no progress for `stalledMs`, as a TimeoutError naming the offsets involved. */
function stallTimeout(req: ReadRequest, position: number, stalledMs: number, readableEnd: number): TimeoutError {
  const committed = req.isolationLevel === 'read_committed';
  const why =
    position < readableEnd
      ? `the broker returned no record batch at offset ${position} although its ` +
        `${committed ? 'last stable offset' : 'high watermark'} is ${readableEnd}`
      : committed
        ? `the last stable offset stayed at ${readableEnd} (a transaction is still open)`
        : `the high watermark stayed at ${readableEnd}`;
  return new TimeoutError(
    `read ${req.topic}/${req.partition} [${req.from}, ${req.until}): no progress at offset ${position} for ${stalledMs} ms: ${why}`,
  );
}

/** A `RangeReader` over any `FetchTransport` (the kafkajs one, or a fake). */
export function createRangeReader(transport: FetchTransport, opts: RangeReaderOptions = {}): RangeReader {
  const defaults = {
    maxChunkRecords: opts.maxChunkRecords ?? DEFAULT_MAX_CHUNK_RECORDS,
    maxFetchBytes: opts.maxFetchBytes ?? DEFAULT_MAX_FETCH_BYTES,
  };
  const maxWaitMs = opts.maxWaitMs ?? 500;
  const stallTimeoutMs = opts.stallTimeoutMs ?? 30_000;
  const policy: RetryPolicy = { ...KAFKA_CALL_RETRIES, ...opts.retry };
  const clock = opts.clock ?? systemClock;
  const missingGraceMs = opts.missingGraceMs ?? 5_000;
  const prefetch = opts.prefetch ?? true;
  let fetches = 0;

  /** One Fetch at `offset`, retried on retriable errors; returns the partition's data without errors. */
  async function fetchAt(req: ReadRequest, offset: number, level: number, maxBytes: number): Promise<FetchedPartition> {
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
          maxWaitTimeMs: req.maxWaitMs ?? maxWaitMs,
          minBytes: 1,
          maxBytes,
        });
        if (response.errorCode !== NO_ERROR) throw protocolFailure(where, response.errorCode);
        const data = response.partitions.find((p) => p.topic === topic && p.partition === partition);
        if (!data) throw new KafkaError(`fetch ${where}: the response lacks the partition`, { retriable: true });
        if (data.errorCode === OFFSET_OUT_OF_RANGE) throw await offsetOutOfRange(topic, partition, offset);
        if (isMissingTopicCode(data.errorCode)) {
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
            : isRetriableKafkaError(error),
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
      return new OffsetOutOfRangeError(`${where}: offset ${offset} is out of range (the log start offset could not be looked up)`, {
        topic,
        partition,
        fetchOffset: offset,
        cause,
      });
    }
    const message =
      offset < log.earliest
        ? `${where}: offset ${offset} is no longer in the log; retention or deleteRecords moved the log start offset to ${log.earliest}`
        : `${where}: offset ${offset} is beyond the end of the log (high watermark ${log.latest})`;
    return new OffsetOutOfRangeError(message, { topic, partition, fetchOffset: offset, logStartOffset: log.earliest });
  }

  /**
   * A Fetch made no progress (nothing readable at `position` yet): fails with `TimeoutError` once
   * stalled for `stallTimeoutMs` (never for an open read), else waits before the next Fetch unless
   * the broker's long poll already did. False when the signal ended the wait.
   */
  async function awaitReadable(
    req: ReadRequest,
    data: FetchedPartition,
    position: number,
    startedAt: number,
    stall: Stall,
  ): Promise<boolean> {
    stall.since ??= startedAt;
    const stalledMs = clock.now() - stall.since;
    // An open read waits for records nobody has produced yet: that is no stall, however long.
    const remainingMs = req.open ? Infinity : stallTimeoutMs - stalledMs;
    if (remainingMs <= 0) throw stallTimeout(req, position, stalledMs, readableEndOf(req, data));
    // The broker already held the Fetch for up to maxWaitMs waiting for readable data; only if it
    // answered early (or the end offset was below `position` anyway) wait here, so as not to spin.
    const elapsedMs = clock.now() - startedAt;
    if (elapsedMs >= (req.maxWaitMs ?? maxWaitMs) / 2) return true;
    const delayMs = Math.min(backoffMs(stall.waits, policy, opts.random), remainingMs);
    stall.waits += 1;
    try {
      await clock.sleep(Math.max(delayMs, 0), req.signal);
    } catch (error) {
      if (req.signal?.aborted) return false;
      throw error;
    }
    return true;
  }

  /**
   * Starts the Fetch at `offset`, settled into a value so that a prefetch nobody awaits (the read
   * stopped or failed first) is never an unhandled rejection; `stop()` ends its retries.
   */
  function startFetch(req: ReadRequest, offset: number, level: number, maxBytes: number): PendingFetch {
    const stop = new AbortController();
    const signal = req.signal ? AbortSignal.any([req.signal, stop.signal]) : stop.signal;
    const response = fetchAt({ ...req, signal }, offset, level, maxBytes).then(
      (data): FetchOutcome => ({ data, receivedAt: clock.now() }),
      (error: unknown): FetchOutcome => ({ error }),
    );
    return { offset, startedAt: clock.now(), response, stop: () => stop.abort() };
  }

  /** Reads [from, until) Fetch by Fetch: fetch at the cursor, decode and filter, yield chunks, wait while stalled. */
  async function* readRange(req: ReadRequest, limits: ChunkLimits): AsyncGenerator<RecordChunk, void, undefined> {
    const { until, signal } = req;
    const committed = req.isolationLevel === 'read_committed';
    const level = ISOLATION_LEVEL[req.isolationLevel];
    const cursor = new RangeCursor(req.from, until);
    const stall: Stall = { since: undefined, waits: 0 };
    /** The Fetch already sent for where the current response ends (see `prefetchOffset`). */
    let ahead: PendingFetch | undefined;

    try {
      while (cursor.position < until) {
        if (signal?.aborted) return;
        let current = ahead;
        ahead = undefined;
        if (current?.offset !== cursor.position) {
          current?.stop();
          current = startFetch(req, cursor.position, level, limits.maxFetchBytes);
        }
        const outcome = await current.response;
        if ('error' in outcome) {
          if (signal?.aborted) return;
          // Hand over what was read before the failure, then report it.
          if (cursor.hasUnyielded()) yield cursor.take(cursor.position);
          throw outcome.error;
        }
        const { data } = outcome;
        const next = prefetch ? prefetchOffset(data, cursor.position, until) : undefined;
        if (next !== undefined) ahead = startFetch(req, next, level, limits.maxFetchBytes);

        const before = cursor.position;
        yield* consumeBatches(data, cursor, committed, limits);
        if (cursor.position > before) {
          stall.since = undefined;
          stall.waits = 0;
          // An open read hands over what it has once caught up: the next records may be minutes away. A
          // prefetched response that waited while the consumer was busy is no news of the end: the Fetch
          // sent for where it ends (just now) brings what arrived meanwhile, one round trip to the broker.
          const fresh = clock.now() - outcome.receivedAt <= OPEN_FRESH_MS;
          const caughtUp = req.open === true && fresh && cursor.position >= readableEndOf(req, data);
          if (cursor.chunk.length >= limits.maxChunkRecords || (caughtUp && cursor.hasUnyielded())) yield cursor.take(cursor.position);
          continue;
        }

        // No progress: nothing readable at `position` yet. Deliver what is pending, then wait.
        if (cursor.hasUnyielded()) yield cursor.take(cursor.position);
        if (!(await awaitReadable(req, data, cursor.position, current.startedAt, stall))) return;
      }
      if (cursor.hasUnyielded()) yield cursor.take(until);
    } finally {
      // The read ended (done, failed, aborted, or the consumer stopped): a prefetch is not needed.
      ahead?.stop();
    }
  }

  return {
    read(req) {
      const limits = checkRequest(req, defaults);
      return {
        [Symbol.asyncIterator]: () => readRange(req, limits),
      };
    },
    requestCount: () => fetches,
    ...(transport.topicId ? { topicId: (topic: string) => transport.topicId!(topic) } : {}),
    close: () => transport.close(),
  };
}
