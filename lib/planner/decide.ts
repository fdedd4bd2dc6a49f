/**
 * The planner's decisions for one stream and one run, as a pure function of what the run read
 * (ledger state, Kafka metadata and offsets) and `nowMs`. run.ts does the I/O around it.
 */
import type { StreamConfig } from '../config/schema';
import { topicMatcher } from '../config/topics';
import { clampRanges, computePidRate, initialPidState, partsForMinPartitions, shouldTrigger, splitRange, timeBudget } from '../offsets';
import type { PartitionClampInput } from '../offsets';
import type { PartitionOffsets, TopicPartitions, UnavailableCode } from '../ports/kafka-metadata';
import { CLOSE_MAX_OPEN_RANGES, type ClosedIncarnation, type PartitionState, type PlanWrite, type RangeState } from '../ports/ledger';
import { partitionKey } from '../ranges';

export type PlanInput = {
  stream: StreamConfig;
  nowMs: number;
  epoch: number;
  /** True until the stream's first partitions are registered (startingOffsets applies only then). */
  initial: boolean;
  known: PartitionState[];
  discovered: TopicPartitions[];
  offsets: PartitionOffsets[];
  /** Start offsets looked up by timestamp for new partitions (startingOffsets.timestampMs). */
  timestampOffsets?: Map<string, number>;
  openRanges: RangeState[];
  /** The last epoch that confirmed its dispatches (`StreamMeta.confirmedEpoch`). */
  confirmedEpoch?: number;
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
  /** Bounded streams (replays): where this partition stops. */
  stopOffset?: number;
};

export type RedispatchReason = 'never-dispatched' | 'dispatch-unconfirmed' | 'not-started' | 'lease-expired' | 'failed';

