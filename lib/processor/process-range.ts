/**
 * One processor invocation (docs/architecture.md, "One micro-batch"): take the leases of its ranges
 * (one range, or several small ones of a shared invocation, in one ledger write per shard), read
 * each range exactly `[progress, until)`, hand its records to the handler in chunks, commit them
 * conditionally, and complete the ranges together (again one write per shard), each completion
 * carrying its range's last commit. Duplicate or stale invocations lose a condition and stop
 * without effects; a range that fails does not stop the others of its invocation.
 */
import { partitionRatePerSec, rangeLeaseMs } from '../config/continuous';
import { randomBytes } from 'node:crypto';
import type { StreamConfig } from '../config/schema';
import { createDeliverer, type Deliverer, type DeliveryReport } from '../destinations/deliver';
import { ValidationError } from '../errors';
import type { FailureDestinations } from '../ports/failure-destination';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../ports/range-reader';
import { resolveSecret } from '../kafka/secrets';
import { updateObservedRate } from '../offsets';
import { updateObservedBytesPerRecord } from '../offsets/share';
import type { LeaseOutcome, Ledger, ObservedRates, RangeCompletionInput, StoreClock } from '../ports/ledger';
import type { LeasedRange, RangeState } from '../ports/ledger-state';
import type { RangeReader } from '../ports/range-reader';
import { topicIdChanged } from '../ports/ledger-rules/incarnation';
import { isOpenRange, type RangePayload, type RangesPayload } from '../ranges';
import { isContinuous } from '../config/continuous';
import { ChunkCommitter, errorText, LeaseLostError, PoisonStopError, type CommitterInput } from './committer';
import { DEFAULT_FOLD_BUDGET, FoldCommitter, type FoldBudget } from './fold-committer';
import type { HandlerContext, RecordsHandler } from './handler-api';
import { resolveHandlerSecrets } from './handler-secrets';
import type { RecordStage } from './record-gate';
import { recordStagesFor, type StageContext } from './record-stages';
import { LEASE_LOST_REASON, rangeDataLossReason, rangeMismatchMessage, topicRecreatedReason } from './messages';
import { runSegment, type SegmentHooks } from './segment';
import { pacer, type Pacer } from './segment-timing';

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
  /**
   * The stream's failure destinations (`onFailure`), to deliver each dead letter to right after its
   * commit. Unset, or a stream without `onFailure`: dead letters' deliveries wait in the ledger for the planner.
   */
  destinationsFor?: (stream: StreamConfig) => Promise<FailureDestinations>;
  /** Optional: also commit the finished offset to the stream's Kafka consumer group. */
  commitGroupOffset?: (group: string, topic: string, partition: number, offset: number) => Promise<void>;
  /** The local clock: durations and the deadline. */
  clock?: () => number;
  /** The store's clock: the range lease is taken and renewed on it (defaults to `clock`). */
  storeClock?: StoreClock;
  sleep?: (ms: number) => Promise<void>;
  /** The lease token of this invocation (default: 12 random characters; the ledger stores it on every range it holds). */
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
  /**
   * Continuous segments: a range reader of its own for each partition, which the segment closes
   * (a resident read long-polls; on a shared connection the broker would serve one such Fetch at a
   * time). Unset: `readerFor`'s.
   */
  createReader?: (stream: StreamConfig) => Promise<RangeReader>;
  /**
   * Continuous segments: invokes the successor of a segment with its ranges (each naming the
   * predecessor in `handover`), asynchronously; false when the invocation was refused. Unset: the
   * segment gives its ranges back without one and the planner's next run dispatches them.
   */
  handOver?: (payload: RangesPayload) => Promise<boolean>;
};

export type ProcessResult = {
  status:
    | 'done'
    | 'already-done'
    | 'held-elsewhere'
    | 'parked'
    | 'exhausted'
    | 'unknown-range'
    | 'lease-lost'
    | 'partial'
    | 'failed'
    | 'refused'
    | 'handed-over';
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
  /** Deliveries of this invocation's dead letters to the failure destinations (streams with `onFailure`). */
  deliveries?: DeliveryReport;
  reason?: string;
  durationMs: number;
};

