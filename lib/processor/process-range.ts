/**
 * One processor invocation (docs/architecture.md, "One micro-batch"): take the range's lease, read exactly
 * `[progress, until)`, hand records to the handler in chunks, commit each chunk conditionally, and
 * complete the range. Duplicate or stale invocations lose a condition and stop without effects.
 */
import { randomUUID } from 'node:crypto';
import type { DeadLettersConfig, StreamConfig } from '../config/schema';
import { AppError, ValidationError } from '../errors';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../kafka/errors';
import { SinkConditionError } from '../ledger/ledger.dynamodb';
import { updateObservedRate } from '../offsets';
import type { DeadLetter, DeadLetterHeader, LeasedRange, Ledger, SinkWrite, StoreClock } from '../ports/ledger';
import type { KafkaRecord, RangeReader } from '../ports/range-reader';
import type { RangePayload } from '../ranges';
import { idempotencyKeyOf, type HandlerContext, type HandlerRecord, type RecordsHandler } from './handler-api';

/** Crash-injection points, in order, for tests. */
export const PROCESSOR_STEPS = ['leased', 'handled', 'committed', 'completed'] as const;
export type ProcessorStep = (typeof PROCESSOR_STEPS)[number];

export type ProcessorDeps = {
  ledger: Ledger;
  readerFor: (stream: StreamConfig) => Promise<RangeReader>;
  handlerFor: (stream: StreamConfig) => RecordsHandler;
  /** Optional: also commit the finished offset to the stream's Kafka consumer group. */
  commitGroupOffset?: (group: string, topic: string, partition: number, offset: number) => Promise<void>;
  /** The local clock: durations and the deadline. */
  clock?: () => number;
  /** The store's clock: the range lease is taken and renewed on it (defaults to `clock`). */
  storeClock?: StoreClock;
  sleep?: (ms: number) => Promise<void>;
  leaseToken?: string;
  /** Records per handler call (default 500). */
  maxChunkRecords?: number;
  /** Backoff before the first handler retry (doubles each time). */
  retryBaseMs?: number;
  afterStep?: (step: ProcessorStep, detail: { from: number; to: number }) => void | Promise<void>;
};

export type ProcessResult = {
  status: 'done' | 'already-done' | 'held-elsewhere' | 'parked' | 'exhausted' | 'unknown-range' | 'lease-lost' | 'partial';
  range: RangePayload;
  /** Records delivered to the handler in this invocation. */
  records: number;
  chunks: number;
  deadLetters: number;
  /** Where the range stands now (`until` when done). */
  progress: number;
  /** Offsets left for a later invocation (deadline). */
  remaining: number;
  dataLoss?: { from: number; until: number };
  reason?: string;
  durationMs: number;
};

/** Largest transaction: 100 actions (one is the progress update) and 4 MB; keep a margin. */
const MAX_SINK_ACTIONS = 98;
const MAX_TX_BYTES = 3_500_000;
/**
 * Dead-letter items must stay under DynamoDB's 400 KB item limit, after base64 (x4/3): value 200 KB
 * (267 KB encoded) + key 16 KB (22 KB) + headers 64 KB encoded + error 4 KB + fields < 400 KB.
 */
const MAX_DEAD_LETTER_VALUE_BYTES = 200 * 1024;
const MAX_DEAD_LETTER_KEY_BYTES = 16 * 1024;
const MAX_DEAD_LETTER_HEADER_BYTES = 64 * 1024;

const DAY_MS = 24 * 3600 * 1000;

class LeaseLost extends Error {}

