/**
 * One processor invocation (docs/architecture.md, "One micro-batch"): take the range's lease, read exactly
 * `[progress, until)`, hand records to the handler in chunks, commit each chunk conditionally, and
 * complete the range. Duplicate or stale invocations lose a condition and stop without effects.
 */
import { randomUUID } from 'node:crypto';
import type { StreamConfig } from '../config/schema';
import { ValidationError } from '../errors';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../ports/range-reader';
import { resolveSecret } from '../kafka/secrets';
import { updateObservedRate } from '../offsets';
import type { Ledger, StoreClock } from '../ports/ledger';
import type { LeasedRange, RangeState } from '../ports/ledger-state';
import type { RangeReader } from '../ports/range-reader';
import type { RangePayload } from '../ranges';
import { ChunkCommitter, errorText, LeaseLostError, PoisonStopError, type CommitterInput } from './committer';
import { DEFAULT_FOLD_BUDGET, FoldCommitter, type FoldBudget } from './fold-committer';
import type { HandlerContext, RecordsHandler } from './handler-api';
import { resolveHandlerSecrets } from './handler-secrets';
import type { RecordStage } from './record-gate';
import { recordStagesFor, type StageContext } from './record-stages';
import { LEASE_LOST_REASON, rangeDataLossReason, rangeMismatchMessage, topicRecreatedReason } from './messages';

/**
 * Crash-injection points, in order, for tests. `batch-begun` and `sink-written` are reached by folded
 * batches written in several writes: after the batch is recorded, and after each group of writes.
 */
export const PROCESSOR_STEPS = ['leased', 'handled', 'batch-begun', 'sink-written', 'committed', 'completed'] as const;
export type ProcessorStep = (typeof PROCESSOR_STEPS)[number];

export type ProcessorDeps = {
  ledger: Ledger;
  readerFor: (stream: StreamConfig) => Promise<RangeReader>;
  handlerFor: (stream: StreamConfig) => RecordsHandler;
  /** The handler's `ctx.secrets` (default: the stream's `handler.secrets` through the process-wide caching resolver). */
  secretsFor?: (stream: StreamConfig) => Promise<Readonly<Record<string, string>>>;
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
  /** The stages before the handler (default: the stream's record age, decoding and filters, recordStagesFor). */
  stagesFor?: (stream: StreamConfig, at: StageContext) => Promise<readonly RecordStage[]>;
  /** Folded handlers: batch budget and write grouping (defaults: DEFAULT_FOLD_BUDGET and the stream's settings). */
  fold?: Partial<FoldBudget>;
  afterStep?: (step: ProcessorStep, detail: { from: number; to: number }) => void | Promise<void>;
};

export type ProcessResult = {
  status: 'done' | 'already-done' | 'held-elsewhere' | 'parked' | 'exhausted' | 'unknown-range' | 'lease-lost' | 'partial';
  range: RangePayload;
  /** Records delivered to the handler in this invocation. */
  records: number;
  chunks: number;
  deadLetters: number;
  /** Records the filters skipped (their offsets are committed: they count as processed). */
  filtered: number;
  /** Records older than `maxRecordAgeMs` that were skipped (dead-lettered ones count in `deadLetters`). */
  expired: number;
  /** Where the range stands now (`until` when done). */
  progress: number;
  /** Offsets left for a later invocation (deadline). */
  remaining: number;
  dataLoss?: { from: number; until: number };
  reason?: string;
  durationMs: number;
};

/** What every phase of one invocation shares: its inputs, clocks, and the result being built. */
type Run = {
  deps: ProcessorDeps;
  stream: StreamConfig;
  range: RangePayload;
  deadlineAtMs: number;
  clock: () => number;
  storeClock: StoreClock;
  leaseToken: string;
  t0: number;
  result: ProcessResult;
};

