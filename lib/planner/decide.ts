/**
 * The planner's decisions for one stream and one run, as a pure function of what the run read
 * (ledger state, Kafka metadata and offsets) and `nowMs`. run.ts does the I/O around it.
 */
import type { StreamConfig } from '../config/schema';
import { topicMatcher } from '../config/topics';
import { clampRanges, computePidRate, initialPidState, partsForMinPartitions, shouldTrigger, splitRange, timeBudget } from '../offsets';
import type { OffsetRange, PartitionClampInput } from '../offsets';
import type { PartitionOffsets, TopicPartitions, UnavailableCode } from '../ports/kafka-metadata';
import { CLOSE_MAX_OPEN_RANGES, type PlanWrite } from '../ports/ledger';
import { type ClosedIncarnation, type PartitionState, type PendingStart, type RangeState } from '../ports/ledger-state';
import { sameIncarnation, topicIdChanged } from '../ports/ledger-rules/incarnation';
import { partitionKey } from '../ranges';
import {
  groupStart,
  newTopicStart,
  startContext,
  startGroup,
  startRule,
  type GroupOffsetRead,
  type Start,
  type StartContext,
  type StartRule,
} from './starts';
import { withArchives } from './archive';
import { admitPieces, bySlotPriority, capSource, occupiedSlots, openRangeCap, type ProcessorConcurrency } from './concurrency-cap';
import {
  attemptsExhaustedError,
  dataLossReason,
  offsetRegressionReason,
  regressionRecreationReason,
  waitingForConcurrencyNote,
} from './messages';

export type PlanInput = {
  stream: StreamConfig;
  nowMs: number;
  epoch: number;
  /**
   * True on the stream's first run (until it is marked started): new partitions start at
   * `startingOffsets`. Afterwards only those of `pendingStart` do; a partition of a topic that
   * appeared since starts at `newTopics`, one added to a known topic at earliest (see starts.ts).
   */
  initial: boolean;
  /** Partitions the first run found but could not register (`StreamMeta.pendingStart`). */
  pendingStart?: PendingStart[];
  known: PartitionState[];
  discovered: TopicPartitions[];
  offsets: PartitionOffsets[];
  /**
   * Start offsets looked up by timestamp for the new partitions that start at a timestamp
   * (`startingOffsets.timestampMs`, `newTopics.timestampMs`); one missing here waits for a later run.
   */
  timestampOffsets?: Map<string, number>;
  /**
   * What was read of the `startingOffsets.fromGroup` group for the new partitions that start from it;
   * one missing here waits for a later run.
   */
  groupOffsets?: Map<string, GroupOffsetRead>;
  openRanges: RangeState[];
  /** Finished ranges still in their partitions' live state: archived by the write that next changes their partition. */
  finishedRanges?: RangeState[];
  /** The last epoch that confirmed its dispatches (`StreamMeta.confirmedEpoch`). */
  confirmedEpoch?: number;
  /** The processors this stream shares with the planner's other streams (its share caps its open ranges). */
  processorConcurrency?: ProcessorConcurrency;
};

/** What happened to one partition in this run (for reports, metrics and `plan --dry-run`). */
export type PartitionReport = {
  topic: string;
  partition: number;
  status: PartitionState['status'] | 'new';
  earliest?: number;
  latest?: number;
  committed: number;
  nextFrom: number;
  /** latest - committed: records not yet processed. */
  lag: number;
  planned: Array<{ from: number; until: number }>;
  action:
    | 'registered'
    | 'planned'
    | 'idle'
    | 'in-flight'
    | 'waiting-for-min-offsets'
    /** Due, but the stream has as many ranges open as its cap allows: planned when a slot frees. */
    | 'waiting-for-concurrency'
    | 'retired'
    | 'failed'
    | 'data-loss'
    | 'inactive'
    | 'no-offsets'
    /** A bounded stream's partition committed up to its stop offset. */
    | 'finished'
    /** The topic was deleted and re-created under its name: the old incarnation is closed, the new one registered. */
    | 'recreated';
  note?: string;
  /** Why the offsets could not be read this run (action `no-offsets`), when the look-up said. */
  unavailable?: UnavailableCode;
  /** The look-up's one-line reason with `unavailable` (e.g. which leader broker did not answer). */
  unavailableReason?: string;
  /** Bounded streams (replays): where this partition stops. */
  stopOffset?: number;
};

export type RedispatchReason = 'never-dispatched' | 'dispatch-unconfirmed' | 'not-started' | 'lease-expired' | 'failed';

