/**
 * One planner run (docs/architecture.md, "Planning, one run"): reach Kafka, fence, discover, read
 * offsets, decide (pure), persist ranges (recorded as sent), dispatch, record the exceptions. Every write is
 * fenced by the run's epoch, so a second planner at the same instant, or a stale one, changes
 * nothing (invariant I5 in the same document).
 */
import { createDeliverer, type DeliveryReport } from '../destinations/deliver';
import type { FailureDestinations } from '../ports/failure-destination';
import { randomUUID } from 'node:crypto';
import type { StreamConfig } from '../config/schema';
import { mapWithConcurrency } from '../concurrency';
import { topicSelector, unmatchedSubscription } from '../config/topics';
import { isContinuous } from '../config/continuous';
import { AppError } from '../errors';
import type { Dispatcher } from '../ports/dispatcher';
import type { KafkaMetadata, PartitionOffsets, TopicPartitions, UnavailablePartition } from '../ports/kafka-metadata';
import type { KeptPlannerLease, Ledger, PlanWrite, WriteOutcome } from '../ports/ledger';
import type { ClosedIncarnation, DataLossEntry, PartitionState, PendingStart, RangeState } from '../ports/ledger-state';
import { partitionKey, type RangePayload } from '../ranges';
import { ratePartitions } from '../offsets/segment-rate';
import { segmentInvocations, shareInvocations } from '../offsets/share';
import { streamProcessorConcurrency, type ProcessorConcurrency } from './concurrency-cap';
import { decidePlan, type PartitionReport, type PlanDecision } from './decide';
import { redispatchReason } from './plan/redispatch';
import { fencedOutMessage } from './messages';
import { readStartLookups } from './start/lookups';
import { startContext } from './start/rule';
import type { StartReads } from './start/strategy';

/** Checkpoints of a run, in order; tests inject crashes at each. */
export const PLANNER_STEPS = ['leased', 'registered', 'persisted', 'dispatched', 'recorded'] as const;
export type PlannerStep = (typeof PLANNER_STEPS)[number];

export type PlannerDeps = {
  ledger: Ledger;
  /** The Kafka metadata adapter for a stream's cluster (cached across warm invocations by the caller). */
  metadataFor: (stream: StreamConfig) => Promise<KafkaMetadata>;
  dispatcher: Dispatcher;
  /** How long a run may hold a stream's planner lease (>= the planner's timeout). */
  plannerLeaseMs: number;
  /** Unique per run; defaults to a random UUID. */
  ownerToken?: string;
  /** Test seam: called after each step; throwing simulates a crash there. */
  afterStep?: (step: PlannerStep, stream: string) => void | Promise<void>;
  /**
   * The processors the planned streams share (the processor's reserved concurrency, or the local
   * runtime's slots): each stream's share caps its open ranges. Unset: only `maxConcurrency` does.
   */
  processorConcurrency?: ProcessorConcurrency;
  /**
   * The stream's failure destinations (`onFailure`): each run retries the dead letters' deliveries
   * that are due, a bounded number (`RETRY_LIMITS`). Unset: deliveries stay pending in the ledger.
   */
  destinationsFor?: (stream: StreamConfig) => Promise<FailureDestinations>;
};