/** Processes one range payload; the invocation's outcome is the returned status. */
export async function processRange(
  deps: ProcessorDeps,
  input: { stream: StreamConfig; range: RangePayload; deadlineAtMs: number; signal?: AbortSignal },
): Promise<ProcessResult> {
  const clock = deps.clock ?? Date.now;
  // Never the local clock when a store clock is given: a clock running ahead would see a held lease as expired.
  const storeClock = deps.storeClock ?? (async () => clock());
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const t0 = clock();
  const { stream, range } = input;
  const leaseToken = deps.leaseToken ?? randomUUID();
  const leaseMs = stream.processor.leaseMs;
  const result: ProcessResult = { status: 'done', range, records: 0, chunks: 0, deadLetters: 0, progress: range.from, remaining: 0, durationMs: 0 };
  const finish = (status: ProcessResult['status'], extra: Partial<ProcessResult> = {}): ProcessResult =>
    Object.assign(result, { status, durationMs: clock() - t0 }, extra);

  const lease = await deps.ledger.takeRangeLease({ ...range, leaseToken, nowMs: await storeClock(), leaseMs, maxAttempts: stream.maxAttempts });
  switch (lease.kind) {
    case 'mismatch':
      // Checked by the lease-taking write itself: nothing was counted or held.
      throw new ValidationError(
        `invalid processor payload: until=${range.until} does not match the ledger's range ${range.topic}/${range.partition} [${range.from}, ${lease.range.until}); nothing was changed`,
      );
    case 'missing':
      return finish('unknown-range', { reason: 'the ledger has no such range: only ranges the planner planned are processed' });
    case 'done':
      return finish('already-done', { progress: lease.range.until, records: lease.range.records ?? 0, reason: 'finished earlier' });
    case 'held':
      return finish('held-elsewhere', { progress: lease.range.progress, reason: `leased until ${lease.range.leaseExpiresAtMs}` });
    case 'parked':
      return finish('parked', { progress: lease.range.progress, reason: lease.range.lastError });
    case 'exhausted':
      return finish('exhausted', { progress: lease.range.progress, reason: `attempt limit ${stream.maxAttempts} reached` });
    case 'taken':
      break;
  }
  const held: LeasedRange = { ...range, leaseToken };
  let progress = lease.range.progress;
  result.progress = progress;
  await deps.afterStep?.('leased', { from: progress, to: progress });

  const handler = deps.handlerFor(stream);
  const abort = new AbortController();
  input.signal?.addEventListener('abort', () => abort.abort(), { once: true });
  const ctx: HandlerContext = { stream: stream.id, sinkTable: stream.handler?.sinkTable, signal: abort.signal };
  const started = clock();
  let slowestChunkMs = 0;

  /** Commits `[progress, to)` with its writes; throws LeaseLost when a condition shows we lost it. */
  const commit = async (to: number, sinkWrites: SinkWrite[], deadLetters: DeadLetter[], dataLoss?: { from: number; until: number }) => {
    const outcome = await deps.ledger.commitChunk({
      range: held,
      expectProgress: progress,
      to,
      nowMs: await storeClock(),
      leaseMs,
      sinkWrites: sinkWrites.map((w) => withTable(w, stream.handler?.sinkTable)),
      deadLetters: range.incarnation ? deadLetters.map((d) => ({ ...d, incarnation: range.incarnation })) : deadLetters,
      dataLoss: dataLoss && {
        stream: stream.id,
        topic: range.topic,
        partition: range.partition,
        ...dataLoss,
        detectedAtMs: clock(),
        reason: 'retention deleted offsets before they were processed',
        ...(range.incarnation ? { incarnation: range.incarnation } : {}),
      },
    });
    if (outcome === 'lease-lost') throw new LeaseLost();
    await deps.afterStep?.('committed', { from: progress, to });
    progress = to;
    result.progress = to;
  };

  try {
    const reader = await deps.readerFor(stream);
    const recreated = await topicRecreatedSince(reader, range.topic, lease.range.topicId);
    if (recreated) {
      await deps.ledger.failRange({ range: held, status: 'parked', error: recreated, nowMs: clock() });
      return finish('parked', { reason: recreated });
    }
    reading: while (progress < range.until) {
      try {
        for await (const chunk of reader.read({
          topic: range.topic,
          partition: range.partition,
          from: progress,
          until: range.until,
          isolationLevel: stream.isolationLevel,
          maxChunkRecords: deps.maxChunkRecords ?? 500,
          signal: abort.signal,
        })) {
          // Stop before a chunk that might not commit in time; the planner dispatches the rest.
          if (clock() + Math.max(slowestChunkMs * 2, 1000) > input.deadlineAtMs || abort.signal.aborted) break reading;
          const tChunk = clock();
          await handleChunk(chunk.records, chunk.nextOffset);
          slowestChunkMs = Math.max(slowestChunkMs, clock() - tChunk);
        }
        break;
      } catch (err) {
        if (!(err instanceof OffsetOutOfRangeError) || err.logStartOffset === undefined || err.logStartOffset <= progress) throw err;
        const lostUntil = Math.min(err.logStartOffset, range.until);
        if (stream.failOnDataLoss) {
          const reason = `DATA_LOSS: offsets [${progress}, ${lostUntil}) of ${range.topic}/${range.partition} were deleted by retention before they were processed (failOnDataLoss=true)`;
          await deps.ledger.failRange({ range: held, status: 'parked', error: reason, nowMs: clock() });
          return finish('parked', { reason, dataLoss: { from: progress, until: lostUntil } });
        }
        result.dataLoss = { from: progress, until: lostUntil };
        await commit(lostUntil, [], [], { from: progress, until: lostUntil });
      }
    }

    if (progress < range.until) {
      const progressed = progress > lease.range.progress;
      if ((await deps.ledger.releaseRange({ range: held, nowMs: clock(), progressed })) === 'lease-lost') throw new LeaseLost();
      return finish('partial', { remaining: range.until - progress, reason: 'stopped before the deadline; the planner dispatches the remainder' });
    }

    const processingMs = Math.max(1, clock() - started);
    const partition = await deps.ledger.readPartition(stream.id, range.topic, range.partition);
    const stats = {
      records: result.records,
      processingMs,
      schedulingDelayMs: Math.max(0, (lease.range.firstLeasedAtMs ?? started) - lease.range.plannedAtMs),
      finishedAtMs: clock(),
    };
    const outcome = await deps.ledger.completeRange({
      range: held,
      expectProgress: progress,
      nowMs: clock(),
      stats,
      observedRecordsPerSec: updateObservedRate(partition?.observedRecordsPerSec, result.records, processingMs),
      advancePartition: true,
    });
    if (outcome === 'lease-lost') throw new LeaseLost();
    await deps.afterStep?.('completed', { from: range.from, to: range.until });
    if (stream.consumerGroup && deps.commitGroupOffset) {
      // Best effort: the ledger is the source of truth; the group only feeds standard lag tools.
      await deps.commitGroupOffset(stream.consumerGroup, range.topic, range.partition, range.until).catch(() => undefined);
    }
    return finish('done');
  } catch (err) {
    if (err instanceof LeaseLost) return finish('lease-lost', { reason: 'another processor took the lease; stopped without further writes' });
    if (err instanceof PoisonStop) {
      await deps.ledger.failRange({ range: held, status: 'parked', error: err.message, nowMs: clock() });
      return finish('parked', { reason: err.message });
    }
    if (err instanceof PartitionNotFoundError) {
      const reason = `PARTITION_DELETED: ${err.message}`;
      await deps.ledger.failRange({ range: held, status: 'parked', error: reason, nowMs: clock() });
      return finish('parked', { reason });
    }
    // Anything else (broker down, throttling): record it for the planner, then fail the invocation.
    const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    await deps.ledger.failRange({ range: held, status: 'failed', error: message, nowMs: clock() }).catch(() => undefined);
    throw err;
  }

  /** Hands one fetched chunk to the handler and commits it, isolating poison records if needed. */
  async function handleChunk(records: KafkaRecord[], nextOffset: number): Promise<void> {
    const batch = records.map((r) => toHandlerRecord(r, range.incarnation));
    if (batch.length === 0) {
      await commit(Math.min(nextOffset, range.until), [], []);
      return;
    }
    await deps.afterStep?.('handled', { from: progress, to: nextOffset });
    await deliver(batch, Math.min(nextOffset, range.until));
    result.chunks += 1;
  }

  /** Delivers `batch` and commits up to `to`, splitting when the writes do not fit one transaction. */
  async function deliver(batch: HandlerRecord[], to: number): Promise<void> {
    let writes: SinkWrite[];
    try {
      writes = await callHandler(batch);
    } catch (err) {
      return isolate(batch, to, err);
    }
    if (!fitsOneTransaction(writes) && batch.length > 1) {
      const half = Math.ceil(batch.length / 2);
      await deliver(batch.slice(0, half), (batch[half] as HandlerRecord).offset);
      await deliver(batch.slice(half), to);
      return;
    }
    if (!fitsOneTransaction(writes)) {
      return isolate(batch, to, new Error(`the writes for one record do not fit a DynamoDB transaction (${writes.length} writes; at most ${MAX_SINK_ACTIONS}, 3.5 MB, one write per item)`));
    }
    try {
      await commit(to, writes, []);
    } catch (err) {
      // One of the records asked for a write the sink refuses: find it record by record.
      if (err instanceof SinkConditionError) return isolate(batch, to, err);
      throw err;
    }
    result.records += batch.length;
  }

  async function callHandler(batch: HandlerRecord[]): Promise<SinkWrite[]> {
    const out = await handler.handle(batch, ctx);
    if (handler.mode === 'at-least-once') return [];
    if (!Array.isArray(out)) throw new Error('an exactly-once handler must return an array of sink writes');
    return out;
  }

  /**
   * A chunk failed: retry record by record with backoff; a record that still fails after the
   * stream's attempt limit is dead-lettered (the range continues) or stops the partition.
   */
  async function isolate(batch: HandlerRecord[], to: number, firstError: unknown): Promise<void> {
    for (let i = 0; i < batch.length; i++) {
      const rec = batch[i] as HandlerRecord;
      const recTo = i + 1 < batch.length ? (batch[i + 1] as HandlerRecord).offset : to;
      let lastError: unknown = batch.length === 1 ? firstError : undefined;
      let attempts = batch.length === 1 ? 1 : 0;
      let done = false;
      while (!done && attempts < stream.maxAttempts) {
        if (attempts > 0) await sleep((deps.retryBaseMs ?? 100) * 2 ** (attempts - 1));
        attempts++;
        try {
          const writes = await callHandler([rec]);
          if (!fitsOneTransaction(writes)) throw new Error(`the writes for record ${rec.idempotencyKey} do not fit a DynamoDB transaction`);
          await commit(recTo, writes, []);
          result.records += 1;
          done = true;
        } catch (err) {
          // Our own infrastructure errors (store, Kafka, config) are not the record's fault.
          if (err instanceof LeaseLost) throw err;
          if (err instanceof AppError && !(err instanceof SinkConditionError)) throw err;
          lastError = err;
        }
      }
      if (done) continue;
      const message = `handler rejected ${rec.idempotencyKey} ${attempts} times: ${errorText(lastError)}`;
      if (stream.poisonPolicy === 'stop-partition') throw new PoisonStop(`POISON_RECORD: ${message} (poisonPolicy=stop-partition)`);
      await commit(recTo, [], [retained(deadLetterOf(stream.id, range.from, rec, message, attempts, clock()), stream.deadLetters)]);
      result.deadLetters += 1;
    }
  }
}