/** What one invocation shares across its ranges. */
export type Invocation = {
  deps: ProcessorDeps;
  stream: StreamConfig;
  deadlineAtMs: number;
  clock: () => number;
  storeClock: StoreClock;
  leaseToken: string;
  t0: number;
  signal?: AbortSignal;
  /** A continuous segment's part in the run of each range (unset: a micro-batch invocation). */
  segment?: SegmentHooks;
};

/** One range of an invocation: its payload and the result being built. */
export type Run = Invocation & { range: RangePayload; result: ProcessResult };

/** A range read to its end, its completion not written yet. */
type Pending = { run: Run; completion: RangeCompletionInput };

/** Processes one range payload: lease -> read loop -> complete, errors mapped to outcomes. */
export async function processRange(
  deps: ProcessorDeps,
  input: { stream: StreamConfig; range: RangePayload; deadlineAtMs: number; signal?: AbortSignal },
): Promise<ProcessResult> {
  const [result] = await processRanges(deps, { ...input, ranges: [input.range], single: true });
  return result as ProcessResult;
}

/**
 * Processes the ranges of one invocation in order: their leases in one ledger write per shard, each
 * range read and handled, their completions in one write per shard. `single`: a one-range payload,
 * whose forged `until` is a ValidationError and whose unexpected failure fails the invocation (Lambda
 * retries it); in a shared invocation both are that range's result, and the others go on.
 */
export async function processRanges(
  deps: ProcessorDeps,
  input: { stream: StreamConfig; ranges: RangePayload[]; deadlineAtMs: number; signal?: AbortSignal; single?: boolean },
): Promise<ProcessResult[]> {
  if (input.ranges.length && input.ranges.every(isOpenRange) && isContinuous(input.stream)) return runSegment(deps, input);
  const clock = deps.clock ?? Date.now;
  const inv: Invocation = {
    deps,
    stream: input.stream,
    deadlineAtMs: input.deadlineAtMs,
    clock,
    // Never the local clock when a store clock is given: a clock running ahead would see a held lease as expired.
    storeClock: deps.storeClock ?? (async () => clock()),
    leaseToken: deps.leaseToken ?? randomBytes(9).toString('base64url'),
    t0: clock(),
    signal: input.signal,
  };
  const runs = input.ranges.map((range): Run => ({ ...inv, range, result: emptyResult(range) }));
  const leases = await leaseRanges(inv, input.ranges);
  return runLeased(inv, runs, leases, { single: input.single === true, concurrent: false });
}

/**
 * Phases 2 and 3 for ranges whose leases were asked: each leased range read and handled (one after
 * the other, or, for a continuous segment's partitions, side by side), then the completions.
 */
export async function runLeased(
  inv: Invocation,
  runs: Run[],
  leases: LeaseOutcome[],
  opts: { single: boolean; concurrent: boolean },
): Promise<ProcessResult[]> {
  const runOne = async (run: Run, i: number): Promise<Pending | undefined> => {
    const lease = leases[i] as LeaseOutcome;
    if (lease.kind === 'taken') return processLeased(run, lease, opts.single);
    refused(run, lease, opts.single);
    return undefined;
  };
  const pending: Pending[] = [];
  if (opts.concurrent) pending.push(...(await Promise.all(runs.map(runOne))).filter((p): p is Pending => p !== undefined));
  else {
    for (const [i, run] of runs.entries()) {
      const out = await runOne(run, i);
      if (out) pending.push(out);
    }
  }
  await completeAll(inv, pending);
  return runs.map((r) => r.result);
}

/** The result of a range before anything happened to it. */
export function emptyResult(range: RangePayload): ProcessResult {
  return {
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
  };
}

/** Phase 1: the leases of `ranges`, in one ledger write per shard (a continuous segment asks again while it waits for a hand-over). */
export async function leaseRanges(inv: Invocation, ranges: readonly RangePayload[]): Promise<LeaseOutcome[]> {
  return inv.deps.ledger.takeRangeLeases({
    stream: inv.stream.id,
    ranges: ranges.map((r) => ({
      topic: r.topic,
      partition: r.partition,
      from: r.from,
      until: r.until,
      ...(r.incarnation ? { incarnation: r.incarnation } : {}),
      ...(r.shard !== undefined ? { shard: r.shard } : {}),
    })),
    leaseToken: inv.leaseToken,
    nowMs: await inv.storeClock(),
    leaseMs: rangeLeaseMs(inv.stream),
    maxAttempts: inv.stream.maxAttempts,
  });
}