export type PlanDecision = {
  /** Partitions to persist before anything is planned for them. */
  registrations: PartitionState[];
  /** A first run: the partitions found but not registered (no offsets yet), recorded with the start mark. */
  pendingStart: PendingStart[];
  /** Retire, fail, data-loss and range writes, in the order they must apply. */
  writes: PlanWrite[];
  /** Ranges newly planned in `writes` (to dispatch once persisted). */
  newRanges: RangeState[];
  /** Existing open ranges to dispatch again, and why. */
  redispatch: Array<{ range: RangeState; reason: RedispatchReason }>;
  /** Ranges that reached the attempt limit. */
  parks: PlanWrite[];
  /** Partitions whose committed offset lags the cursor with no open range at it: check the range there. */
  checkCommitted: PartitionState[];
  partitions: PartitionReport[];
  recordsPlanned: number;
  /**
   * A bounded stream (its partitions have stop offsets, e.g. a replay) whose every partition is
   * committed up to its stop offset or retired: nothing is left to plan, ever.
   */
  finished: boolean;
  /** Incarnations closed by `writes` (topics re-created under their name). */
  recreated: ClosedIncarnation[];
  /** Topics were found but the broker gave none of them an id: re-creation is detected only by offset regression. */
  noTopicIds: boolean;
};

/**
 * A partition missing from the metadata within this long of its registration is not retired yet
 * (metadata of a topic created a moment ago reaches brokers one by one; see docs/architecture.md).
 */
const MISSING_AFTER_REGISTRATION_GRACE_MS = 5_000;

/**
 * The pure planning step: registrations, retirements, data loss, clamped ranges and re-dispatches.
 * Its phases (docs/architecture.md, "Planning, one run"): discover -> classify known -> check
 * candidates -> grant slots -> clamp and split -> redispatch and park. Linear in the partitions and open ranges:
 * every look-up by partition goes through the index built once.
 */
export function decidePlan(input: PlanInput): PlanDecision {
  const ix = indexInput(input);
  const draft: Draft = { writes: [], reports: new Map(), startNotes: new Map() };
  const { registrations, pendingStart } = discoverNew(input, ix, draft);
  const known = classifyKnown(input, ix, draft);
  // New partitions are candidates too, ahead of the known ones.
  const candidates = [...registrations, ...known.candidates];
  const { eligible, checkCommitted } = checkCandidates(input, ix, candidates, draft);
  const slots = grantSlots(input, ix, candidates, eligible, draft);
  const { newRanges, recordsPlanned } = clampAndSplit(input, ix, slots, draft);
  const { redispatch, parks } = redispatchOpen(input, candidates);
  return {
    registrations,
    pendingStart,
    writes: withArchives(draft.writes, input.finishedRanges ?? []),
    newRanges,
    redispatch,
    parks,
    checkCommitted,
    partitions: sortedReports(draft, registrations),
    recordsPlanned,
    finished: ix.bounded && boundedFinished(input.known, draft.writes),
    recreated: known.recreated,
    noTopicIds: input.discovered.length > 0 && input.discovered.every((t) => t.topicId === undefined),
  };
}

/** What the phases look up by partition (key `partitionKey(topic, partition)`), indexed once per run. */
type PlanIndex = {
  matches: (topic: string) => boolean;
  offsets: Map<string, PartitionOffsets>;
  /** The partitions of each discovered topic. */
  discovered: Map<string, Set<number>>;
  topicIds: Map<string, string | undefined>;
  known: Map<string, PartitionState>;
  openByKey: Map<string, RangeState[]>;
  /** A bounded stream (replay) reads exactly the partitions and offsets it was created with. */
  bounded: boolean;
  starts: StartContext;
};

/**
 * What the phases decided so far: the writes in the order they must apply, each partition's latest
 * report, and what to say about where a partition registered this run starts.
 */
type Draft = { writes: PlanWrite[]; reports: Map<string, PartitionReport>; startNotes: Map<string, string> };

/** A partition to clamp: its clamp input and the backpressure state to persist with its range. */
type Eligible = { p: PartitionState; input: PartitionClampInput; pidUpdate?: Pick<PartitionState, 'pid' | 'backpressureRatePerSec'> };

function indexInput(input: PlanInput): PlanIndex {
  const openByKey = new Map<string, RangeState[]>();
  for (const r of input.openRanges) {
    const k = partitionKey(r.topic, r.partition);
    const list = openByKey.get(k);
    if (list) list.push(r);
    else openByKey.set(k, [r]);
  }
  return {
    matches: topicMatcher(input.stream),
    offsets: new Map(input.offsets.map((o) => [partitionKey(o.topic, o.partition), o])),
    discovered: new Map(input.discovered.map((t) => [t.topic, new Set(t.partitions)])),
    topicIds: new Map(input.discovered.map((t) => [t.topic, t.topicId])),
    known: new Map(input.known.map((p) => [partitionKey(p.topic, p.partition), p])),
    openByKey,
    bounded: input.known.some((p) => p.stopOffset !== undefined),
    starts: startContext(input.initial, input.pendingStart, input.known),
  };
}

/**
 * Discover: partitions seen for the first time are registered at their start offset (never in a
 * bounded stream; `starts.ts` says where). One whose start cannot be told this run (no offsets, or
 * no timestamp or group offset) waits for a later run; a first run returns those as pending their
 * start. A topic that appeared after the first run starts whole, in one run, unless `newTopics` is
 * earliest: a partition of it registered later would count as added to a known topic and start at
 * earliest, not at `newTopics`.
 */