class PoisonStop extends Error {}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function toHandlerRecord(r: KafkaRecord, incarnation: number | undefined): HandlerRecord {
  return { ...r, idempotencyKey: idempotencyKeyOf(r.topic, r.partition, r.offset, incarnation) };
}

function withTable(w: SinkWrite, table: string | undefined): SinkWrite {
  if ('put' in w) return { put: { ...w.put, table: w.put.table ?? table } };
  if ('delete' in w) return { delete: { ...w.delete, table: w.delete.table ?? table } };
  return { update: { ...w.update, table: w.update.table ?? table } };
}

/** At most 98 writes, 3.5 MB, and one write per item (DynamoDB refuses two actions on one item). */
function fitsOneTransaction(writes: SinkWrite[]): boolean {
  if (writes.length > MAX_SINK_ACTIONS) return false;
  const items = new Set<string>();
  let bytes = 0;
  for (const w of writes) {
    const spec = 'put' in w ? w.put : 'delete' in w ? w.delete : w.update;
    const key = 'put' in w ? w.put.item : 'key' in spec ? spec.key : {};
    const id = `${spec.table ?? ''}|${JSON.stringify(key)}`;
    if (items.has(id) && !('put' in w)) return false;
    items.add(id);
    bytes += JSON.stringify(w).length;
  }
  return bytes <= MAX_TX_BYTES;
}

