/**
 * In-memory Ledger for fast unit tests of planner logic. Same conditional semantics as the DynamoDB
 * adapter (the shared contract test runs against both), with none of its batching.
 */
import { DYNAMODB_LIMITS } from './codec.dynamodb';
import { CommitTooLargeError, fitsOneCommit } from '../ports/commit-limits';
import { CLOSE_MAX_OPEN_RANGES } from '../ports/ledger';
import { leaseRefusal } from '../ports/ledger-rules/lease';
import { isMarkableWrite } from '../ports/sink-write';
import { mayTakeLoop, maySucceed, releasedLoop, takenLoop, type LoopRenewal, type LoopTake } from '../ports/planner-loop';
import { ValidationError } from '../errors';
import type { LedgerLimits } from '../ports/commit-limits';
import type { LeaseOutcome, ProcessorWriteOutcome, Ledger, PlannerLease, PlanWrite, RewindOutcome, WriteOutcome } from '../ports/ledger';
import type {
  ClosedIncarnation,
  DataLossEntry,
  DeadLetter,
  LeasedRange,
  PartitionState,
  RangeState,
  StreamMeta,
} from '../ports/ledger-state';
import type { SinkMark, SinkWrite } from '../ports/sink-write';

type StreamStore = {
  meta?: StreamMeta;
  partitions: Map<string, PartitionState>;
  ranges: Map<string, RangeState>;
  losses: DataLossEntry[];
  deadLetters: DeadLetter[];
  closed: ClosedIncarnation[];
  /** Sink writes as committed, in order (the fake does not evaluate update expressions). */
  sinkWrites: SinkWrite[];
};

const pKey = (topic: string, partition: number): string => `${topic}/${partition}`;
const rKey = (r: { topic: string; partition: number; from: number; incarnation?: number }): string =>
  r.incarnation ? `${r.topic}/${r.partition}/i${r.incarnation}/${r.from}` : `${r.topic}/${r.partition}/${r.from}`;
/** Same incarnation (absent = 0). */
const sameInc = (a: { incarnation?: number }, b: { incarnation?: number }): boolean => (a.incarnation ?? 0) === (b.incarnation ?? 0);
const clone = <T>(v: T): T => structuredClone(v);
/** A mark's identity, as the DynamoDB adapter names its attribute. */
const markName = (m: SinkMark): string => `${m.stream}:${m.topic}:${m.partition}#${m.incarnation ?? 0}@${m.rewinds ?? 0}`;

/** Applies one write to a stream's state; returns false when its condition does not hold. */
function applyOne(s: StreamStore, w: PlanWrite): boolean {
  switch (w.kind) {
    case 'register-partition': {
      const k = pKey(w.partition.topic, w.partition.partition);
      if (s.partitions.has(k)) return false;
      s.partitions.set(k, clone(w.partition));
      return true;
    }
    case 'plan-range': {
      const p = s.partitions.get(pKey(w.range.topic, w.range.partition));
      const k = rKey(w.range);
      if (!p || p.status !== 'active' || p.nextFrom !== w.range.from || !sameInc(p, w.range) || s.ranges.has(k)) return false;
      s.ranges.set(k, clone(w.range));
      p.nextFrom = w.range.until;
      p.lastPlannedAtMs = w.partitionUpdate.lastPlannedAtMs;
      if (w.partitionUpdate.pid) p.pid = clone(w.partitionUpdate.pid);
      if (w.partitionUpdate.backpressureRatePerSec !== undefined) p.backpressureRatePerSec = w.partitionUpdate.backpressureRatePerSec;
      return true;
    }
    case 'mark-dispatched': {
      const r = s.ranges.get(rKey(w.range));
      if (!r || r.status === 'done' || r.status === 'parked' || r.dispatches !== w.expect.dispatches) return false;
      r.dispatchedAtMs = w.nowMs;
      r.dispatches += 1;
      if (w.attempts !== undefined) r.redispatchedAtAttempts = w.attempts;
      return true;
    }
    case 'unmark-dispatch': {
      const r = s.ranges.get(rKey(w.range));
      if (!r || r.status !== 'planned' || r.dispatches !== w.expect.dispatches) return false;
      delete r.dispatchedAtMs;
      r.dispatches -= 1;
      return true;
    }
    case 'park-range': {
      const r = s.ranges.get(rKey(w.range));
      if (!r || r.status !== w.expect.status || r.attempts !== w.expect.attempts) return false;
      r.status = 'parked';
      r.lastError = w.error;
      return true;
    }
    case 'retire-partition':
    case 'fail-partition': {
      const p = s.partitions.get(pKey(w.topic, w.partition));
      if (!p || p.status !== 'active') return false;
      p.status = w.kind === 'retire-partition' ? 'retired' : 'failed';
      p.reason = w.reason;
      return true;
    }
    case 'record-data-loss': {
      const p = s.partitions.get(pKey(w.loss.topic, w.loss.partition));
      if (!p || p.status !== 'active' || p.nextFrom !== w.expectFrom || p.committed !== w.expectFrom) return false;
      if (
        s.losses.some((l) => l.topic === w.loss.topic && l.partition === w.loss.partition && l.from === w.loss.from && sameInc(l, w.loss))
      ) {
        return false;
      }
      s.losses.push(clone(w.loss));
      p.nextFrom = w.loss.until;
      p.committed = w.loss.until;
      return true;
    }
    case 'advance-committed': {
      const p = s.partitions.get(pKey(w.topic, w.partition));
      if (!p || p.committed !== w.expect || w.to < w.expect || w.to > p.nextFrom) return false;
      p.committed = w.to;
      return true;
    }
    case 'close-incarnation':
      return applyClose(s, w);
    case 'record-topic-id': {
      const p = s.partitions.get(pKey(w.topic, w.partition));
      if (!p || p.topicId !== undefined || !sameInc(p, w)) return false;
      p.topicId = w.topicId;
      return true;
    }
  }
}