function discoverNew(input: PlanInput, ix: PlanIndex, draft: Draft): Pick<PlanDecision, 'registrations' | 'pendingStart'> {
  const registrations: PartitionState[] = [];
  const pendingStart: PendingStart[] = [];
  if (ix.bounded) return { registrations, pendingStart };
  for (const t of input.discovered) {
    const fresh = t.partitions.filter((partition) => !ix.known.has(partitionKey(t.topic, partition)));
    const placed = fresh.map((partition) => ({ partition, start: startOffsetFor(input, ix, t, partition) }));
    const waiting = placed.filter((x) => 'wait' in x.start).map((x) => x.partition);
    const whole = input.stream.newTopics !== 'earliest' && fresh.length > 0 && startRule(ix.starts, t, fresh[0]!) === 'newTopics';
    for (const { partition, start } of placed) {
      const k = partitionKey(t.topic, partition);
      if ('wait' in start || (whole && waiting.length)) {
        const why = 'wait' in start ? start.wait : `a new topic starts whole: partition ${waiting.join(', ')} not placed this run`;
        draft.reports.set(k, waitingReport(input, ix, t, partition, why));
        continue;
      }
      if (start.note) draft.startNotes.set(k, `starts at ${start.offset}: ${start.note}`);
      registrations.push(newPartition(input, t, partition, start.offset));
    }
    if (input.initial && waiting.length) pendingStart.push({ topic: t.topic, partitions: waiting, ...topicIdOf(t) });
  }
  return { registrations, pendingStart };
}

function newPartition({ stream, nowMs }: PlanInput, t: TopicPartitions, partition: number, start: number): PartitionState {
  return {
    stream: stream.id,
    topic: t.topic,
    partition,
    status: 'active',
    startOffset: start,
    committed: start,
    nextFrom: start,
    firstSeenAtMs: nowMs,
    ...topicIdOf(t),
  };
}

const topicIdOf = (t: TopicPartitions): { topicId?: string } => (t.topicId !== undefined ? { topicId: t.topicId } : {});

/** What a new partition not registered this run is told: where it will start. */
const WHERE_IT_STARTS: Record<StartRule, string> = {
  startingOffsets: 'present when the stream started, it will start at startingOffsets',
  newTopics: 'a topic that appeared after the stream started, it will start at newTopics',
  newPartition: 'it will start at earliest',
};

/** The report of a new partition not registered this run (`why`), saying where it will start. */
function waitingReport(input: PlanInput, ix: PlanIndex, t: TopicPartitions, partition: number, why: string): PartitionReport {
  const waiting = newPartition(input, t, partition, 0);
  const o = ix.offsets.get(partitionKey(t.topic, partition));
  const rule = startRule(ix.starts, t, partition);
  const group = startGroup(input.stream, rule);
  const where =
    rule === 'newPartition' && group !== undefined
      ? `it will start at the committed offset of group ${JSON.stringify(group)}, else earliest`
      : WHERE_IT_STARTS[rule];
  return { ...report(waiting, o, 'no-offsets', `not registered yet (${why}): ${where}`), status: 'new' };
}

/** Where a new partition starts (see starts.ts), or why it waits for a later run. */
function startOffsetFor(input: PlanInput, ix: PlanIndex, t: TopicPartitions, partition: number): Start {
  const { stream } = input;
  const k = partitionKey(t.topic, partition);
  const o = ix.offsets.get(k);
  if (!o) return { wait: 'no offsets this run' };
  const rule = startRule(ix.starts, t, partition);
  if (rule === 'newTopics') return newTopicStart(stream.newTopics, o, input.timestampOffsets?.get(k));
  const so = stream.startingOffsets;
  const group = startGroup(stream, rule);
  if (group !== undefined) {
    // A partition added to a known topic later falls back to earliest, as every later partition starts.
    const fallback = rule === 'startingOffsets' && typeof so === 'object' && 'fallback' in so ? so.fallback : 'earliest';
    return groupStart(group, input.groupOffsets?.get(k), o, fallback, stream.isolationLevel);
  }
  if (rule === 'newPartition' || so === 'earliest') return { offset: o.earliest };
  // The end when its offsets are first read: the start of a partition unreadable at the first run.
  if (so === 'latest') return { offset: o.latest };
  if ('timestampMs' in so) {
    const at = input.timestampOffsets?.get(k);
    return at === undefined ? { wait: 'no start offset by timestamp this run' } : { offset: at };
  }
  const explicit = 'offsets' in so ? so.offsets[t.topic]?.[String(partition)] : undefined;
  // A partition the map does not name starts at earliest; an offset past the end starts at the end.
  return { offset: explicit === undefined ? o.earliest : Math.min(explicit, o.latest) };
}