export type StreamPlanReport = {
  stream: string;
  dryRun: boolean;
  status: 'planned' | 'skipped' | 'failed';
  reason?: string;
  epoch?: number;
  partitions: PartitionReport[];
  registered: number;
  retired: number;
  failedPartitions: number;
  /** Partitions whose offsets could not be read this run (leader dead or moving); planned on a later run. */
  unavailablePartitions: number;
  rangesPlanned: number;
  recordsPlanned: number;
  /** Ranges (new or re-dispatched) the dispatcher accepted. */
  dispatched: number;
  /** Processor invocations the run's dispatches made (small ranges share one: `processor.shareInvocations`). */
  invocations: number;
  dispatchFailures: Array<{ range: string; error: string }>;
  redispatched: number;
  parked: number;
  /** Open ranges after the run (planned, leased or failed, not parked). */
  inFlight: number;
  dataLoss: DataLossEntry[];
  /** The planner lease a loop's tick kept for its next tick (`keep`), not released. */
  kept?: KeptPlannerLease;
  /** Incarnations closed in this run: topics deleted and re-created under their name (metric TopicRecreated). */
  recreated: ClosedIncarnation[];
  /** Writes that lost their condition (another actor moved first); re-read next run. */
  conditionsLost: number;
  durationMs: number;
  /** A bounded stream (replay) has nothing left to plan: every partition reached its stop offset. */
  finished?: boolean;
  /** Listed topics Kafka does not have, or 1 for a topic pattern matching none (the `TopicsMissing` metric). */
  topicsMissing: number;
  /** Deliveries of dead letters retried by this run (streams with `onFailure`): metrics DeadLettersDelivered, DeliveryFailures. */
  deliveries?: DeliveryReport;
  /** Continuous streams: partitions without a live segment when the run read the ledger (metric SegmentsMissing). */
  segmentsMissing?: number;
  /** A stream switched back to micro-batches: open segment ranges this run ended (the next run plans micro-batches from them). */
  segmentsEnded?: number;
  /**
   * Conditions worth an operator's eye that are not failures: a missing topic, a pattern matching
   * nothing, a broker without topic ids.
   */
  warnings: string[];
};

export type PlannerRunInput = { streams: StreamConfig[]; dryRun: boolean; nowMs: number };

/** Plans every given stream; one stream's failure is reported without stopping the others. */
export async function runPlanner(deps: PlannerDeps, input: PlannerRunInput): Promise<StreamPlanReport[]> {
  return Promise.all(
    input.streams.map((stream) => planStream(deps, stream, input).catch((err: unknown) => failedReport(stream.id, input.dryRun, err))),
  );
}

/** The report of a run that threw: failed, naming the error (a loop or chain goes on with its next tick). */
export function failedReport(stream: string, dryRun: boolean, err: unknown): StreamPlanReport {
  return {
    ...emptyReport(stream, dryRun),
    status: 'failed',
    reason: `${(err as Error)?.name ?? 'Error'}: ${(err as Error)?.message ?? String(err)}`,
  };
}

/** A report with nothing done yet (also the base of reports for skipped and failed runs). */
export function emptyReport(stream: string, dryRun: boolean): StreamPlanReport {
  return {
    stream,
    dryRun,
    status: 'planned',
    partitions: [],
    registered: 0,
    retired: 0,
    failedPartitions: 0,
    unavailablePartitions: 0,
    rangesPlanned: 0,
    recordsPlanned: 0,
    dispatched: 0,
    invocations: 0,
    dispatchFailures: [],
    redispatched: 0,
    parked: 0,
    inFlight: 0,
    dataLoss: [],
    recreated: [],
    conditionsLost: 0,
    durationMs: 0,
    topicsMissing: 0,
    warnings: [],
  };
}

const payloadOf = (r: RangeState, streamPartitions: number | undefined): RangePayload => ({
  stream: r.stream,
  topic: r.topic,
  partition: r.partition,
  from: r.from,
  until: r.until,
  ...(r.incarnation ? { incarnation: r.incarnation } : {}),
  ...(r.shard !== undefined ? { shard: r.shard } : {}),
  ...(r.topicId !== undefined ? { topicId: r.topicId } : {}),
  ...(streamPartitions !== undefined ? { streamPartitions } : {}),
});

/**
 * One stream, one run, in phases: reach Kafka -> fence -> discover -> offsets -> decide (pure) ->
 * persist -> dispatch -> record. Kafka is asked for the stream's topics before the lease is taken,
 * so a cluster that cannot be reached (or refuses the credentials) fails the run without any write
 * to the ledger. The lease is released whatever happens, saying whether every dispatch of the run
 * has its outcome recorded; a loop's tick (`keep`) that ran through keeps it instead (`rep.kept`) for
 * its next tick to take over (`previous`), or for the loop to release.
 */