/** Closes a partition incarnation: conditional on everything read of it, all or nothing. */
function applyClose(s: StreamStore, w: Extract<PlanWrite, { kind: 'close-incarnation' }>): boolean {
  const c = w.closed;
  const p = s.partitions.get(pKey(c.topic, c.partition));
  if (c.openRanges.length > CLOSE_MAX_OPEN_RANGES) throw new Error(`close-incarnation names ${c.openRanges.length} open ranges`);
  if (!p || p.status !== c.status || p.committed !== c.committed || p.nextFrom !== c.nextFrom) return false;
  if ((p.incarnation ?? 0) !== c.incarnation || p.topicId !== c.topicId) return false;
  if (s.closed.some((x) => x.topic === c.topic && x.partition === c.partition && x.incarnation === c.incarnation)) return false;
  s.closed.push(clone(c));
  for (const r of c.openRanges) s.ranges.delete(rKey({ topic: c.topic, partition: c.partition, from: r.from, incarnation: c.incarnation }));
  s.partitions.set(pKey(c.topic, c.partition), clone(w.next));
  return true;
}

/**
 * Creates an empty in-memory ledger. `store(stream)` exposes the raw store for assertions and
 * `requestCount()` the calls made (not part of the port: a test's request budget). It enforces
 * the limits of the store it stands in for (DynamoDB's by default), so unit tests see chunks split.
 */