/** The result of a range whose lease was not taken; nothing was written for it. */
export function refused(run: Run, lease: Exclude<LeaseOutcome, { kind: 'taken' }>, single: boolean): void {
  const end = (status: ProcessResult['status'], extra: Partial<ProcessResult>) => finish(run, status, undefined, extra);
  switch (lease.kind) {
    case 'mismatch': {
      // Checked by the lease-taking write itself: nothing was counted or held.
      const message = rangeMismatchMessage(run.range, lease.range.until);
      if (single) throw new ValidationError(message);
      return end('refused', { reason: message });
    }
    case 'missing':
      return end('unknown-range', { reason: 'the ledger has no such range: only ranges the planner planned are processed' });
    case 'done':
      return end('already-done', { progress: lease.range.until, records: lease.range.records ?? 0, reason: 'finished earlier' });
    case 'held':
      return end('held-elsewhere', { progress: lease.range.progress, reason: `leased until ${lease.range.leaseExpiresAtMs}` });
    case 'parked':
      return end('parked', { progress: lease.range.progress, reason: lease.range.lastError });
    case 'exhausted':
      return end('exhausted', { progress: lease.range.progress, reason: `attempt limit ${run.stream.maxAttempts} reached` });
  }
}

/**
 * Phase 2, one leased range: secrets, stages, the read loop; returns its completion when it was read
 * to its end (written with the others), or nothing when its result is final already (parked, given
 * back at the deadline, lease lost, failed).
 */
async function processLeased(run: Run, lease: Extract<LeaseOutcome, { kind: 'taken' }>, single: boolean): Promise<Pending | undefined> {
  const { deps, range, clock } = run;
  const leased = lease.range;
  const held: LeasedRange = { ...range, leaseToken: run.leaseToken, ...(leased.shard !== undefined ? { shard: leased.shard } : {}) };
  run.result.progress = leased.progress;
  // Out of time before this range started (a shared invocation's later ranges): give it back untouched.
  if (clock() + 1000 > run.deadlineAtMs || run.signal?.aborted) {
    await giveBack(run, held, leased.progress, leased.progress);
    return undefined;
  }
  let committer: ChunkCommitter | undefined;
  run.segment?.hold(held, leased.progress);
  try {
    await deps.afterStep?.('leased', { from: leased.progress, to: leased.progress });
    committer = await committerFor(run, held, leased);
    // At-least-once in a segment: its ticks commit what is handled.
    if (run.segment && deps.handlerFor(run.stream).mode === 'at-least-once') {
      run.segment.hold(held, leased.progress, committer.tracked());
    }
    const started = clock();
    const parked = await readLoop(run, committer, held, leased);
    if (parked) return undefined;
    if (committer.position < range.until) {
      await giveBack(run, held, leased.progress, committer.progress, committer);
      return undefined;
    }
    return { run, completion: completionOf(run, committer, held, leased, lease.observed ?? {}, started) };
  } catch (err) {
    await mapError(run, committer, held, err, single);
    return undefined;
  } finally {
    run.segment?.drop(held);
  }
}

/** The committer of a leased range, with the handler's secrets, the record stages and the dead-letter deliverer. */
async function committerFor(run: Run, held: LeasedRange, leased: RangeState): Promise<ChunkCommitter> {
  const { deps, stream, clock } = run;
  const secrets = await handlerSecrets(run, held);
  // A segment's records are aged from its own start: its range was first leased when the stream began.
  const firstLeasedAtMs = run.segment ? run.t0 : (leased.firstLeasedAtMs ?? run.t0);
  const stages = await (deps.stagesFor ?? recordStagesFor)(stream, { firstLeasedAtMs });
  const deliverer = await delivererFor(run);
  const handler = deps.handlerFor(stream);
  return createCommitter(run, leased, {
    ledger: deps.ledger,
    stream,
    range: run.range,
    held,
    progress: leased.progress,
    handler,
    ctx: {
      stream: stream.id,
      sinkTable: stream.handler?.sinkTable,
      // The invocation's own signal (no listener added per range to a signal a warm runtime keeps).
      signal: run.signal ?? NEVER_ABORTED,
      deadlineAtMs: run.deadlineAtMs,
      secrets,
    } satisfies HandlerContext,
    clock,
    storeClock: run.storeClock,
    sleep: sleepOf(run),
    retryBaseMs: deps.retryBaseMs ?? 100,
    afterStep: deps.afterStep,
    // A segment commits every chunk: its commits wait for the segment's next commit tick anyway.
    commitEveryRecords: run.segment ? 1 : stream.processor.commitEveryRecords,
    ...(run.segment && handler.mode === 'at-least-once' && { commitInBackground: { settle: () => run.segment!.settle(held) } }),
    commitEveryMs: stream.processor.commitEveryMs,
    stages,
    deliverer,
    deferFinal: true,
  });
}