export async function planStream(
  deps: PlannerDeps,
  stream: StreamConfig,
  input: { dryRun: boolean; nowMs: number; keep?: boolean; previous?: KeptPlannerLease; deadLoopOwner?: string },
): Promise<StreamPlanReport> {
  const t0 = Date.now();
  const { nowMs, dryRun } = input;
  const rep = emptyReport(stream.id, dryRun);
  const ownerToken = deps.ownerToken ?? randomUUID();
  const reached = await reachKafka(deps, stream);
  const fenced = await fence(deps, stream, { dryRun, nowMs, ownerToken, previous: input.previous, deadLoopOwner: input.deadLoopOwner });
  if (!fenced.acquired) return { ...rep, status: 'skipped', reason: fenced.reason, durationMs: Date.now() - t0 };
  if (!dryRun) rep.epoch = fenced.epoch;
  const run = runContext(deps, stream, nowMs, { stream: stream.id, epoch: fenced.epoch, ownerToken }, rep);
  // Set once every dispatch of this run has its outcome recorded; the lease release says so.
  let confirmed = false;
  try {
    if (fenced.finishedAtMs !== undefined) {
      // A finished bounded stream (replay) costs its lease and release, and no Kafka request.
      confirmed = true;
      return {
        ...rep,
        status: 'skipped',
        finished: true,
        reason: `bounded stream finished at ${new Date(fenced.finishedAtMs).toISOString()}`,
        durationMs: Date.now() - t0,
      };
    }
    await run.step('leased');
    const initial = fenced.startedAtMs === undefined;
    // Finished when looked at, no longer when fenced (a rewind in between): ask Kafka now.
    const { kafka, discovered, known, ranges } = await discover(run, reached ?? (await askKafka(deps, stream)));
    const starts = { initial, pendingStart: fenced.pendingStart };
    const { offsets, unavailable, startReads, warnings } = await readOffsets(kafka, stream, starts, discovered, known);
    const openRanges = ranges.filter((r) => r.status !== 'done');
    const decision = decidePlan({
      stream,
      nowMs,
      epoch: fenced.epoch,
      ...starts,
      known,
      discovered,
      offsets,
      startReads,
      openRanges,
      finishedRanges: ranges.filter((r) => r.status === 'done'),
      confirmedEpoch: fenced.confirmedEpoch,
      processorConcurrency: streamProcessorConcurrency(deps.processorConcurrency, stream.id),
    });
    reportDecision(rep, decision, unavailable, warnings);
    if (dryRun) {
      reportDryRun(rep, decision, openRanges);
      rep.durationMs = Date.now() - t0;
      return rep;
    }
    const again = await stillDue(deps.ledger, decision.redispatch, {
      stream,
      nowMs,
      epoch: fenced.epoch,
      confirmedEpoch: fenced.confirmedEpoch,
    });
    const planned = await persist(run, decision, initial);
    const marks = await dispatch(run, { ...decision, redispatch: again }, planned, known);
    await record(run, decision, { planned, marks, openRanges });
    confirmed = true;
    await retryDeliveries(deps, stream, nowMs, rep);
    if (decision.finished) await markFinished(run);
    await run.step('recorded');
  } catch (err) {
    if (err instanceof FencedOutError) {
      return { ...rep, status: 'skipped', reason: err.message, durationMs: Date.now() - t0 };
    }
    throw err;
  } finally {
    if (dryRun) {
      // A dry run holds no lease.
    } else if (input.keep && confirmed) rep.kept = { epoch: run.ctx.epoch, ownerToken, confirmDispatches: true };
    else await deps.ledger.releasePlannerLease({ ...run.ctx, confirmDispatches: confirmed }).catch(() => undefined);
  }
  rep.durationMs = Date.now() - t0;
  return rep;
}

/** A bounded stream with nothing left: marks it finished (once), fenced like the run's writes. */
async function markFinished(run: Run): Promise<void> {
  const marked = await run.deps.ledger.markStreamFinished({ ...run.ctx, nowMs: run.nowMs });
  if (marked === 'fenced') throw new FencedOutError(run.stream.id, run.ctx.epoch);
}