/** Classify known partitions: re-created, retired, unavailable, inactive, or active (a candidate to plan). */
function classifyKnown(input: PlanInput, ix: PlanIndex, draft: Draft): { candidates: PartitionState[]; recreated: ClosedIncarnation[] } {
  const candidates: PartitionState[] = [];
  const recreated: ClosedIncarnation[] = [];
  for (const p of input.known) {
    const k = partitionKey(p.topic, p.partition);
    const c = classifyKnownPartition(input, ix, p, k);
    for (const w of c.writes) {
      draft.writes.push(w);
      if (w.kind === 'close-incarnation') recreated.push(w.closed);
    }
    if (c.report) draft.reports.set(k, c.report);
    else candidates.push(p);
  }
  return { candidates, recreated };
}

/**
 * One known partition: the writes its class needs (close the incarnation, record the topic id,
 * retire) and, unless it is an active candidate, its report (nothing else is decided for it this run).
 */
function classifyKnownPartition(
  input: PlanInput,
  ix: PlanIndex,
  p: PartitionState,
  k: string,
): { writes: PlanWrite[]; report?: PartitionReport } {
  const topicParts = ix.discovered.get(p.topic);
  const listed = topicParts?.has(p.partition) === true;
  const subscribed = ix.matches(p.topic);
  const o = ix.offsets.get(k);
  const identity = listed && subscribed ? topicIdentity(input, p, ix.topicIds.get(p.topic), o, ix.openByKey.get(k) ?? [], ix.bounded) : {};
  const writes = identity.write ? [identity.write] : [];
  if (identity.report) return { writes, report: identity.report };
  if (p.status !== 'active') return { writes, report: report(p, o, 'inactive', p.reason) };
  if (listed) return { writes };
  if (subscribed && input.nowMs - p.firstSeenAtMs < MISSING_AFTER_REGISTRATION_GRACE_MS) {
    // Registered a moment ago from one broker's metadata: a broker that has not caught up with the
    // new topic yet answers as if it were gone. Retirement is final, so it waits for the grace.
    return {
      writes,
      report: report(
        p,
        undefined,
        'no-offsets',
        'missing from the metadata a moment after registration: retired only if still missing later',
      ),
    };
  }
  const why = !subscribed
    ? 'UNSUBSCRIBED: the topic no longer matches the stream configuration'
    : !topicParts
      ? 'TOPIC_DELETED: the topic no longer exists'
      : 'PARTITION_DELETED: the topic no longer has this partition';
  const reason = `${why} (committed ${p.committed}, planned up to ${p.nextFrom})`;
  writes.push({ kind: 'retire-partition', topic: p.topic, partition: p.partition, reason, nowMs: input.nowMs });
  return { writes, report: report(p, undefined, 'retired', reason) };
}

/** Check candidates: offset anomalies, in-flight ranges and the trigger rule decide which partitions get a range. */
function checkCandidates(
  input: PlanInput,
  ix: PlanIndex,
  candidates: PartitionState[],
  draft: Draft,
): { eligible: Eligible[]; checkCommitted: PartitionState[] } {
  const eligible: Eligible[] = [];
  const checkCommitted: PartitionState[] = [];
  for (const p of candidates) {
    const k = partitionKey(p.topic, p.partition);
    const c = checkCandidate(input, ix, p, k);
    draft.writes.push(...c.writes);
    if (c.report) draft.reports.set(k, c.report);
    if (c.checkCommitted) checkCommitted.push(c.checkCommitted);
    if (c.eligible) eligible.push(c.eligible);
  }
  return { eligible, checkCommitted };
}

type CandidateCheck = { writes: PlanWrite[]; report?: PartitionReport; checkCommitted?: PartitionState; eligible?: Eligible };