/**
 * Applies the stream's dead-letter retention: an expiry, and with `keep: "coordinates"` no copy of
 * key, value or headers (streams carrying personal data; Kafka keeps the record while it retains it).
 */
function retained(d: DeadLetter, policy: DeadLettersConfig): DeadLetter {
  const expiresAtMs = d.createdAtMs + policy.retentionDays * DAY_MS;
  if (policy.keep === 'record') return { ...d, expiresAtMs };
  return { ...d, keyBase64: null, valueBase64: null, headers: [], headersDropped: undefined, truncated: false, kept: 'coordinates', expiresAtMs };
}

/**
 * Why the range must not be read, when the topic now has another id than the one the range was
 * planned against (deleted and re-created under its name): its offsets name other records. The
 * planner closes the old incarnation and removes the range; parking it stops it until then.
 */
async function topicRecreatedSince(reader: RangeReader, topic: string, plannedTopicId: string | undefined): Promise<string | undefined> {
  if (plannedTopicId === undefined || !reader.topicId) return undefined;
  const now = await reader.topicId(topic);
  if (now === undefined || now === plannedTopicId) return undefined; // gone: the read reports it
  return `TOPIC_RECREATED: topic ${topic} now has id ${now}, the range was planned against ${plannedTopicId}; its records were not read`;
}