/** Retries the stream's due deliveries to its failure destinations (never fails the run: a failure is counted). */
async function retryDeliveries(deps: PlannerDeps, stream: StreamConfig, nowMs: number, rep: StreamPlanReport): Promise<void> {
  if (!stream.onFailure || !deps.destinationsFor) return;
  let destinations: FailureDestinations;
  try {
    destinations = await deps.destinationsFor(stream);
  } catch (err) {
    rep.deliveries = {
      delivered: 0,
      failed: 0,
      dropped: 0,
      errors: [`failure destinations of ${stream.id}: ${(err as Error)?.message ?? String(err)}`],
    };
    return;
  }
  const deliverer = createDeliverer({ ledger: deps.ledger, stream, destinations });
  await deliverer.retryDue(nowMs);
  rep.deliveries = deliverer.report;
}

/** What the phases of one run share: its fence, its report, its crash seam and its fenced writes. */
type Run = {
  deps: PlannerDeps;
  stream: StreamConfig;
  nowMs: number;
  ctx: { stream: string; epoch: number; ownerToken: string };
  rep: StreamPlanReport;
  step: (s: PlannerStep) => Promise<void>;
  /** Applies writes under the fence; a fenced-out batch stops the run, lost conditions are counted. */
  apply: (writes: PlanWrite[]) => Promise<WriteOutcome[]>;
};

function runContext(deps: PlannerDeps, stream: StreamConfig, nowMs: number, ctx: Run['ctx'], rep: StreamPlanReport): Run {
  return {
    deps,
    stream,
    nowMs,
    ctx,
    rep,
    step: async (s) => {
      await deps.afterStep?.(s, stream.id);
    },
    apply: async (writes) => {
      if (!writes.length) return [];
      const out = await deps.ledger.applyPlan({ ...ctx, writes });
      if (out.includes('fenced')) throw new FencedOutError(stream.id, ctx.epoch);
      rep.conditionsLost += out.filter((o) => o === 'condition-failed').length;
      return out;
    },
  };
}

type Fence =
  | {
      acquired: true;
      epoch: number;
      startedAtMs?: number;
      pendingStart?: PendingStart[];
      finishedAtMs?: number;
      confirmedEpoch?: number;
    }
  | { acquired: false; reason: string };

/** Fence: take the stream's planner lease (a new epoch). A dry run takes no lease, writes nothing, and reads as the next epoch. */
async function fence(
  deps: PlannerDeps,
  stream: StreamConfig,
  run: { dryRun: boolean; nowMs: number; ownerToken: string; previous?: KeptPlannerLease; deadLoopOwner?: string },
): Promise<Fence> {
  if (run.dryRun) {
    const meta = await deps.ledger.readMeta(stream.id);
    return {
      acquired: true,
      epoch: (meta?.epoch ?? 0) + 1,
      startedAtMs: meta?.startedAtMs,
      pendingStart: meta?.pendingStart,
      finishedAtMs: meta?.finishedAtMs,
      confirmedEpoch: meta?.confirmedEpoch,
    };
  }
  const lease = await deps.ledger.acquirePlannerLease({
    stream: stream.id,
    ownerToken: run.ownerToken,
    nowMs: run.nowMs,
    leaseMs: deps.plannerLeaseMs,
    ...(run.previous ? { previous: run.previous } : {}),
    ...(run.deadLoopOwner !== undefined ? { deadLoopOwner: run.deadLoopOwner } : {}),
  });
  if (!lease.acquired)
    return { acquired: false, reason: `another planner run holds the lease until ${new Date(lease.leaseExpiresAtMs).toISOString()}` };
  const { startedAtMs, pendingStart, finishedAtMs, confirmedEpoch } = lease.meta;
  return { acquired: true, epoch: lease.epoch, startedAtMs, pendingStart, finishedAtMs, confirmedEpoch };
}

type Reached = { kafka: KafkaMetadata; discovered: TopicPartitions[] };

/**
 * Reach Kafka: the stream's topics and partitions (one metadata call), asked before the lease so an
 * unreachable cluster changes nothing. A finished bounded stream (replay) is not asked: undefined.
 */
async function reachKafka(deps: PlannerDeps, stream: StreamConfig): Promise<Reached | undefined> {
  if ((await deps.ledger.readMeta(stream.id))?.finishedAtMs !== undefined) return undefined;
  return askKafka(deps, stream);
}

async function askKafka(deps: PlannerDeps, stream: StreamConfig): Promise<Reached> {
  const kafka = await deps.metadataFor(stream);
  return { kafka, discovered: await kafka.describeTopics(topicSelector(stream)) };
}