/** One active partition: what its offsets say about it, and whether it is due a range now. */
function checkCandidate(input: PlanInput, ix: PlanIndex, p0: PartitionState, k: string): CandidateCheck {
  const { stream, nowMs } = input;
  const o = ix.offsets.get(k);
  if (!o) return { writes: [], report: report(p0, undefined, 'no-offsets', 'no offsets for this partition in this run') };
  const stop = p0.stopOffset;
  if (stop !== undefined && p0.committed >= stop) return { writes: [], report: report(p0, o, 'finished') };
  const anomaly = offsetAnomaly(stream, p0, o, nowMs);
  if (anomaly && anomaly.skipTo === undefined) return { writes: [anomaly.write], report: anomaly.report };
  const p = anomaly?.skipTo !== undefined ? { ...p0, committed: anomaly.skipTo, nextFrom: anomaly.skipTo } : p0;
  // The data-loss report stands unless a later check says more.
  const base: CandidateCheck = { writes: anomaly ? [anomaly.write] : [], report: anomaly?.report };
  if (p.committed < p.nextFrom) {
    const open = ix.openByKey.get(k) ?? [];
    if (!open.some((r) => r.from === p.committed && sameIncarnation(r, p))) base.checkCommitted = p;
    if (!stream.split.orderInsensitive) return { ...base, report: report(p, o, 'in-flight') };
  }
  // A bounded partition plans nothing at or past its stop offset (Spark's endingOffsets).
  const end = stop === undefined ? o.latest : Math.min(o.latest, stop);
  const lag = end - p.nextFrom;
  if (lag <= 0) return { ...base, report: base.report ?? report(p, o, ix.known.has(k) ? 'idle' : 'registered') };
  const trig = shouldTrigger({
    lag,
    minOffsetsPerTrigger: stream.minOffsetsPerTrigger,
    maxTriggerDelayMs: stream.maxTriggerDelayMs,
    lastTriggerMs: p.lastPlannedAtMs,
    firstSeenMs: p.firstSeenAtMs,
    nowMs,
  });
  if (!trig.trigger) {
    return { ...base, report: report(p, o, 'waiting-for-min-offsets', `lag ${lag} < minOffsetsPerTrigger ${stream.minOffsetsPerTrigger}`) };
  }
  const bp = backpressure(stream, p, nowMs);
  const clampInput: PartitionClampInput = {
    key: k,
    from: p.nextFrom,
    latest: end,
    pidRatePerSec: bp?.ratePerSec,
    timeBudget: timeBudget(p.observedRecordsPerSec, stream.processor.timeoutMs, stream.processor.safetyFactor),
  };
  return {
    ...base,
    eligible: { p, input: clampInput, pidUpdate: bp ? { pid: bp.pid, backpressureRatePerSec: bp.ratePerSec } : undefined },
  };
}

/**
 * Offsets the cursor cannot continue from, for a partition not finished: a log that ends below the
 * cursor fails it; retention past the cursor (nothing in flight) fails it under failOnDataLoss, or
 * records the lost span and moves the cursor to `skipTo`.
 */
function offsetAnomaly(
  stream: StreamConfig,
  p: PartitionState,
  o: PartitionOffsets,
  nowMs: number,
): { write: PlanWrite; report: PartitionReport; skipTo?: number } | undefined {
  if (o.latest < p.nextFrom) {
    const reason = offsetRegressionReason(o.latest, p.nextFrom);
    return {
      write: { kind: 'fail-partition', topic: p.topic, partition: p.partition, reason, nowMs },
      report: report(p, o, 'failed', reason),
    };
  }
  const stop = p.stopOffset;
  const inFlight = p.committed < p.nextFrom;
  if (!(o.earliest > p.nextFrom && !inFlight && (stop === undefined || p.nextFrom < stop))) return undefined;
  // A bounded partition only lost what lies below its stop offset.
  const lostUntil = stop === undefined ? o.earliest : Math.min(o.earliest, stop);
  const span = `[${p.nextFrom}, ${lostUntil})`;
  if (stream.failOnDataLoss) {
    const reason = dataLossReason(span);
    return {
      write: { kind: 'fail-partition', topic: p.topic, partition: p.partition, reason, nowMs },
      report: report(p, o, 'failed', reason),
    };
  }
  const write: PlanWrite = {
    kind: 'record-data-loss',
    expectFrom: p.nextFrom,
    loss: {
      stream: stream.id,
      topic: p.topic,
      partition: p.partition,
      from: p.nextFrom,
      until: lostUntil,
      detectedAtMs: nowMs,
      reason: 'retention deleted offsets before they were processed',
    },
  };
  return { write, report: report({ ...p, committed: lostUntil, nextFrom: lostUntil }, o, 'data-loss', `lost ${span}`), skipTo: lostUntil };
}

/** The due partitions given a slot, in the order they got it, and the slots free for their ranges (undefined: no cap). */
type Slots = { granted: Eligible[]; free?: number };

/**
 * Slots: under a cap (the stream's maxConcurrency, or its share of the processor concurrency if
 * lower), a run plans at most `cap - open` ranges. The due partitions get the free slots in
 * `bySlotPriority` order (waiting longest first, then most lag); the others are reported waiting
 * and planned on a later run. Re-dispatches are not limited: their ranges are open, so counted.
 */
function grantSlots(input: PlanInput, ix: PlanIndex, candidates: PartitionState[], eligible: Eligible[], draft: Draft): Slots {
  const { stream, processorConcurrency } = input;
  const cap = openRangeCap(stream.maxConcurrency, processorConcurrency);
  if (cap === undefined) return { granted: eligible };
  const live = new Map(candidates.filter((p) => p.status === 'active').map((p) => [partitionKey(p.topic, p.partition), p]));
  const open = occupiedSlots(input.openRanges, live, { nowMs: input.nowMs, leaseMs: stream.processor.leaseMs });
  const free = Math.max(0, cap - open);
  const claims = eligible.map((e) => ({
    e,
    topic: e.p.topic,
    partition: e.p.partition,
    waitingSinceMs: e.p.lastPlannedAtMs ?? e.p.firstSeenAtMs,
    lag: e.input.latest - e.input.from,
  }));
  const ordered = bySlotPriority(claims);
  const why = waitingForConcurrencyNote(open, cap, capSource(stream.maxConcurrency, processorConcurrency));
  for (const { e } of ordered.slice(free)) {
    const k = e.input.key;
    const before = draft.reports.get(k)?.note;
    draft.reports.set(k, report(e.p, ix.offsets.get(k), 'waiting-for-concurrency', before ? `${before}; ${why}` : why));
  }
  return { granted: ordered.slice(0, free).map((c) => c.e), free };
}