/**
 * The dead-letter item for a rejected record, kept under DynamoDB's 400 KB item limit: the value,
 * key and headers are cut (in that order of priority) to fit, and `truncated` says so; headers are
 * kept whole and in order up to the first that no longer fits (`headersDropped` counts the rest).
 * The full record stays readable in Kafka at its offset while retention keeps it.
 */
function deadLetterOf(stream: string, rangeFrom: number, r: HandlerRecord, error: string, attempts: number, nowMs: number): DeadLetter {
  const keyBase64 = r.key ? r.key.subarray(0, MAX_DEAD_LETTER_KEY_BYTES).toString('base64') : null;
  const headers: DeadLetterHeader[] = [];
  let headerBudget = MAX_DEAD_LETTER_HEADER_BYTES;
  for (const h of r.headers) {
    const valueBase64 = h.value === null ? null : h.value.toString('base64');
    const bytes = Buffer.byteLength(h.key) + (valueBase64?.length ?? 0);
    if (bytes > headerBudget) break;
    headers.push({ key: h.key, valueBase64 });
    headerBudget -= bytes;
  }
  const headersDropped = r.headers.length - headers.length;
  const value = r.value;
  return {
    stream,
    topic: r.topic,
    partition: r.partition,
    offset: r.offset,
    timestampMs: r.timestampMs,
    timestampType: r.timestampType,
    keyBase64,
    valueBase64: value ? value.subarray(0, MAX_DEAD_LETTER_VALUE_BYTES).toString('base64') : null,
    valueBytes: value?.length ?? 0,
    truncated: headersDropped > 0 || (value !== null && value.length > MAX_DEAD_LETTER_VALUE_BYTES) || (r.key !== null && r.key.length > MAX_DEAD_LETTER_KEY_BYTES),
    headers,
    headersDropped: headersDropped > 0 ? headersDropped : undefined,
    error: error.slice(0, 4000),
    attempts,
    rangeFrom,
    createdAtMs: nowMs,
    kept: 'record',
  };
}