export type PlanDecision = {
  /** Partitions to persist before anything is planned for them. */
  registrations: PartitionState[];
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

function startOffsetFor(input: PlanInput, tp: { topic: string; partition: number }, o: PartitionOffsets): number {
  if (!input.initial) return o.earliest; // found mid-run: earliest, or data written before discovery is lost
  const so = input.stream.startingOffsets;
  if (so === 'earliest') return o.earliest;
  if (so === 'latest') return o.latest;
  if ('timestampMs' in so) return input.timestampOffsets?.get(partitionKey(tp.topic, tp.partition)) ?? o.latest;
  const explicit = so.offsets[tp.topic]?.[String(tp.partition)];
  // A partition the map does not name starts at earliest; an offset past the end starts at the end.
  if (explicit === undefined) return o.earliest;
  return Math.min(explicit, o.latest);
}

/**
 * A partition missing from the metadata within this long of its registration is not retired yet
 * (metadata of a topic created a moment ago reaches brokers one by one; see docs/architecture.md).
 */
export const MISSING_AFTER_REGISTRATION_GRACE_MS = 5_000;

/** The pure planning step: registrations, retirements, data loss, clamped ranges and re-dispatches. */
export function decidePlan(input: PlanInput): PlanDecision {
  const { stream, nowMs, epoch } = input;
  const matches = topicMatcher(stream);
  const offsets = new Map(input.offsets.map((o) => [partitionKey(o.topic, o.partition), o]));
  const discoveredTopics = new Map(input.discovered.map((t) => [t.topic, new Set(t.partitions)]));
  const known = new Map(input.known.map((p) => [partitionKey(p.topic, p.partition), p]));
  const openByKey = new Map<string, RangeState[]>();
  for (const r of input.openRanges) {
    const k = partitionKey(r.topic, r.partition);
    openByKey.set(k, [...(openByKey.get(k) ?? []), r]);
  }

  const registrations: PartitionState[] = [];
  const writes: PlanWrite[] = [];
  const reports = new Map<string, PartitionReport>();
  const candidates: PartitionState[] = [];
  // A bounded stream (replay) reads exactly the partitions and offsets it was created with.
  const bounded = input.known.some((p) => p.stopOffset !== undefined);

  // 1. Discovery: new partitions are registered with their start offset.
  for (const t of input.discovered) {
    for (const partition of t.partitions) {
      const k = partitionKey(t.topic, partition);
      if (known.has(k) || bounded) continue;
      const o = offsets.get(k);
      if (!o) {
        // No offsets this run (leader moving, topic just deleted): registered on a later run.
        const pending = { stream: stream.id, topic: t.topic, partition, status: 'active' as const, startOffset: 0, committed: 0, nextFrom: 0, firstSeenAtMs: nowMs };
        reports.set(k, { ...report(pending, undefined, 'no-offsets', 'not registered yet: no offsets this run'), status: 'new' });
        continue;
      }
      const start = startOffsetFor(input, { topic: t.topic, partition }, o);
      const state: PartitionState = {
        stream: stream.id,
        topic: t.topic,
        partition,
        status: 'active',
        startOffset: start,
        committed: start,
        nextFrom: start,
        firstSeenAtMs: nowMs,
        ...(t.topicId !== undefined ? { topicId: t.topicId } : {}),
      };
      registrations.push(state);
      candidates.push(state);
    }
  }

  // 2. Known partitions: close re-created topics' incarnations, retire what vanished, keep the rest as candidates.
  const recreated: ClosedIncarnation[] = [];
  const topicIds = new Map(input.discovered.map((t) => [t.topic, t.topicId]));
  for (const p of input.known) {
    const k = partitionKey(p.topic, p.partition);
    const idNow = topicIds.get(p.topic);
    const exists = discoveredTopics.get(p.topic)?.has(p.partition) && matches(p.topic);
    const identity = exists ? topicIdentity(input, p, idNow, offsets.get(k), openByKey.get(k) ?? [], bounded) : {};
    if (identity.write) writes.push(identity.write);
    if (identity.write?.kind === 'close-incarnation') recreated.push(identity.write.closed);
    if (identity.report) {
      reports.set(k, identity.report);
      continue;
    }
    if (p.status !== 'active') {
      reports.set(k, report(p, offsets.get(k), 'inactive', p.reason));
      continue;
    }
    const topicParts = discoveredTopics.get(p.topic);
    if ((!topicParts || !topicParts.has(p.partition)) && matches(p.topic) && nowMs - p.firstSeenAtMs < MISSING_AFTER_REGISTRATION_GRACE_MS) {
      // Registered a moment ago from one broker's metadata: a broker that has not caught up with the
      // new topic yet answers as if it were gone. Retirement is final, so it waits for the grace.
      reports.set(k, report(p, undefined, 'no-offsets', 'missing from the metadata a moment after registration: retired only if still missing later'));
      continue;
    }
    if (!topicParts || !topicParts.has(p.partition)) {
      const why = !matches(p.topic)
        ? 'UNSUBSCRIBED: the topic no longer matches the stream configuration'
        : !topicParts
          ? 'TOPIC_DELETED: the topic no longer exists'
          : 'PARTITION_DELETED: the topic no longer has this partition';
      const reason = `${why} (committed ${p.committed}, planned up to ${p.nextFrom})`;
      writes.push({ kind: 'retire-partition', topic: p.topic, partition: p.partition, reason, nowMs });
      reports.set(k, report(p, undefined, 'retired', reason));
      continue;
    }
    candidates.push(p);
  }

  // 3. Per active partition: offset anomalies, in-flight check, trigger rule.
  const eligible: Array<{ p: PartitionState; input: PartitionClampInput; pidUpdate?: Pick<PartitionState, 'pid' | 'backpressureRatePerSec'> }> = [];
  const checkCommitted: PartitionState[] = [];
  const splitting = stream.split.orderInsensitive;
  for (const p0 of candidates) {
    const k = partitionKey(p0.topic, p0.partition);
    const o = offsets.get(k);
    const isNew = !known.has(k);
    if (!o) {
      reports.set(k, report(p0, undefined, 'no-offsets', 'no offsets for this partition in this run'));
      continue;
    }
    let p = p0;
    const inFlight = p.committed < p.nextFrom;
    const stop = p.stopOffset;
    if (stop !== undefined && p.committed >= stop) {
      reports.set(k, report(p, o, 'finished'));
      continue;
    }
    if (o.latest < p.nextFrom) {
      const reason = `OFFSET_REGRESSION: latest offset ${o.latest} is below planned offset ${p.nextFrom} with the same topic id (the log was truncated, e.g. by an unclean leader election); rewind the stream to continue`;
      writes.push({ kind: 'fail-partition', topic: p.topic, partition: p.partition, reason, nowMs });
      reports.set(k, report(p, o, 'failed', reason));
      continue;
    }
    if (o.earliest > p.nextFrom && !inFlight && (stop === undefined || p.nextFrom < stop)) {
      // A bounded partition only lost what lies below its stop offset.
      const lostUntil = stop === undefined ? o.earliest : Math.min(o.earliest, stop);
      const span = `[${p.nextFrom}, ${lostUntil})`;
      if (stream.failOnDataLoss) {
        const reason = `DATA_LOSS: offsets ${span} were deleted by retention before they were processed (failOnDataLoss=true)`;
        writes.push({ kind: 'fail-partition', topic: p.topic, partition: p.partition, reason, nowMs });
        reports.set(k, report(p, o, 'failed', reason));
        continue;
      }
      writes.push({
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
      });
      p = { ...p, committed: lostUntil, nextFrom: lostUntil };
      reports.set(k, report(p, o, 'data-loss', `lost ${span}`));
    }
    if (inFlight) {
      const open = openByKey.get(k) ?? [];
      if (!open.some((r) => r.from === p.committed && sameIncarnation(r, p))) checkCommitted.push(p);
      if (!splitting) {
        reports.set(k, report(p, o, 'in-flight'));
        continue;
      }
    }
    // A bounded partition plans nothing at or past its stop offset (Spark's endingOffsets).
    const end = stop === undefined ? o.latest : Math.min(o.latest, stop);
    const lag = end - p.nextFrom;
    if (lag <= 0) {
      if (!reports.has(k)) reports.set(k, report(p, o, isNew ? 'registered' : 'idle'));
      continue;
    }
    const trig = shouldTrigger({
      lag,
      minOffsetsPerTrigger: stream.minOffsetsPerTrigger,
      maxTriggerDelayMs: stream.maxTriggerDelayMs,
      lastTriggerMs: p.lastPlannedAtMs,
      firstSeenMs: p.firstSeenAtMs,
      nowMs,
    });
    if (!trig.trigger) {
      reports.set(k, report(p, o, 'waiting-for-min-offsets', `lag ${lag} < minOffsetsPerTrigger ${stream.minOffsetsPerTrigger}`));
      continue;
    }
    const bp = backpressure(stream, p, nowMs);
    eligible.push({
      p,
      input: {
        key: k,
        from: p.nextFrom,
        latest: end,
        pidRatePerSec: bp?.ratePerSec,
        timeBudget: timeBudget(p.observedRecordsPerSec, stream.processor.timeoutMs, stream.processor.safetyFactor),
      },
      pidUpdate: bp ? { pid: bp.pid, backpressureRatePerSec: bp.ratePerSec } : undefined,
    });
  }

  // 4. Clamp across the stream, then optionally split.
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
    : new Map<string, { from: number; until: number }>();
  const parts =
    splitting && stream.split.minPartitions
      ? partsForMinPartitions(new Map([...clamped].map(([k, r]) => [k, r.until - r.from])), stream.split.minPartitions)
      : undefined;
  const newRanges: RangeState[] = [];
  let recordsPlanned = 0;
  for (const e of eligible) {
    const k = e.input.key;
    const r = clamped.get(k);
    if (!r || r.until <= r.from) continue;
    const pieces =
      splitting && (stream.split.maxRangeSize || parts)
        ? splitRange(r, { maxRangeSize: stream.split.maxRangeSize, parts: parts?.get(k) })
        : [r];
    for (const piece of pieces) {
      const range: RangeState = {
        stream: stream.id,
        topic: e.p.topic,
        partition: e.p.partition,
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
        ...(e.p.incarnation ? { incarnation: e.p.incarnation } : {}),
        ...(topicIds.get(e.p.topic) !== undefined ? { topicId: topicIds.get(e.p.topic) } : {}),
      };
      newRanges.push(range);
      writes.push({
        kind: 'plan-range',
        range,
        partitionUpdate: { lastPlannedAtMs: nowMs, ...(e.pidUpdate ?? {}) },
      });
    }
    recordsPlanned += r.until - r.from;
    const prev = reports.get(k);
    const rep = report({ ...e.p }, offsets.get(k), 'planned', prev?.note);
    rep.planned = pieces.map((x) => ({ from: x.from, until: x.until }));
    reports.set(k, rep);
  }

  // 5. Open ranges: dispatch again what was never dispatched, expired or failed; park at the limit.
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
          : `gave up after ${r.attempts} attempts (maxAttempts ${stream.maxAttempts}): ${r.lastError ?? 'lease expired'}`;
      parks.push({ kind: 'park-range', range: r, expect: { status: r.status, attempts: r.attempts }, error });
      continue;
    }
    redispatch.push({ range: r, reason });
  }

  const partitionsReport = [...reports.values()].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
  for (const rep of partitionsReport) {
    if (registrations.some((x) => x.topic === rep.topic && x.partition === rep.partition)) {
      rep.status = 'new';
      if (rep.action === 'idle') rep.action = 'registered';
    }
  }
  const finished =
    bounded &&
    input.known.every((p) => {
      if (p.status === 'retired') return true;
      if (p.status !== 'active' || p.stopOffset === undefined) return false;
      const k = partitionKey(p.topic, p.partition);
      // A partition retired or failed in this very run is judged next run.
      if (writes.some((w) => (w.kind === 'retire-partition' || w.kind === 'fail-partition') && partitionKey(w.topic, w.partition) === k)) return false;
      return p.committed >= p.stopOffset;
    });
  const noTopicIds = input.discovered.length > 0 && input.discovered.every((t) => t.topicId === undefined);
  return {
    registrations,
    writes,
    newRanges,
    redispatch,
    parks,
    checkCommitted,
    partitions: partitionsReport,
    recordsPlanned,
    finished,
    recreated,
    noTopicIds,
  };
}