/** Discover: what the ledger knows of the partitions Kafka gave, and of their ranges. */
async function discover(
  run: Run,
  reached: Reached,
): Promise<{ kafka: KafkaMetadata; discovered: TopicPartitions[]; known: PartitionState[]; ranges: RangeState[] }> {
  const { kafka, discovered } = reached;
  const { partitions: known, ranges } = await run.deps.ledger.readPartitionsAndRanges(run.stream.id);
  // A listed topic Kafka does not have, or a pattern matching none: not a failure, but worth an alarm.
  const unmatched = unmatchedSubscription(
    run.stream,
    discovered.map((t) => t.topic),
  );
  if (unmatched) {
    run.rep.topicsMissing = unmatched.count;
    run.rep.warnings.push(unmatched.text);
  }
  return { kafka, discovered, known, ranges };
}

/** Whether new partitions start at startingOffsets: on the first run, and afterwards those pending their start. */
type Starts = { initial: boolean; pendingStart?: PendingStart[] };

type OffsetsRead = {
  offsets: PartitionOffsets[];
  unavailable: UnavailablePartition[];
  startReads: Map<string, StartReads>;
  warnings: string[];
};

/**
 * Offsets: earliest and latest of every discovered partition (batched), then for the new partitions
 * whose start position needs more, what it asks for (start/lookups.ts). Unavailable: the partitions
 * of any look-up that could not be read.
 */
async function readOffsets(
  kafka: KafkaMetadata,
  stream: StreamConfig,
  starts: Starts,
  discovered: TopicPartitions[],
  known: PartitionState[],
): Promise<OffsetsRead> {
  // Partial: a dead leader costs its own partitions this run, not the stream's (retried next run).
  const { offsets, unavailable } = discovered.length
    ? await kafka.fetchAvailableOffsets(discovered, stream.isolationLevel)
    : { offsets: [], unavailable: [] };
  const ctx = startContext(starts.initial, starts.pendingStart, known);
  const { reads, unavailable: unread, warnings } = await readStartLookups(kafka, stream, ctx, discovered, offsets, known);
  return { offsets, unavailable: [...unavailable, ...unread], startReads: reads, warnings };
}

/**
 * What the decision says about partitions, for every run (dry or not); unavailable partitions carry
 * their reason (a new one also where it will start). `warnings`: the offset look-ups'.
 */
function reportDecision(rep: StreamPlanReport, decision: PlanDecision, unavailable: UnavailablePartition[], warnings: string[]): void {
  const why = new Map(unavailable.map((u) => [partitionKey(u.topic, u.partition), u]));
  rep.partitions = decision.partitions.map((p) => {
    const u = why.get(partitionKey(p.topic, p.partition));
    if (!u || p.action !== 'no-offsets') return p;
    const note = `offsets unavailable this run: ${u.code}: ${u.reason}${p.status === 'new' && p.note ? `; ${p.note}` : ''}`;
    return { ...p, unavailable: u.code, unavailableReason: u.reason, note };
  });
  rep.unavailablePartitions = unavailable.length;
  rep.registered = decision.registrations.length;
  rep.retired = decision.writes.filter((w) => w.kind === 'retire-partition').length;
  rep.failedPartitions = decision.writes.filter((w) => w.kind === 'fail-partition').length;
  rep.dataLoss = decision.writes.flatMap((w) => (w.kind === 'record-data-loss' ? [w.loss] : []));
  if (decision.segmentsMissing !== undefined) rep.segmentsMissing = decision.segmentsMissing;
  if (decision.finished) rep.finished = true;
  if (decision.noTopicIds) rep.warnings.push(NO_TOPIC_IDS);
  rep.warnings.push(...warnings);
}

/** A dry run reports what the decision would write and send. */
function reportDryRun(rep: StreamPlanReport, decision: PlanDecision, openRanges: RangeState[]): void {
  rep.recreated = decision.recreated;
  rep.rangesPlanned = decision.newRanges.length;
  rep.recordsPlanned = decision.recordsPlanned;
  rep.redispatched = decision.redispatch.length;
  rep.parked = decision.parks.length;
  rep.inFlight = openRanges.filter((r) => r.status !== 'parked').length;
}