/** Processes one range payload: lease -> read loop -> complete, errors mapped to outcomes. */
export async function processRange(
  deps: ProcessorDeps,
  input: { stream: StreamConfig; range: RangePayload; deadlineAtMs: number; signal?: AbortSignal },
): Promise<ProcessResult> {
  const clock = deps.clock ?? Date.now;
  const { stream, range } = input;
  const run: Run = {
    deps,
    stream,
    range,
    deadlineAtMs: input.deadlineAtMs,
    clock,
    // Never the local clock when a store clock is given: a clock running ahead would see a held lease as expired.
    storeClock: deps.storeClock ?? (async () => clock()),
    leaseToken: deps.leaseToken ?? randomUUID(),
    t0: clock(),
    result: {
      status: 'done',
      range,
      records: 0,
      chunks: 0,
      deadLetters: 0,
      filtered: 0,
      expired: 0,
      progress: range.from,
      remaining: 0,
      durationMs: 0,
    },
  };

  const lease = await leaseRange(run);
  if (!('taken' in lease)) return lease.result;
  const leased = lease.taken;
  const held: LeasedRange = { ...range, leaseToken: run.leaseToken };
  run.result.progress = leased.progress;
  await deps.afterStep?.('leased', { from: leased.progress, to: leased.progress });
  const secrets = await handlerSecrets(run, held);
  const stages = await (deps.stagesFor ?? recordStagesFor)(stream, { firstLeasedAtMs: leased.firstLeasedAtMs ?? run.t0 });

  const abort = new AbortController();
  input.signal?.addEventListener('abort', () => abort.abort(), { once: true });
  const committer = createCommitter(run, leased, {
    ledger: deps.ledger,
    stream,
    range,
    held,
    progress: leased.progress,
    handler: deps.handlerFor(stream),
    ctx: { stream: stream.id, sinkTable: stream.handler?.sinkTable, signal: abort.signal, secrets } satisfies HandlerContext,
    clock,
    storeClock: run.storeClock,
    sleep: deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms))),
    retryBaseMs: deps.retryBaseMs ?? 100,
    afterStep: deps.afterStep,
    commitEveryRecords: stream.processor.commitEveryRecords,
    commitEveryMs: stream.processor.commitEveryMs,
    stages,
  });
  const started = clock();
  try {
    const parked = await readLoop(run, committer, held, leased, abort);
    return parked ?? (await complete(run, committer, held, leased, started));
  } catch (err) {
    return mapError(run, committer, held, err);
  }
}

/**
 * The committer for the range: folded batches for a folding handler, chunk commits otherwise. A
 * stream that splits partitions into parallel ranges commits folds chunk by chunk: an item's mark
 * is per partition, and ranges of one partition finishing out of order would skip each other.
 */
function createCommitter(run: Run, leased: RangeState, input: CommitterInput): ChunkCommitter {
  const { stream } = run;
  const fold = input.handler.mode === 'dynamodb-exactly-once' ? input.handler.fold : undefined;
  const splits = stream.split.orderInsensitive && (stream.split.maxRangeSize !== undefined || stream.split.minPartitions !== undefined);
  if (!fold || (splits && leased.pendingUntil === undefined)) return new ChunkCommitter(input);
  const budget: FoldBudget = {
    ...DEFAULT_FOLD_BUDGET,
    maxItems: stream.processor.foldMaxItems,
    maxRecords: stream.processor.foldMaxRecords,
    ...run.deps.fold,
  };
  return new FoldCommitter(input, fold, budget, leased);
}

/** The invocation's result with `status`, the committer's counts and the time spent. */
function finish(run: Run, status: ProcessResult['status'], committer?: ChunkCommitter, extra: Partial<ProcessResult> = {}): ProcessResult {
  const counts = committer && {
    records: committer.records,
    chunks: committer.chunks,
    deadLetters: committer.deadLetters,
    filtered: committer.skipped.filtered,
    expired: committer.skipped.expired,
    progress: committer.progress,
  };
  return Object.assign(run.result, counts, { status, durationMs: run.clock() - run.t0 }, extra);
}