/**
 * Clamp and split: how far each granted partition's next range reaches under the stream's limits,
 * cut into pieces if asked; under a cap, only the pieces that fit the free slots (`admitPieces`).
 */
function clampAndSplit(input: PlanInput, ix: PlanIndex, slots: Slots, draft: Draft): { newRanges: RangeState[]; recordsPlanned: number } {
  const { stream } = input;
  const eligible = slots.granted;
  const clamped = eligible.length
    ? clampRanges(
        eligible.map((e) => e.input),
        {
          intervalMs: stream.triggerIntervalMs,
          maxRatePerPartition: stream.maxRatePerPartition,
          minRatePerPartition: stream.minRatePerPartition,
          maxOffsetsPerTrigger: stream.maxOffsetsPerTrigger,
        },
      )
    : new Map<string, OffsetRange>();
  const splitting = stream.split.orderInsensitive;
  // Under a cap, pieces past the free slots could not be planned: minPartitions asks for no more.
  const minPartitions = stream.split.minPartitions && Math.min(stream.split.minPartitions, slots.free ?? Infinity);
  const parts =
    splitting && minPartitions
      ? partsForMinPartitions(new Map([...clamped].map(([k, r]) => [k, r.until - r.from])), minPartitions)
      : undefined;
  const split = eligible.map((e) => {
    const r = clamped.get(e.input.key);
    if (!r || r.until <= r.from) return [];
    return splitting && (stream.split.maxRangeSize || parts)
      ? splitRange(r, { maxRangeSize: stream.split.maxRangeSize, parts: parts?.get(e.input.key) })
      : [r];
  });
  const admitted = slots.free === undefined ? split : admitPieces(split, slots.free);
  const newRanges: RangeState[] = [];
  let recordsPlanned = 0;
  for (const [i, e] of eligible.entries()) {
    const k = e.input.key;
    const pieces = admitted[i] ?? [];
    if (!pieces.length) continue;
    for (const piece of pieces) {
      const range = newRange(input, e.p, piece, ix.topicIds.get(e.p.topic));
      newRanges.push(range);
      draft.writes.push({ kind: 'plan-range', range, ...(e.pidUpdate ? { partitionUpdate: e.pidUpdate } : {}) });
      recordsPlanned += piece.until - piece.from;
    }
    const rep = report({ ...e.p }, ix.offsets.get(k), 'planned', draft.reports.get(k)?.note);
    rep.planned = pieces.map((x) => ({ from: x.from, until: x.until }));
    draft.reports.set(k, rep);
  }
  return { newRanges, recordsPlanned };
}

function newRange({ stream, epoch, nowMs }: PlanInput, p: PartitionState, piece: OffsetRange, topicId: string | undefined): RangeState {
  return {
    stream: stream.id,
    topic: p.topic,
    partition: p.partition,
    from: piece.from,
    until: piece.until,
    status: 'planned',
    epoch,
    plannedAtMs: nowMs,
    // Persisted as sent (one write per range); run.ts clears it for a range the dispatcher refuses.
    dispatchedAtMs: nowMs,
    dispatches: 1,
    attempts: 0,
    progress: piece.from,
    ...(p.incarnation ? { incarnation: p.incarnation } : {}),
    ...(topicId !== undefined ? { topicId } : {}),
    ...(p.rewinds ? { rewinds: p.rewinds } : {}),
    ...(p.shard !== undefined ? { shard: p.shard } : {}),
  };
}

/** Redispatch and park: open ranges never dispatched, unconfirmed, expired or failed are sent again, or parked at the attempt limit. */
function redispatchOpen(input: PlanInput, candidates: PartitionState[]): Pick<PlanDecision, 'redispatch' | 'parks'> {
  const { stream } = input;
  const redispatch: PlanDecision['redispatch'] = [];
  const parks: PlanWrite[] = [];
  const activeKeys = new Map(candidates.filter((p) => p.status === 'active').map((p) => [partitionKey(p.topic, p.partition), p]));
  for (const r of input.openRanges) {
    const owner = activeKeys.get(partitionKey(r.topic, r.partition));
    // A closed incarnation's range (beyond what its close removed) is never sent again.
    if (!owner || !sameIncarnation(r, owner)) continue;
    const reason = redispatchReason(r, input);
    if (!reason) continue;
    const exhausted = reason === 'not-started' ? r.dispatches > stream.maxAttempts : r.attempts >= stream.maxAttempts;
    if (exhausted && reason !== 'never-dispatched' && reason !== 'dispatch-unconfirmed') {
      const error =
        reason === 'not-started'
          ? `no processor took the range after ${r.dispatches} dispatches`
          : attemptsExhaustedError(r.attempts, stream.maxAttempts, r.lastError);
      parks.push({ kind: 'park-range', range: r, expect: { status: r.status, attempts: r.attempts }, error });
      continue;
    }
    redispatch.push({ range: r, reason });
  }
  return { redispatch, parks };
}