/**
 * Persist: new partitions first (nothing is planned for one whose registration did not apply),
 * then retire/fail/data loss/incarnation closes and the new ranges, in one ordered batch. Returns
 * the ranges written.
 */
async function persist(run: Run, decision: PlanDecision, initial: boolean): Promise<RangeState[]> {
  const { rep } = run;
  const regOut = await run.apply(decision.registrations.map((partition) => ({ kind: 'register-partition' as const, partition })));
  const notRegistered = new Set(
    decision.registrations.filter((_, i) => regOut[i] !== 'applied').map((p) => partitionKey(p.topic, p.partition)),
  );
  if (initial) {
    // With the partitions this run could not register: they existed at the start, so a later run
    // registers them at startingOffsets (a partition appearing later starts by the rules of start/rule.ts).
    const started = await run.deps.ledger.markStreamStarted({ ...run.ctx, nowMs: run.nowMs, pendingStart: decision.pendingStart });
    if (started === 'fenced') throw new FencedOutError(run.stream.id, run.ctx.epoch);
  }
  await run.step('registered');

  const writes = decision.writes.filter((w) => {
    const tp = w.kind === 'plan-range' ? w.range : w.kind === 'record-data-loss' ? w.loss : w;
    return !('topic' in tp) || !notRegistered.has(partitionKey(tp.topic, tp.partition));
  });
  const out = await run.apply(writes);
  const planned: RangeState[] = [];
  writes.forEach((w, i) => {
    if (w.kind === 'plan-range' && out[i] === 'applied') planned.push(w.range);
    if (w.kind === 'close-incarnation' && out[i] === 'applied') rep.recreated.push(w.closed);
    if (w.kind === 'end-segment' && out[i] === 'applied') rep.segmentsEnded = (rep.segmentsEnded ?? 0) + 1;
  });
  rep.rangesPlanned = planned.length;
  rep.recordsPlanned = planned.reduce((s, r) => s + (r.until - r.from), 0);
  await run.step('persisted');
  return planned;
}

/**
 * Dispatch: the new ranges (persisted as sent) and those due again. Returns the exceptions to
 * record: new ranges the dispatcher refused, and re-dispatches it accepted.
 */
async function dispatch(run: Run, decision: PlanDecision, planned: RangeState[], known: PartitionState[]): Promise<PlanWrite[]> {
  const { rep } = run;
  const toDispatch = [...planned, ...decision.redispatch.map((x) => x.range)];
  const invocations = invocationsFor(run.stream, toDispatch, known);
  // A continuous stream's segments read at most their equal share of its rate limits.
  const streamPartitions = isContinuous(run.stream) ? ratePartitions([...known, ...decision.registrations]) : undefined;
  const payloads = toDispatch.map((r) => payloadOf(r, streamPartitions));
  const results = toDispatch.length ? await run.deps.dispatcher.dispatch(payloads, { invocations }) : [];
  rep.invocations = toDispatch.length ? invocations.length : 0;
  await run.step('dispatched');
  const marks: PlanWrite[] = [];
  results.forEach((res, i) => {
    const r = toDispatch[i] as RangeState;
    const isNew = i < planned.length;
    if (!res.ok) rep.dispatchFailures.push({ range: `${r.topic}/${r.partition}/${r.from}`, error: res.error });
    if (isNew && !res.ok) marks.push({ kind: 'unmark-dispatch', range: r, expect: { dispatches: r.dispatches } });
    if (!isNew && res.ok) {
      marks.push({ kind: 'mark-dispatched', range: r, expect: { dispatches: r.dispatches }, nowMs: run.nowMs, attempts: r.attempts });
    }
  });
  rep.dispatched = results.filter((r) => r.ok).length;
  rep.redispatched = results.slice(planned.length).filter((r) => r.ok).length;
  return marks;
}

/**
 * The processor invocations of a run's ranges: small ones share an invocation under the stream's
 * `processor.shareInvocations` (lib/offsets/share.ts), weighed by what is left of each (`progress`
 * on) and its partition's observed bytes per record.
 */