/** Phase 1: takes the range's lease; any other outcome ends the invocation without effects. */
async function leaseRange(run: Run): Promise<{ taken: RangeState } | { result: ProcessResult }> {
  const { deps, stream, range } = run;
  const lease = await deps.ledger.takeRangeLease({
    ...range,
    leaseToken: run.leaseToken,
    nowMs: await run.storeClock(),
    leaseMs: stream.processor.leaseMs,
    maxAttempts: stream.maxAttempts,
  });
  const end = (status: ProcessResult['status'], extra: Partial<ProcessResult>) => ({ result: finish(run, status, undefined, extra) });
  switch (lease.kind) {
    case 'mismatch':
      // Checked by the lease-taking write itself: nothing was counted or held.
      throw new ValidationError(rangeMismatchMessage(range, lease.range.until));
    case 'missing':
      return end('unknown-range', { reason: 'the ledger has no such range: only ranges the planner planned are processed' });
    case 'done':
      return end('already-done', { progress: lease.range.until, records: lease.range.records ?? 0, reason: 'finished earlier' });
    case 'held':
      return end('held-elsewhere', { progress: lease.range.progress, reason: `leased until ${lease.range.leaseExpiresAtMs}` });
    case 'parked':
      return end('parked', { progress: lease.range.progress, reason: lease.range.lastError });
    case 'exhausted':
      return end('exhausted', { progress: lease.range.progress, reason: `attempt limit ${stream.maxAttempts} reached` });
    case 'taken':
      return { taken: lease.range };
  }
}

/**
 * Phase 1b: the handler's secrets, before a record is read. One that cannot be read fails the
 * attempt as any other error does (recorded on the range, counted against maxAttempts), and the
 * handler is never called without it.
 */
async function handlerSecrets(run: Run, held: LeasedRange): Promise<Readonly<Record<string, string>>> {
  const secretsFor = run.deps.secretsFor ?? ((stream: StreamConfig) => resolveHandlerSecrets(stream, resolveSecret));
  try {
    return await secretsFor(run.stream);
  } catch (err) {
    await recordFailedAttempt(run, held, err);
    throw err;
  }
}

/**
 * Phase 2: reads `[progress, until)` chunk by chunk into the committer until the range is read or
 * the deadline nears. Returns a result when the range had to be parked instead.
 */
async function readLoop(
  run: Run,
  committer: ChunkCommitter,
  held: LeasedRange,
  leased: RangeState,
  abort: AbortController,
): Promise<ProcessResult | undefined> {
  const { deps, stream, range, clock } = run;
  const reader = await deps.readerFor(stream);
  const recreated = await topicRecreatedSince(reader, range.topic, leased.topicId);
  if (recreated) {
    await deps.ledger.failRange({ range: held, status: 'parked', error: recreated, nowMs: clock() });
    return finish(run, 'parked', committer, { reason: recreated });
  }
  let slowestChunkMs = 0;
  reading: while (committer.position < range.until) {
    try {
      for await (const chunk of reader.read({
        topic: range.topic,
        partition: range.partition,
        from: committer.position,
        until: range.until,
        isolationLevel: stream.isolationLevel,
        maxChunkRecords: deps.maxChunkRecords ?? 500,
        signal: abort.signal,
      })) {
        // Stop before a chunk that might not commit in time; the planner dispatches the rest.
        const writeMs = committer.pendingWriteMs();
        if (clock() + Math.max(slowestChunkMs * 2, 1000) + writeMs > run.deadlineAtMs || abort.signal.aborted) break reading;
        const tChunk = clock();
        await committer.handleChunk(chunk.records, chunk.nextOffset);
        slowestChunkMs = Math.max(slowestChunkMs, clock() - tChunk);
      }
      break;
    } catch (err) {
      const parked = await onRetentionLoss(run, committer, held, err);
      if (parked) return parked;
    }
  }
  await committer.flush();
  return undefined;
}

/**
 * Retention deleted offsets the read still needed: park the range (failOnDataLoss) or record the
 * lost span and read on. Any other error is rethrown.
 */