/** The reports by topic and partition; a partition registered this run reads as new, with where it starts when that is worth saying. */
function sortedReports({ reports, startNotes }: Draft, registrations: PartitionState[]): PartitionReport[] {
  const registered = new Set(registrations.map((p) => partitionKey(p.topic, p.partition)));
  const sorted = [...reports.values()].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
  for (const rep of sorted) {
    const k = partitionKey(rep.topic, rep.partition);
    if (!registered.has(k)) continue;
    rep.status = 'new';
    if (rep.action === 'idle') rep.action = 'registered';
    const start = startNotes.get(k);
    if (start) rep.note = rep.note ? `${start}; ${rep.note}` : start;
  }
  return sorted;
}

/** A bounded stream is finished when every partition is retired or committed up to its stop offset. */
function boundedFinished(known: PartitionState[], writes: PlanWrite[]): boolean {
  // A partition retired or failed in this very run is judged next run.
  const endedNow = new Set(
    writes.flatMap((w) => (w.kind === 'retire-partition' || w.kind === 'fail-partition' ? [partitionKey(w.topic, w.partition)] : [])),
  );
  return known.every((p) => {
    if (p.status === 'retired') return true;
    if (p.status !== 'active' || p.stopOffset === undefined) return false;
    if (endedNow.has(partitionKey(p.topic, p.partition))) return false;
    return p.committed >= p.stopOffset;
  });
}

/**
 * Why a known partition of a topic that exists now reads a re-created topic (a new log under the
 * same name whose offsets restart at 0), or undefined. By topic id where both sides have one;
 * otherwise by the offsets falling below the planning cursor, or by the topic coming back after it
 * was retired as deleted. The same id with fewer offsets is a truncated log, not a new topic.
 */
export function recreationReason(p: PartitionState, idNow: string | undefined, o: { latest: number } | undefined): string | undefined {
  if (topicIdChanged(p.topicId, idNow)) return `topic id changed from ${p.topicId} to ${idNow}`;
  if (idNow !== undefined && p.topicId !== undefined) return undefined; // the same id: a truncated log at most
  const how = idNow === undefined ? 'no topic ids from this broker' : 'no topic id recorded for the old topic';
  if (p.status === 'retired') {
    if (p.reason?.startsWith('UNSUBSCRIBED')) return undefined; // subscribed again: the same log, as far as can be told
    return `the topic exists again after it was retired (${p.reason ?? 'retired'}; ${how})`;
  }
  const regressed = o !== undefined && o.latest < p.nextFrom;
  if (regressed && (p.status === 'active' || p.reason?.startsWith('OFFSET_REGRESSION'))) {
    return regressionRecreationReason(o.latest, p.nextFrom, how);
  }
  return undefined;
}

/**
 * The topic identity check of a known partition whose topic exists: the write that closes its
 * incarnation (with the partition's report: nothing else is decided for it this run) when the topic
 * was re-created, or the write that records the topic id a ledger written before ids lacks.
 */
function topicIdentity(
  input: PlanInput,
  p: PartitionState,
  idNow: string | undefined,
  o: PartitionOffsets | undefined,
  open: RangeState[],
  bounded: boolean,
): { write?: PlanWrite; report?: PartitionReport } {
  const why = recreationReason(p, idNow, o);
  if (why) return closeIncarnation(input, p, idNow, o, why, open, bounded);
  if (idNow !== undefined && p.topicId === undefined && p.status === 'active') {
    return { write: { kind: 'record-topic-id', topic: p.topic, partition: p.partition, topicId: idNow, incarnation: p.incarnation } };
  }
  return {};
}

/**
 * The write that closes `p`'s incarnation and registers the new one at the stream's
 * `recreatedTopicOffsets`, with the record of what the old one had committed and planned. A bounded
 * stream (replay) only retires the partition: its stop offsets name the old log.
 */