function invocationsFor(stream: StreamConfig, ranges: RangeState[], known: PartitionState[]): number[][] {
  if (stream.continuous) return segmentInvocations(ranges, stream.continuous.partitionsPerSegment);
  const bytes = new Map(known.map((p) => [partitionKey(p.topic, p.partition), p.observedBytesPerRecord]));
  const share = stream.processor.shareInvocations;
  const weighed = ranges.map((r) => ({
    records: r.until - r.progress,
    ...(bytes.get(partitionKey(r.topic, r.partition)) !== undefined
      ? { bytesPerRecord: bytes.get(partitionKey(r.topic, r.partition)) }
      : {}),
    ...(r.shard !== undefined ? { shard: r.shard } : {}),
  }));
  return shareInvocations(weighed, share === false ? undefined : share);
}

/**
 * The re-dispatches a consistent read of each range confirms, with the range as read. The
 * open-ranges index is eventually consistent: a planner ticking every second can read a range as
 * it was before its last dispatch, failure or lease renewal, and would send it again while its
 * processor runs, or twice for one failure.
 */
async function stillDue(
  ledger: Ledger,
  due: PlanDecision['redispatch'],
  at: Parameters<typeof redispatchReason>[1],
): Promise<PlanDecision['redispatch']> {
  const fresh = await mapWithConcurrency(due, REDISPATCH_READ_CONCURRENCY, async ({ range }) => {
    const r = await ledger.readRange(range.stream, range);
    const reason = r && redispatchReason(r, at);
    return r && reason ? { range: r, reason } : undefined;
  });
  return fresh.filter((x) => x !== undefined);
}

/** Record: the dispatch exceptions, the parks and the committed offsets repaired, in one batch. */
async function record(
  run: Run,
  decision: PlanDecision,
  done: { planned: RangeState[]; marks: PlanWrite[]; openRanges: RangeState[] },
): Promise<void> {
  const { rep } = run;
  const repaired = await repairCommitted(run.deps.ledger, run.stream.id, decision.checkCommitted);
  const closing = await run.apply([...done.marks, ...decision.parks, ...repaired]);
  rep.parked = decision.parks.filter((_, i) => closing[done.marks.length + i] === 'applied').length;
  rep.inFlight = done.openRanges.filter((r) => r.status !== 'parked').length - rep.parked + done.planned.length;
}

/** The warning of a run whose broker gives no topic ids (Metadata below v10). */
export const NO_TOPIC_IDS = 'no topic ids from this broker: re-creation detected only by offset regression';

/** A newer planner run fenced this one out: it stops without further writes (the run is skipped, not failed). */
export class FencedOutError extends AppError {
  constructor(stream: string, epoch: number, options?: { cause?: unknown }) {
    super('FENCED_OUT', fencedOutMessage(stream, epoch), options);
  }
}

/**
 * A partition whose committed offset lags its cursor with no open range starting there: the range
 * at `committed` finished (split ranges finishing out of order). Advance over finished ranges,
 * reading each with a consistent read, since the open-ranges index may lag.
 */
async function repairCommitted(ledger: Ledger, stream: string, partitions: PartitionState[]): Promise<PlanWrite[]> {
  // Partitions are independent: their chains are read side by side (a run with many split
  // partitions finishing out of order would otherwise wait for one read after the other).
  const advanced = await mapWithConcurrency(partitions, REPAIR_READ_CONCURRENCY, async (p): Promise<PlanWrite | undefined> => {
    let to = p.committed;
    for (let hops = 0; hops < 100 && to < p.nextFrom; hops++) {
      const r = await ledger.readRange(stream, { topic: p.topic, partition: p.partition, from: to, incarnation: p.incarnation });
      if (!r || r.status !== 'done') break;
      to = r.until;
    }
    return to > p.committed ? { kind: 'advance-committed', topic: p.topic, partition: p.partition, expect: p.committed, to } : undefined;
  });
  return advanced.filter((w): w is PlanWrite => w !== undefined);
}

/** Partitions whose finished ranges one run reads at once when repairing committed offsets. */
const REPAIR_READ_CONCURRENCY = 8;

/** Ranges due again that one run reads at once to confirm them. */
const REDISPATCH_READ_CONCURRENCY = 16;