const sameIncarnation = (a: { incarnation?: number }, b: { incarnation?: number }): boolean => (a.incarnation ?? 0) === (b.incarnation ?? 0);

/**
 * Why a known partition of a topic that exists now reads a re-created topic (a new log under the
 * same name whose offsets restart at 0), or undefined. By topic id where both sides have one;
 * otherwise by the offsets falling below the planning cursor, or by the topic coming back after it
 * was retired as deleted. The same id with fewer offsets is a truncated log, not a new topic.
 */
export function recreationReason(p: PartitionState, idNow: string | undefined, o: { latest: number } | undefined): string | undefined {
  const idsKnown = idNow !== undefined && p.topicId !== undefined;
  if (idsKnown && idNow !== p.topicId) return `topic id changed from ${p.topicId} to ${idNow}`;
  if (idsKnown) return undefined;
  const how = idNow === undefined ? 'no topic ids from this broker' : 'no topic id recorded for the old topic';
  if (p.status === 'retired') {
    if (p.reason?.startsWith('UNSUBSCRIBED')) return undefined; // subscribed again: the same log, as far as can be told
    return `the topic exists again after it was retired (${p.reason ?? 'retired'}; ${how})`;
  }
  const regressed = o !== undefined && o.latest < p.nextFrom;
  if (regressed && (p.status === 'active' || p.reason?.startsWith('OFFSET_REGRESSION'))) {
    return `latest offset ${o.latest} is below planned offset ${p.nextFrom} (${how}: detected by offset regression)`;
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
    return { write: { kind: 'retire-partition', topic: p.topic, partition: p.partition, reason, nowMs }, report: report(p, o, 'retired', reason) };
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

function redispatchReason(r: RangeState, { stream, nowMs, epoch, confirmedEpoch }: PlanInput): RedispatchReason | undefined {
  switch (r.status) {
    case 'planned':
      if (r.dispatchedAtMs === undefined) return 'never-dispatched';
      // Planned by a run that ended before recording its dispatches: it may never have been sent.
      if (r.epoch > (confirmedEpoch ?? 0) && r.epoch < epoch) return 'dispatch-unconfirmed';
      return nowMs - r.dispatchedAtMs > stream.processor.leaseMs ? 'not-started' : undefined;
    case 'leased':
      return r.leaseExpiresAtMs !== undefined && r.leaseExpiresAtMs < nowMs ? 'lease-expired' : undefined;
    case 'failed':
      return 'failed';
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