export function createMemoryLedger(
  opts: { limits?: LedgerLimits } = {},
): Ledger & { store(stream: string): StreamStore; requestCount(): number } {
  const limits = opts.limits ?? DYNAMODB_LIMITS;
  const streams = new Map<string, StreamStore>();
  let requests = 0;
  /** Applied-offset marks per sink item (`table|key`), by mark name. */
  const marks = new Map<string, Map<string, number>>();
  const store = (stream: string): StreamStore => {
    let s = streams.get(stream);
    if (!s) {
      s = { partitions: new Map(), ranges: new Map(), losses: [], deadLetters: [], closed: [], sinkWrites: [] };
      streams.set(stream, s);
    }
    return s;
  };
  const fencedOut = (s: StreamStore, epoch: number, ownerToken: string): boolean =>
    !s.meta || s.meta.epoch !== epoch || s.meta.ownerToken !== ownerToken;
  /** The range if `range.leaseToken` still holds its lease. */
  const held = (range: LeasedRange): RangeState | undefined => {
    const r = store(range.stream).ranges.get(rKey(range));
    return r && r.status === 'leased' && r.leaseToken === range.leaseToken ? r : undefined;
  };

  return {
    store,
    limits,
    requestCount: () => requests,
    async readMeta(stream) {
      requests++;
      const m = store(stream).meta;
      return m ? clone(m) : undefined;
    },
    async acquirePlannerLease({ stream, ownerToken, nowMs, leaseMs }): Promise<PlannerLease> {
      requests++;
      const s = store(stream);
      if (s.meta && s.meta.leaseExpiresAtMs >= nowMs && s.meta.ownerToken !== ownerToken) {
        return { acquired: false, holder: s.meta.ownerToken, leaseExpiresAtMs: s.meta.leaseExpiresAtMs };
      }
      const epoch = (s.meta?.epoch ?? 0) + 1;
      s.meta = { ...(s.meta ?? { stream }), stream, epoch, ownerToken, leaseExpiresAtMs: nowMs + leaseMs, lastRunAtMs: nowMs };
      return { acquired: true, epoch, meta: clone(s.meta) };
    },
    async takePlannerLoop({ stream, ownerToken, nowMs, leaseMs, asSuccessor }): Promise<LoopTake> {
      requests++;
      const s = store(stream);
      // A loop taken before any planner run creates the META item a first run then leases.
      s.meta ??= { stream, epoch: 0, ownerToken: '', leaseExpiresAtMs: 0 };
      const prev = s.meta.loop ?? {};
      if (mayTakeLoop(prev, ownerToken, nowMs)) {
        s.meta.loop = takenLoop(prev, ownerToken, nowMs, leaseMs);
        return { taken: true, previous: clone(prev) };
      }
      if (asSuccessor && maySucceed(prev, ownerToken)) s.meta.loop = { ...prev, successor: ownerToken };
      return { taken: false, holder: clone(s.meta.loop ?? prev) };
    },
    async renewPlannerLoop({ stream, ownerToken, nowMs, leaseMs, lastTickAtMs }): Promise<LoopRenewal> {
      requests++;
      const loop = store(stream).meta?.loop;
      if (!loop || loop.ownerToken !== ownerToken) return { held: false };
      loop.expiresAtMs = nowMs + leaseMs;
      if (lastTickAtMs !== undefined) loop.lastTickAtMs = lastTickAtMs;
      return loop.successor !== undefined ? { held: true, successor: loop.successor } : { held: true };
    },
    async releasePlannerLoop({ stream, ownerToken, lastTickAtMs, nextTickDueMs }) {
      requests++;
      const meta = store(stream).meta;
      if (!meta?.loop || meta.loop.ownerToken !== ownerToken) return 'condition-failed';
      meta.loop = releasedLoop(meta.loop, lastTickAtMs, nextTickDueMs);
      return 'applied';
    },
    async markStreamStarted({ stream, epoch, ownerToken, nowMs, pendingStart }) {
      requests++;
      const s = store(stream);
      if (fencedOut(s, epoch, ownerToken)) return 'fenced';
      if (s.meta!.startedAtMs !== undefined) return 'condition-failed';
      s.meta!.startedAtMs = nowMs;
      if (pendingStart?.length) s.meta!.pendingStart = clone(pendingStart);
      return 'applied';
    },
    async releasePlannerLease({ stream, epoch, ownerToken, confirmDispatches }) {
      requests++;
      const s = store(stream);
      if (fencedOut(s, epoch, ownerToken)) return 'fenced';
      s.meta!.leaseExpiresAtMs = 0;
      if (confirmDispatches) s.meta!.confirmedEpoch = epoch;
      return 'applied';
    },
    async readPartitions(stream) {
      requests++;
      return [...store(stream).partitions.values()].map(clone);
    },
    async readOpenRanges(stream) {
      requests++;
      return [...store(stream).ranges.values()].filter((r) => r.status !== 'done').map(clone);
    },
    async readRange(stream, r) {
      requests++;
      const got = store(stream).ranges.get(rKey(r));
      return got ? clone(got) : undefined;
    },
    async readDataLoss(stream) {
      requests++;
      return store(stream).losses.map(clone);
    },
    async readClosedIncarnations(stream) {
      requests++;
      return store(stream).closed.map(clone);
    },
    async readPartition(stream, topic, partition) {
      requests++;
      const p = store(stream).partitions.get(pKey(topic, partition));
      return p ? clone(p) : undefined;
    },
    async takeRangeLease({
      stream,
      topic,
      partition,
      from,
      incarnation,
      until,
      leaseToken,
      nowMs,
      leaseMs,
      maxAttempts,
    }): Promise<LeaseOutcome> {
      requests++;
      const r = store(stream).ranges.get(rKey({ topic, partition, from, incarnation }));
      const refused = leaseRefusal(r && clone(r), { until, nowMs, maxAttempts });
      if (refused || !r) return refused ?? { kind: 'missing' };
      Object.assign(r, { status: 'leased', leaseToken, leaseExpiresAtMs: nowMs + leaseMs, attempts: r.attempts + 1 });
      r.firstLeasedAtMs ??= nowMs;
      return { kind: 'taken', range: clone(r) };
    },
    async commitChunk({ range, expectProgress, to, nowMs, leaseMs, sinkWrites, deadLetters, dataLoss }): Promise<ProcessorWriteOutcome> {
      requests++;
      if (!fitsOneCommit(sinkWrites ?? [], limits)) throw new CommitTooLargeError(sinkWrites?.length ?? 0, limits);
      const r = held(range);
      if (!r || r.progress !== expectProgress || to < expectProgress || to > r.until) return 'lease-lost';
      if (r.pendingUntil !== undefined && r.pendingUntil !== to) return 'lease-lost';
      r.progress = to;
      r.leaseExpiresAtMs = nowMs + leaseMs;
      delete r.pendingUntil;
      const s = store(range.stream);
      s.sinkWrites.push(...clone(sinkWrites ?? []));
      s.deadLetters.push(...clone(deadLetters ?? []));
      if (dataLoss) s.losses.push(clone(dataLoss));
      return 'applied';
    },
    async beginBatch({ range, expectProgress, until, nowMs, leaseMs }): Promise<ProcessorWriteOutcome> {
      requests++;
      const r = held(range);
      if (!r || r.progress !== expectProgress || until <= expectProgress || until > r.until) return 'lease-lost';
      if (r.pendingUntil !== undefined && r.pendingUntil !== until) return 'lease-lost';
      Object.assign(r, { pendingUntil: until, leaseExpiresAtMs: nowMs + leaseMs });
      return 'applied';
    },
    async applyMarkedSinkWrites({ mark, writes }) {
      requests++;
      if (writes.length > limits.maxMarkedWrites) throw new CommitTooLargeError(writes.length, limits);
      let applied = 0;
      for (const w of writes) {
        if (!isMarkableWrite(w)) throw new ValidationError('a folded batch writes updates without conditions only');
        const id = `${w.update.table ?? ''}|${JSON.stringify(w.update.key)}`;
        const itemMarks = marks.get(id) ?? new Map<string, number>();
        if ((itemMarks.get(markName(mark)) ?? -1) >= mark.until) continue;
        itemMarks.set(markName(mark), mark.until);
        marks.set(id, itemMarks);
        store(mark.stream).sinkWrites.push(clone(w));
        applied++;
      }
      return { applied, skipped: writes.length - applied };
    },
    async completeRange({ range, expectProgress, nowMs, stats, observedRecordsPerSec, advancePartition }): Promise<ProcessorWriteOutcome> {
      requests++;
      const r = held(range);
      if (!r || r.progress !== expectProgress) return 'lease-lost';
      const p = store(range.stream).partitions.get(pKey(range.topic, range.partition));
      Object.assign(r, { status: 'done', progress: r.until, finishedAtMs: nowMs, records: stats.records });
      if (p && sameInc(p, range)) {
        if (advancePartition && p.committed === range.from) p.committed = range.until;
        p.lastRange = clone(stats);
        if (observedRecordsPerSec !== undefined) p.observedRecordsPerSec = observedRecordsPerSec;
      }
      return 'applied';
    },
    async failRange({ range, status, error }): Promise<ProcessorWriteOutcome> {
      requests++;
      const r = held(range);
      if (!r) return 'lease-lost';
      Object.assign(r, { status, lastError: error, leaseExpiresAtMs: 0 });
      return 'applied';
    },
    async releaseRange({ range, progressed }): Promise<ProcessorWriteOutcome> {
      requests++;
      const r = held(range);
      if (!r) return 'lease-lost';
      Object.assign(r, { status: 'planned', leaseExpiresAtMs: 0, dispatchedAtMs: undefined });
      if (progressed) r.attempts = Math.max(0, r.attempts - 1);
      return 'applied';
    },
    async listDeadLetters(stream) {
      requests++;
      return store(stream).deadLetters.map(clone);
    },
    async rewindPartitions({ stream, epoch, ownerToken, partitions, change }): Promise<RewindOutcome> {
      requests++;
      const s = store(stream);
      if (fencedOut(s, epoch, ownerToken)) return { outcome: 'fenced' };
      // Check everything first: the rewind applies to all partitions or to none.
      for (const p of partitions) {
        const cur = s.partitions.get(pKey(p.topic, p.partition));
        if (!cur || cur.status === 'retired' || cur.committed !== p.expect.committed || cur.nextFrom !== p.expect.nextFrom) {
          return { outcome: 'condition-failed', reason: `partition ${p.topic}/${p.partition} changed since it was read` };
        }
        const lo = Math.min(p.to, p.expect.committed);
        if (!sameInc(cur, p))
          return { outcome: 'condition-failed', reason: `partition ${p.topic}/${p.partition} changed since it was read` };
        const busy = [...s.ranges.values()].find(
          (r) =>
            r.topic === p.topic &&
            r.partition === p.partition &&
            sameInc(r, p) &&
            r.from >= lo &&
            r.status !== 'done' &&
            r.status !== 'parked',
        );
        if (busy)
          return {
            outcome: 'condition-failed',
            reason: `range ${busy.topic}/${busy.partition}/${busy.from}-${busy.until} is ${busy.status}`,
          };
      }
      let removedRanges = 0;
      let abandonedParkedRanges = 0;
      let removedDeadLetters = 0;
      for (const p of partitions) {
        const cur = s.partitions.get(pKey(p.topic, p.partition)) as PartitionState;
        Object.assign(cur, { committed: p.to, nextFrom: p.to, status: 'active', rewinds: (cur.rewinds ?? 0) + 1 });
        delete cur.reason;
        const lo = Math.min(p.to, p.expect.committed);
        for (const [k, r] of s.ranges) {
          if (r.topic !== p.topic || r.partition !== p.partition || !sameInc(r, p) || r.from < lo) continue;
          if (r.status === 'parked') {
            s.ranges.delete(k);
            abandonedParkedRanges++;
          } else if (r.status === 'done' && r.from >= p.to) {
            s.ranges.delete(k);
            removedRanges++;
          }
        }
        const before = s.deadLetters.length;
        s.deadLetters = s.deadLetters.filter(
          (d) => !(d.topic === p.topic && d.partition === p.partition && sameInc(d, p) && d.offset >= p.to),
        );
        removedDeadLetters += before - s.deadLetters.length;
      }
      s.meta!.lastChange = clone(change);
      return { outcome: 'applied', removedRanges, abandonedParkedRanges, removedDeadLetters };
    },
    async recordChange({ stream, epoch, ownerToken, change }) {
      requests++;
      const s = store(stream);
      if (fencedOut(s, epoch, ownerToken)) return 'fenced';
      s.meta!.lastChange = clone(change);
      return 'applied';
    },
    async markStreamFinished({ stream, epoch, ownerToken, nowMs }) {
      requests++;
      const s = store(stream);
      if (fencedOut(s, epoch, ownerToken)) return 'fenced';
      if (s.meta!.finishedAtMs !== undefined) return 'condition-failed';
      s.meta!.finishedAtMs = nowMs;
      return 'applied';
    },
    async redriveDeadLetter({ stream, topic, partition, offset, incarnation, nowMs, sinkWrites }) {
      requests++;
      const s = store(stream);
      const d = s.deadLetters.find(
        (x) => x.topic === topic && x.partition === partition && x.offset === offset && sameInc(x, { incarnation }),
      );
      if (!d || d.redrivenAtMs !== undefined) return 'condition-failed';
      d.redrivenAtMs = nowMs;
      s.sinkWrites.push(...clone(sinkWrites ?? []));
      return 'applied';
    },
    async applyPlan({ stream, epoch, ownerToken, writes }): Promise<WriteOutcome[]> {
      requests++;
      const s = store(stream);
      const out: WriteOutcome[] = [];
      for (const w of writes) {
        if (out.at(-1) === 'fenced' || fencedOut(s, epoch, ownerToken)) {
          out.push('fenced');
          continue;
        }
        out.push(applyOne(s, w) ? 'applied' : 'condition-failed');
      }
      return out;
    },
  };
}