async function onRetentionLoss(run: Run, committer: ChunkCommitter, held: LeasedRange, err: unknown): Promise<ProcessResult | undefined> {
  const { stream, range, clock } = run;
  const progress = committer.position;
  if (!(err instanceof OffsetOutOfRangeError) || err.logStartOffset === undefined || err.logStartOffset <= progress) throw err;
  const lostUntil = Math.min(err.logStartOffset, range.until);
  if (stream.failOnDataLoss) {
    const reason = rangeDataLossReason(range, progress, lostUntil);
    await run.deps.ledger.failRange({ range: held, status: 'parked', error: reason, nowMs: clock() });
    return finish(run, 'parked', committer, { reason, dataLoss: { from: progress, until: lostUntil } });
  }
  run.result.dataLoss = { from: progress, until: lostUntil };
  await committer.skipLost(lostUntil);
  return undefined;
}

/**
 * Phase 3: gives the range back when the deadline stopped the read, or marks it done, advances the
 * partition and (best effort) the consumer group.
 */
async function complete(
  run: Run,
  committer: ChunkCommitter,
  held: LeasedRange,
  leased: RangeState,
  started: number,
): Promise<ProcessResult> {
  const { deps, stream, range, clock } = run;
  const progress = committer.progress;
  if (progress < range.until) {
    const progressed = progress > leased.progress;
    if ((await deps.ledger.releaseRange({ range: held, nowMs: clock(), progressed })) === 'lease-lost') throw new LeaseLostError();
    return finish(run, 'partial', committer, {
      remaining: range.until - progress,
      reason: 'stopped before the deadline; the planner dispatches the remainder',
    });
  }
  const processingMs = Math.max(1, clock() - started);
  const partition = await deps.ledger.readPartition(stream.id, range.topic, range.partition);
  const stats = {
    records: committer.records,
    processingMs,
    schedulingDelayMs: Math.max(0, (leased.firstLeasedAtMs ?? started) - leased.plannedAtMs),
    finishedAtMs: clock(),
  };
  const outcome = await deps.ledger.completeRange({
    range: held,
    expectProgress: progress,
    nowMs: clock(),
    stats,
    observedRecordsPerSec: updateObservedRate(partition?.observedRecordsPerSec, committer.records, processingMs),
    advancePartition: true,
  });
  if (outcome === 'lease-lost') throw new LeaseLostError();
  await deps.afterStep?.('completed', { from: range.from, to: range.until });
  if (stream.consumerGroup && deps.commitGroupOffset) {
    // Best effort: the ledger is the source of truth; the group only feeds standard lag tools.
    await deps.commitGroupOffset(stream.consumerGroup, range.topic, range.partition, range.until).catch(() => undefined);
  }
  return finish(run, 'done', committer);
}

/** Phase 4: maps what stopped the invocation to its outcome, recording it on the range. */
async function mapError(run: Run, committer: ChunkCommitter, held: LeasedRange, err: unknown): Promise<ProcessResult> {
  const { ledger } = run.deps;
  const park = async (reason: string) => {
    await ledger.failRange({ range: held, status: 'parked', error: reason, nowMs: run.clock() });
    return finish(run, 'parked', committer, { reason });
  };
  if (err instanceof LeaseLostError) return finish(run, 'lease-lost', committer, { reason: LEASE_LOST_REASON });
  if (err instanceof PoisonStopError) return park(err.message);
  if (err instanceof PartitionNotFoundError) return park(`PARTITION_DELETED: ${err.message}`);
  // Anything else (broker down, throttling): record it for the planner, then fail the invocation.
  await recordFailedAttempt(run, held, err);
  throw err;
}

/** Records a failed attempt on the range for the planner (best effort: the invocation fails either way). */
async function recordFailedAttempt(run: Run, held: LeasedRange, err: unknown): Promise<void> {
  await run.deps.ledger.failRange({ range: held, status: 'failed', error: errorText(err), nowMs: run.clock() }).catch(() => undefined);
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
  return topicRecreatedReason(topic, now, plannedTopicId);
}