/**
 * The deliverer of the range's dead letters, when the stream has failure destinations. Destinations
 * that cannot be made (a Kafka producer's secrets unreadable) leave the deliveries pending.
 */
async function delivererFor(run: Run): Promise<Deliverer | undefined> {
  const { deps, stream } = run;
  if (!stream.onFailure) return undefined;
  let destinations: FailureDestinations = {};
  let problem: string | undefined;
  if (deps.destinationsFor) {
    destinations = await deps.destinationsFor(stream).catch((err: unknown) => {
      problem = `failure destinations of ${stream.id}: ${errorText(err)}`;
      return {};
    });
  }
  const deliverer = createDeliverer({ ledger: deps.ledger, stream, destinations, clock: run.clock });
  if (problem) deliverer.report.errors.push(problem);
  run.result.deliveries = deliverer.report;
  return deliverer;
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

/** Sets the range's result: `status`, the committer's counts and the time spent. */
function finish(run: Run, status: ProcessResult['status'], committer?: ChunkCommitter, extra: Partial<ProcessResult> = {}): void {
  const counts = committer && {
    records: committer.records,
    chunks: committer.chunks,
    deadLetters: committer.deadLetters,
    filtered: committer.skipped.filtered,
    expired: committer.skipped.expired,
    progress: committer.progress,
  };
  Object.assign(run.result, counts, { status, durationMs: run.clock() - run.t0 }, extra);
}

/**
 * Phase 1b: the handler's secrets, before a record is read. One that cannot be read fails the
 * attempt as any other error does (recorded on the range, counted against maxAttempts), and the
 * handler is never called without it.
 */
async function handlerSecrets(run: Run, held: LeasedRange): Promise<Readonly<Record<string, string>>> {
  const secretsFor = run.deps.secretsFor ?? ((stream: StreamConfig) => resolveHandlerSecrets(stream, resolveSecret));
  return secretsFor(run.stream).catch(async (err: unknown) => {
    await recordFailedAttempt(run, held, err);
    if (typeof err === 'object' && err !== null) recorded.add(err);
    throw err;
  });
}

/** Errors already recorded on their range as a failed attempt (not recorded twice). */
const recorded = new WeakSet<object>();

/** The handler's signal when the invocation has none (a local run, a test): never aborted. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * Phase 2: reads `[progress, until)` chunk by chunk into the committer until the range is read or
 * the deadline nears. Returns true when the range had to be parked instead.
 */
async function readLoop(run: Run, committer: ChunkCommitter, held: LeasedRange, leased: RangeState): Promise<boolean> {
  const { deps, stream, range, clock } = run;
  const reader = await deps.readerFor(stream);
  const recreated = await topicRecreatedSince(reader, range.topic, await plannedTopicId(run, leased));
  if (recreated) {
    await deps.ledger.failRange({ range: held, status: 'parked', error: recreated, nowMs: clock() });
    finish(run, 'parked', committer, { reason: recreated });
    return true;
  }
  let slowestChunkMs = 0;
  const pacing = segmentPacer(run);
  reading: while (committer.position < range.until) {
    try {
      for await (const chunk of reader.read({
        topic: range.topic,
        partition: range.partition,
        from: committer.position,
        until: range.until,
        isolationLevel: stream.isolationLevel,
        maxChunkRecords: pacing.chunkRecords,
        signal: run.signal,
        ...(isOpenRange(range) ? { open: true } : {}),
      })) {
        // Stop before a chunk that might not commit in time; the planner dispatches the rest.
        const writeMs = committer.pendingWriteMs();
        if (clock() + Math.max(slowestChunkMs * 2, 1000) + writeMs > run.deadlineAtMs || run.signal?.aborted) break reading;
        const pauseMs = pacing.delayMs(committer.recordsRead, clock());
        if (pauseMs > 0) await sleepOf(run)(pauseMs);
        const tChunk = clock();
        await committer.handleChunk(chunk.records, chunk.nextOffset);
        slowestChunkMs = Math.max(slowestChunkMs, clock() - tChunk);
      }
      break;
    } catch (err) {
      if (await onRetentionLoss(run, committer, held, err)) return true;
    }
  }
  await committer.flush();
  return false;
}

/**
 * A segment's pacing: the rate of one of the stream's partitions as the planner counted them
 * (`streamPartitions`; an ad hoc payload without it reads as the stream's only partition), averaged
 * from when its reading begins (not its invocation: a successor invoked ahead of its hand-over
 * would start with that wait as credit, a burst at every hand-over). A micro-batch range is not paced.
 */
function segmentPacer(run: Run): Pacer {
  const { stream, range, deps } = run;
  return pacer({
    ratePerSec: run.segment ? partitionRatePerSec(stream, range.streamPartitions ?? 1) : undefined,
    startedAtMs: run.clock(),
    intervalMs: stream.continuous?.commitIntervalMs ?? 0,
    maxRecords: deps.maxChunkRecords ?? 500,
  });
}

/** The run's sleep (injected in tests). */
function sleepOf(run: Run): (ms: number) => Promise<void> {
  return run.deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
}

/**
 * Retention deleted offsets the read still needed: park the range (failOnDataLoss, returns true) or
 * record the lost span and read on. Any other error is rethrown.
 */
async function onRetentionLoss(run: Run, committer: ChunkCommitter, held: LeasedRange, err: unknown): Promise<boolean> {
  const { stream, range, clock } = run;
  const progress = committer.position;
  if (!(err instanceof OffsetOutOfRangeError) || err.logStartOffset === undefined || err.logStartOffset <= progress) throw err;
  const lostUntil = Math.min(err.logStartOffset, range.until);
  if (stream.failOnDataLoss) {
    const reason = rangeDataLossReason(range, progress, lostUntil);
    await run.deps.ledger.failRange({ range: held, status: 'parked', error: reason, nowMs: clock() });
    finish(run, 'parked', committer, { reason, dataLoss: { from: progress, until: lostUntil } });
    return true;
  }
  run.result.dataLoss = { from: progress, until: lostUntil };
  await committer.skipLost(lostUntil);
  return false;
}

/**
 * Gives the range back before the deadline, keeping its progress; the planner dispatches the rest.
 * A segment's end is never a failed attempt, whether or not its partition had records (an idle
 * partition's segments would otherwise use up its attempts and have it parked).
 */
async function giveBack(run: Run, held: LeasedRange, leasedProgress: number, progress: number, committer?: ChunkCommitter): Promise<void> {
  const progressed = progress > leasedProgress || run.segment !== undefined;
  const handover = run.segment?.handedOver() === true;
  const released = await run.deps.ledger.releaseRange({ range: held, nowMs: run.clock(), progressed, ...(handover ? { handover } : {}) });
  if (released === 'lease-lost') throw new LeaseLostError();
  if (run.segment) {
    finish(run, handover ? 'handed-over' : 'partial', committer, {
      reason: handover ? 'segment ended; its successor takes over' : 'segment ended; the planner dispatches the range again',
    });
    return;
  }
  finish(run, 'partial', committer, {
    remaining: run.range.until - progress,
    reason: 'stopped before the deadline; the planner dispatches the remainder',
  });
}

/** A range's completion: its last commit (from the committed progress to `until`) and what its partition learns. */
function completionOf(
  run: Run,
  committer: ChunkCommitter,
  held: LeasedRange,
  leased: RangeState,
  observed: ObservedRates,
  started: number,
): RangeCompletionInput {
  const now = run.clock();
  const processingMs = Math.max(1, now - started);
  finish(run, 'done', committer);
  const rate = updateObservedRate(observed.observedRecordsPerSec, committer.records, processingMs);
  const bytes = updateObservedBytesPerRecord(observed.observedBytesPerRecord, committer.bytesRead, committer.recordsRead);
  return {
    range: held,
    expectProgress: committer.progress,
    nowMs: now,
    stats: {
      records: committer.records,
      processingMs,
      schedulingDelayMs: Math.max(0, (leased.firstLeasedAtMs ?? started) - leased.plannedAtMs),
      finishedAtMs: now,
    },
    ...(rate !== undefined ? { observedRecordsPerSec: Math.round(rate) } : {}),
    ...(bytes !== undefined ? { observedBytesPerRecord: bytes } : {}),
    advancePartition: true,
  };
}

/** Phase 3: the completions of every range read to its end, in one ledger write per shard; then their consumer group offsets. */
async function completeAll(inv: Invocation, pending: Pending[]): Promise<void> {
  if (!pending.length) return;
  const outcomes = await inv.deps.ledger.completeRanges(pending.map((p) => p.completion));
  for (const [i, { run }] of pending.entries()) {
    if (outcomes[i] === 'lease-lost') {
      finish(run, 'lease-lost', undefined, { reason: LEASE_LOST_REASON });
      continue;
    }
    Object.assign(run.result, { progress: run.range.until, durationMs: inv.clock() - inv.t0 });
    await inv.deps.afterStep?.('completed', { from: run.range.from, to: run.range.until });
    const group = inv.stream.consumerGroup;
    if (group && inv.deps.commitGroupOffset) {
      // Best effort: the ledger is the source of truth; the group only feeds standard lag tools.
      await inv.deps.commitGroupOffset(group, run.range.topic, run.range.partition, run.range.until).catch(() => undefined);
    }
  }
}

/**
 * Maps what stopped a range to its result, recording it on the range. Anything unexpected (broker
 * down, throttling) is recorded for the planner; it fails a one-range invocation (Lambda retries it),
 * and only its own range in a shared one.
 */
async function mapError(run: Run, committer: ChunkCommitter | undefined, held: LeasedRange, err: unknown, single: boolean): Promise<void> {
  const { ledger } = run.deps;
  const park = async (reason: string) => {
    await ledger.failRange({ range: held, status: 'parked', error: reason, nowMs: run.clock() });
    finish(run, 'parked', committer, { reason });
  };
  if (err instanceof LeaseLostError) return finish(run, 'lease-lost', committer, { reason: LEASE_LOST_REASON });
  if (err instanceof PoisonStopError) return park(err.message);
  if (err instanceof PartitionNotFoundError) return park(`PARTITION_DELETED: ${err.message}`);
  // Progress this attempt committed (the result holds the leased progress until it is final): the attempt is given back.
  const progressed = committer !== undefined && committer.progress > run.result.progress;
  if (!(typeof err === 'object' && err !== null && recorded.has(err))) await recordFailedAttempt(run, held, err, progressed);
  if (single) throw err;
  finish(run, 'failed', committer, { reason: errorText(err) });
}

/** Records a failed attempt on the range for the planner (best effort: the invocation fails either way). */
async function recordFailedAttempt(run: Run, held: LeasedRange, err: unknown, progressed = false): Promise<void> {
  await run.deps.ledger
    .failRange({ range: held, status: 'failed', error: errorText(err), nowMs: run.clock(), progressed })
    .catch(() => undefined);
}

/**
 * The topic id the range was planned against: the ledger's range's, else the payload's when it is
 * the topic's id now (the usual case: no look-up); otherwise the ledger's record of the partition,
 * read once. A payload naming another id than the topic's, or none, cannot skip the check, nor have
 * a range parked by naming a wrong one.
 */
async function plannedTopicId(run: Run, leased: RangeState): Promise<string | undefined> {
  if (leased.topicId !== undefined) return leased.topicId;
  const reader = await run.deps.readerFor(run.stream);
  if (!reader.topicId) return undefined;
  const now = await reader.topicId(run.range.topic);
  if (now === undefined || now === run.range.topicId) return run.range.topicId;
  // The lease was taken, so the partition is still the range's incarnation: its id is the range's.
  return (await run.deps.ledger.readPartition(run.stream.id, run.range.topic, run.range.partition))?.topicId;
}

/**
 * Why the range must not be read, when the topic now has another id than the one the range was
 * planned against (deleted and re-created under its name): its offsets name other records. The
 * planner closes the old incarnation and removes the range; parking it stops it until then.
 */
async function topicRecreatedSince(reader: RangeReader, topic: string, plannedTopicId: string | undefined): Promise<string | undefined> {
  if (plannedTopicId === undefined || !reader.topicId) return undefined;
  const now = await reader.topicId(topic);
  if (now === undefined || !topicIdChanged(plannedTopicId, now)) return undefined; // gone: the read reports it
  return topicRecreatedReason(topic, now, plannedTopicId);
}