function closeIncarnation(
  input: PlanInput,
  p: PartitionState,
  idNow: string | undefined,
  o: PartitionOffsets | undefined,
  why: string,
  open: RangeState[],
  bounded: boolean,
): { write?: PlanWrite; report: PartitionReport } {
  const { stream, nowMs } = input;
  const reason = `TOPIC_RECREATED: ${why} (committed ${p.committed}, planned up to ${p.nextFrom})`;
  if (bounded) {
    if (p.status !== 'active') return { report: report(p, o, 'inactive', p.reason) };
    return {
      write: { kind: 'retire-partition', topic: p.topic, partition: p.partition, reason, nowMs },
      report: report(p, o, 'retired', reason),
    };
  }
  if (!o) return { report: report(p, undefined, 'no-offsets', `${reason}; no offsets for the new topic this run`) };
  const start = stream.recreatedTopicOffsets === 'latest' ? o.latest : o.earliest;
  const incarnation = p.incarnation ?? 0;
  const own = open.filter((r) => sameIncarnation(r, p)).slice(0, CLOSE_MAX_OPEN_RANGES);
  const closed: ClosedIncarnation = {
    stream: stream.id,
    topic: p.topic,
    partition: p.partition,
    incarnation,
    ...(p.topicId !== undefined ? { topicId: p.topicId } : {}),
    ...(idNow !== undefined ? { newTopicId: idNow } : {}),
    status: p.status,
    startOffset: p.startOffset,
    committed: p.committed,
    nextFrom: p.nextFrom,
    openRanges: own.map((r) => ({ from: r.from, until: r.until, status: r.status, progress: r.progress })),
    newStartOffset: start,
    detectedAtMs: nowMs,
    reason,
  };
  const next: PartitionState = {
    stream: stream.id,
    topic: p.topic,
    partition: p.partition,
    status: 'active',
    startOffset: start,
    committed: start,
    nextFrom: start,
    firstSeenAtMs: nowMs,
    incarnation: incarnation + 1,
    ...(idNow !== undefined ? { topicId: idNow } : {}),
    ...(p.observedRecordsPerSec !== undefined ? { observedRecordsPerSec: p.observedRecordsPerSec } : {}),
  };
  const note = `${reason}; incarnation ${incarnation + 1} starts at ${start}`;
  return { write: { kind: 'close-incarnation', closed, next }, report: report(next, o, 'recreated', note) };
}

/**
 * Why an open range is due to be sent again, or undefined. A range whose processor holds a live
 * lease never is. A failed or expired range is sent again once: until a processor takes it (a new
 * attempt), that dispatch is waited for like a new range's, for the lease time; otherwise a planner
 * ticking faster than processors start would send it on every run.
 */
export function redispatchReason(
  r: RangeState,
  { stream, nowMs, epoch, confirmedEpoch }: Pick<PlanInput, 'stream' | 'nowMs' | 'epoch' | 'confirmedEpoch'>,
): RedispatchReason | undefined {
  const notStarted = r.dispatchedAtMs === undefined || nowMs - r.dispatchedAtMs > stream.processor.leaseMs;
  const sentAgain = r.redispatchedAtAttempts === r.attempts && !notStarted;
  switch (r.status) {
    case 'planned':
      if (r.dispatchedAtMs === undefined) return 'never-dispatched';
      // Planned by a run that ended before recording its dispatches: it may never have been sent.
      if (r.epoch > (confirmedEpoch ?? 0) && r.epoch < epoch) return 'dispatch-unconfirmed';
      return notStarted ? 'not-started' : undefined;
    case 'leased':
      return r.leaseExpiresAtMs !== undefined && r.leaseExpiresAtMs < nowMs && !sentAgain ? 'lease-expired' : undefined;
    case 'failed':
      return sentAgain ? undefined : 'failed';
    default:
      return undefined;
  }
}

/** Spark's PID estimator, per partition: each partition is its own pipeline of ranges here. */
function backpressure(
  stream: StreamConfig,
  p: PartitionState,
  nowMs: number,
): { ratePerSec?: number; pid: NonNullable<PartitionState['pid']> } | undefined {
  const bp = stream.backpressure;
  if (!bp.enabled) return undefined;
  let pid = p.pid ?? initialPidState(nowMs);
  let ratePerSec = p.backpressureRatePerSec ?? bp.initialRatePerSec;
  const last = p.lastRange;
  if (last && last.finishedAtMs > pid.latestTimeMs) {
    const res = computePidRate(
      pid,
      { ...bp, batchIntervalMs: stream.triggerIntervalMs },
      {
        timeMs: last.finishedAtMs,
        elements: last.records,
        processingDelayMs: last.processingMs,
        schedulingDelayMs: last.schedulingDelayMs,
      },
    );
    pid = res.state;
    if (res.ratePerSec !== undefined) ratePerSec = res.ratePerSec;
  }
  return { ratePerSec, pid };
}

function report(p: PartitionState, o: PartitionOffsets | undefined, action: PartitionReport['action'], note?: string): PartitionReport {
  // A bounded partition's lag counts only what lies below its stop offset.
  const end = o && (p.stopOffset === undefined ? o.latest : Math.min(o.latest, p.stopOffset));
  return {
    topic: p.topic,
    partition: p.partition,
    status: p.status,
    earliest: o?.earliest,
    latest: o?.latest,
    committed: p.committed,
    nextFrom: p.nextFrom,
    lag: end !== undefined ? Math.max(0, end - p.committed) : 0,
    planned: [],
    action,
    note,
    ...(p.stopOffset !== undefined ? { stopOffset: p.stopOffset } : {}),
  };
}
