/**
 * In-memory Ledger for fast unit tests of planner logic. Same conditional semantics as the DynamoDB
 * adapter (the shared contract test runs against both), with none of its batching.
 */
import { DYNAMODB_LIMITS } from './limits.dynamodb';
import { CommitTooLargeError, fitsOneCommit } from '../ports/commit-limits';
import { plannerFence } from '../ports/ledger-rules/fence';
import { leaseRefusal, takenRange } from '../ports/ledger-rules/lease';
import { changed, meets, type ItemRef, type ItemStep } from '../ports/ledger-rules/item-step';
import { planWriteSteps } from '../ports/ledger-rules/plan-write';
import { withDerivedFields } from '../ports/ledger-rules/derived';
import {
  beginBatchStep,
  commitChunkSteps,
  completeRangeSteps,
  failRangeStep,
  progressCommitsOf,
  releaseRangeStep,
} from '../ports/ledger-rules/range-write';
import { partitionChangedReason, rewindDeadLetters, rewindPartitionStep, rewindRanges } from '../ports/ledger-rules/rewind';
import { deliveryOrderKey, sameDeadLetter } from '../ports/ledger-rules/outbox';
import { ofIncarnation } from '../ports/ledger-rules/incarnation';
import { isMarkableWrite, markAttribute } from '../ports/sink-write';
import {
  mayClaimChainTick,
  mayTakeLoop,
  maySucceed,
  releasedLoop,
  takenLoop,
  type LoopRenewal,
  type LoopTake,
} from '../ports/planner-loop';
import { ValidationError } from '../errors';
import { partitionKey } from '../ranges';
import type { LedgerLimits } from '../ports/commit-limits';
import type { LeaseOutcome, ProcessorWriteOutcome, Ledger, PlannerLease, RewindOutcome, WriteOutcome } from '../ports/ledger';
import type {
  ClosedIncarnation,
  DataLossEntry,
  DeadLetter,
  PartitionState,
  PendingDelivery,
  RangeState,
  StreamMeta,
} from '../ports/ledger-state';
import type { SinkWrite } from '../ports/sink-write';

type StreamStore = {
  meta?: StreamMeta;
  partitions: Map<string, PartitionState>;
  ranges: Map<string, RangeState>;
  /** Archived ranges (`readRangeHistory`), in the order they were archived. */
  history: Array<{ range: RangeState; archivedAtMs: number }>;
  losses: DataLossEntry[];
  deadLetters: DeadLetter[];
  closed: ClosedIncarnation[];
  /** Pending deliveries of dead letters (the outbox), by their key order (`deliveryOrderKey`). */
  deliveries: Map<string, PendingDelivery>;
  /** Sink writes as committed, in order (the fake does not evaluate update expressions). */
  sinkWrites: SinkWrite[];
};

const rKey = (r: { topic: string; partition: number; from: number; incarnation?: number }): string =>
  `${partitionKey(r.topic, r.partition)}${r.incarnation ? `/i${r.incarnation}` : ''}/${r.from}`;
const clone = <T>(v: T): T => structuredClone(v);

/** A partition's observed rates, as a lease take reports them. */
const observedOf = (p: PartitionState | undefined) => ({
  ...(p?.observedRecordsPerSec !== undefined ? { observedRecordsPerSec: p.observedRecordsPerSec } : {}),
  ...(p?.observedBytesPerRecord !== undefined ? { observedBytesPerRecord: p.observedBytesPerRecord } : {}),
});

/** The stored item a step names (undefined when there is none). */
function itemOf(s: StreamStore, ref: ItemRef): PartitionState | RangeState | undefined {
  return ref.item === 'partition' ? s.partitions.get(partitionKey(ref.topic, ref.partition)) : s.ranges.get(rKey(ref));
}

/** Whether a step's condition holds on the stream's state as it is. */
function stepHolds(s: StreamStore, step: ItemStep): boolean {
  switch (step.kind) {
    case 'create-partition':
      return !s.partitions.has(partitionKey(step.value.topic, step.value.partition));
    case 'create-range':
      return !s.ranges.has(rKey(step.value));
    case 'create-loss': {
      const l = step.value;
      return !s.losses.some((x) => x.from === l.from && ofIncarnation(x, l));
    }
    case 'create-closed': {
      const c = step.value;
      return !s.closed.some((x) => ofIncarnation(x, c));
    }
    case 'create-dead-letter':
      return !s.deadLetters.some((d) => sameDeadLetter(d, step.value));
    case 'archive-range': {
      // Archived already (an archive repeated after a crash) holds too.
      const r = s.ranges.get(rKey(step.value));
      return r === undefined || r.status === 'done';
    }
    case 'put-delivery':
      return true;
    case 'update':
    case 'replace-partition':
      return meets(itemOf(s, step.ref), step.when);
    case 'delete':
      return step.when ? meets(itemOf(s, step.ref), step.when) : true;
  }
}

/** Executes a step whose condition holds. */
function execute(s: StreamStore, step: ItemStep): void {
  switch (step.kind) {
    case 'create-partition':
      s.partitions.set(partitionKey(step.value.topic, step.value.partition), clone(step.value));
      return;
    case 'replace-partition': {
      // A new incarnation's state replaces the old one's whole, its ranges included (as the DynamoDB entry is replaced).
      const old = s.partitions.get(partitionKey(step.value.topic, step.value.partition));
      for (const [k, r] of s.ranges) if (old && ofIncarnation(old, r)) s.ranges.delete(k);
      s.partitions.set(partitionKey(step.value.topic, step.value.partition), clone(step.value));
      return;
    }
    case 'archive-range': {
      const r = s.ranges.get(rKey(step.value));
      if (!r) return;
      s.ranges.delete(rKey(step.value));
      s.history.push({ range: r, archivedAtMs: Date.now() });
      return;
    }
    case 'create-range':
      s.ranges.set(rKey(step.value), clone(step.value));
      return;
    case 'create-loss':
      s.losses.push(clone(step.value));
      return;
    case 'create-closed':
      s.closed.push(clone(step.value));
      return;
    case 'create-dead-letter':
      s.deadLetters.push(clone(step.value));
      return;
    case 'put-delivery':
      s.deliveries.set(deliveryOrderKey(step.value), clone(step.value));
      return;
    case 'update': {
      // In place: a test holding the stored object sees the write, as it did before the rules were shared.
      const item = itemOf(s, step.ref) as Record<string, unknown>;
      const next = changed(item, step.change);
      for (const field of Object.keys(item)) if (!(field in next)) delete item[field];
      Object.assign(item, next);
      return;
    }
    case 'delete':
      if (step.ref.item === 'partition') s.partitions.delete(partitionKey(step.ref.topic, step.ref.partition));
      else s.ranges.delete(rKey(step.ref));
  }
}

/** Applies one write's steps, all or none (the ledger rules decide them); false when a condition does not hold. */
function applySteps(s: StreamStore, steps: readonly ItemStep[]): boolean {
  if (!steps.every((step) => stepHolds(s, step))) return false;
  steps.forEach((step) => execute(s, step));
  return true;
}

/** A processor write's outcome: its steps applied, or nothing changed because the lease holder's view is stale. */
const processorWrite = (s: StreamStore, steps: readonly ItemStep[]): ProcessorWriteOutcome =>
  applySteps(s, steps) ? 'applied' : 'lease-lost';

/**
 * Creates an empty in-memory ledger. `store(stream)` exposes the raw store for assertions and
 * `requestCount()` the calls made (not part of the port: a test's request budget). It enforces
 * the limits of the store it stands in for (DynamoDB's by default), so unit tests see chunks split.
 */
export function createMemoryLedger(
  opts: { limits?: LedgerLimits } = {},
): Ledger & { store(stream: string): StreamStore; allRanges(stream: string): RangeState[]; requestCount(): number } {
  const limits = opts.limits ?? DYNAMODB_LIMITS;
  const streams = new Map<string, StreamStore>();
  let requests = 0;
  /** Applied-offset marks per sink item (`table|key`), by mark name. */
  const marks = new Map<string, Map<string, number>>();
  const store = (stream: string): StreamStore => {
    let s = streams.get(stream);
    if (!s) {
      s = {
        partitions: new Map(),
        ranges: new Map(),
        history: [],
        losses: [],
        deadLetters: [],
        closed: [],
        deliveries: new Map(),
        sinkWrites: [],
      };
      streams.set(stream, s);
    }
    return s;
  };
  const fencedOut = (s: StreamStore, epoch: number, ownerToken: string): boolean => !meets(s.meta, plannerFence(epoch, ownerToken));
  const ledger: Ledger & { store(stream: string): StreamStore; allRanges(stream: string): RangeState[]; requestCount(): number } = {
    store,
    // Every range the ledger keeps (archived and live), for assertions: not part of the port.
    allRanges: (stream) => [...store(stream).history.map((h) => h.range), ...store(stream).ranges.values()],
    limits,
    requestCount: () => requests,
    async readMeta(stream) {
      requests++;
      const m = store(stream).meta;
      return m ? clone(m) : undefined;
    },
    async acquirePlannerLease({ stream, ownerToken, nowMs, leaseMs, previous, deadLoopOwner }): Promise<PlannerLease> {
      requests++;
      const s = store(stream);
      const kept =
        (previous !== undefined && s.meta?.ownerToken === previous.ownerToken && s.meta.epoch === previous.epoch) ||
        (deadLoopOwner !== undefined && s.meta?.ownerToken.startsWith(`${deadLoopOwner}:`) === true);
      if (s.meta && s.meta.leaseExpiresAtMs >= nowMs && s.meta.ownerToken !== ownerToken && !kept) {
        return { acquired: false, holder: s.meta.ownerToken, leaseExpiresAtMs: s.meta.leaseExpiresAtMs };
      }
      const epoch = (s.meta?.epoch ?? 0) + 1;
      // A loop's tick taking over its kept lease leaves a request for it standing: the loop releases after the tick.
      const { leaseWanted, ...meta } = s.meta ?? { stream };
      if (previous && leaseWanted !== undefined) (meta as StreamMeta).leaseWanted = leaseWanted;
      s.meta = { ...meta, stream, epoch, ownerToken, leaseExpiresAtMs: nowMs + leaseMs, lastRunAtMs: nowMs } as StreamMeta;
      // The kept lease's confirmation goes with the take (as one write on DynamoDB).
      if (previous?.confirmDispatches) s.meta.confirmedEpoch = previous.epoch;
      return { acquired: true, epoch, meta: clone(s.meta) };
    },
    async requestPlannerLease({ stream, ownerToken }) {
      requests++;
      const meta = store(stream).meta;
      if (meta) meta.leaseWanted = ownerToken;
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
    async claimChainTick({ stream, seq, nowMs, claimedBy }) {
      requests++;
      const s = store(stream);
      s.meta ??= { stream, epoch: 0, ownerToken: '', leaseExpiresAtMs: 0 };
      if (!mayClaimChainTick(s.meta.tickChain, seq, claimedBy)) return 'condition-failed';
      s.meta.tickChain = { seq, lastTickAtMs: nowMs, claimedBy };
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
      const s = store(stream);
      return [...s.partitions.values()].map((p) => withDerivedFields(clone(p), [...s.ranges.values()]));
    },
    async readPartitionsAndRanges(stream) {
      requests++;
      const s = store(stream);
      const ranges = [...s.ranges.values()];
      return { partitions: [...s.partitions.values()].map((p) => withDerivedFields(clone(p), ranges)), ranges: ranges.map(clone) };
    },
    async readOpenRanges(stream) {
      requests++;
      return [...store(stream).ranges.values()].filter((r) => r.status !== 'done').map(clone);
    },
    async readRanges(stream) {
      requests++;
      return [...store(stream).ranges.values()].map(clone);
    },
    async readRangeHistory(stream, opts = {}) {
      requests++;
      return store(stream)
        .history.filter((h) => h.archivedAtMs >= (opts.sinceMs ?? 0))
        .map((h) => clone(h.range));
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
      const s = store(stream);
      const p = s.partitions.get(partitionKey(topic, partition));
      return p ? withDerivedFields(clone(p), [...s.ranges.values()]) : undefined;
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
      Object.assign(r, takenRange(r, { leaseToken, nowMs, leaseMs }));
      const p = store(stream).partitions.get(partitionKey(topic, partition));
      return { kind: 'taken', range: clone(r), observed: observedOf(p) };
    },
    async takeRangeLeases({ stream, ranges, ...take }) {
      const out: LeaseOutcome[] = [];
      for (const r of ranges) out.push(await ledger.takeRangeLease({ stream, ...r, ...take }));
      return out;
    },
    async completeRanges(inputs) {
      const out: ProcessorWriteOutcome[] = [];
      for (const c of inputs) out.push(await ledger.completeRange(c));
      return out;
    },
    async commitChunk(input): Promise<ProcessorWriteOutcome> {
      requests++;
      const sinkWrites = input.sinkWrites ?? [];
      if (!fitsOneCommit(sinkWrites, limits)) throw new CommitTooLargeError(sinkWrites.length, limits);
      const s = store(input.range.stream);
      const outcome = processorWrite(s, commitChunkSteps(input));
      if (outcome === 'applied') s.sinkWrites.push(...clone(sinkWrites));
      return outcome;
    },
    async commitChunks(inputs) {
      const out: ProcessorWriteOutcome[] = [];
      for (const c of progressCommitsOf(inputs)) out.push(await ledger.commitChunk(c));
      return out;
    },
    async beginBatch(input): Promise<ProcessorWriteOutcome> {
      requests++;
      return processorWrite(store(input.range.stream), [beginBatchStep(input)]);
    },
    async applyMarkedSinkWrites({ mark, writes }) {
      requests++;
      if (writes.length > limits.maxMarkedWrites) throw new CommitTooLargeError(writes.length, limits);
      let applied = 0;
      for (const w of writes) {
        if (!isMarkableWrite(w)) throw new ValidationError('a folded batch writes updates without conditions only');
        const id = `${w.update.table ?? ''}|${JSON.stringify(w.update.key)}`;
        const itemMarks = marks.get(id) ?? new Map<string, number>();
        if ((itemMarks.get(markAttribute(mark)) ?? -1) >= mark.until) continue;
        itemMarks.set(markAttribute(mark), mark.until);
        marks.set(id, itemMarks);
        store(mark.stream).sinkWrites.push(clone(w));
        applied++;
      }
      return { applied, skipped: writes.length - applied };
    },
    async completeRange(input): Promise<ProcessorWriteOutcome> {
      requests++;
      const s = store(input.range.stream);
      // The committed offset advances when it stands at the range's start; otherwise (split ranges
      // finishing out of order) the range finishes alone and the planner advances it later.
      if (input.advancePartition && applySteps(s, completeRangeSteps(input, true))) return 'applied';
      return processorWrite(s, completeRangeSteps(input, false));
    },
    async failRange(input): Promise<ProcessorWriteOutcome> {
      requests++;
      return processorWrite(store(input.range.stream), [failRangeStep(input)]);
    },
    async releaseRange(input): Promise<ProcessorWriteOutcome> {
      requests++;
      return processorWrite(store(input.range.stream), [releaseRangeStep(input)]);
    },
    async listDeadLetters(stream) {
      requests++;
      return store(stream).deadLetters.map(clone);
    },
    ...memoryOutbox(store, () => requests++),
    async rewindPartitions({ stream, epoch, ownerToken, partitions, change }): Promise<RewindOutcome> {
      requests++;
      const s = store(stream);
      if (fencedOut(s, epoch, ownerToken)) return { outcome: 'fenced' };
      // Decide everything first: the rewind applies to all partitions or to none.
      const plans = [];
      for (const p of partitions) {
        const step = rewindPartitionStep(p);
        if (!meets(itemOf(s, step.ref), step.when)) return { outcome: 'condition-failed', reason: partitionChangedReason(p) };
        const ranges = rewindRanges(p, [...s.ranges.values()]);
        if (ranges.blocked) return { outcome: 'condition-failed', reason: ranges.reason };
        plans.push({ step, ranges, deadLetters: new Set(rewindDeadLetters(p, s.deadLetters)) });
      }
      for (const { step, ranges, deadLetters } of plans) {
        execute(s, step);
        for (const r of [...ranges.abandonParked, ...ranges.removeDone, ...ranges.endSegments]) s.ranges.delete(rKey(r));
        s.deadLetters = s.deadLetters.filter((d) => !deadLetters.has(d));
      }
      s.meta!.lastChange = clone(change);
      return {
        outcome: 'applied',
        removedRanges: plans.reduce((n, p) => n + p.ranges.removeDone.length + p.ranges.endSegments.length, 0),
        abandonedParkedRanges: plans.reduce((n, p) => n + p.ranges.abandonParked.length, 0),
        removedDeadLetters: plans.reduce((n, p) => n + p.deadLetters.size, 0),
      };
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
      const d = s.deadLetters.find((x) => x.offset === offset && ofIncarnation(x, { topic, partition, incarnation }));
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
        out.push(applySteps(s, planWriteSteps(w)) ? 'applied' : 'condition-failed');
      }
      return out;
    },
  };
  return ledger;
}

/** The outbox methods of the memory ledger (the DynamoDB adapter's `O#` items, as a sorted map). */
function memoryOutbox(
  store: (stream: string) => StreamStore,
  counted: () => void,
): Pick<Ledger, 'readDeadLetter' | 'readPendingDeliveries' | 'completeDelivery' | 'postponeDelivery'> {
  const keyOf = (ref: Parameters<Ledger['completeDelivery']>[0]) => deliveryOrderKey({ ...ref.ref, destination: ref.destination });
  return {
    async readDeadLetter(stream, ref) {
      counted();
      const d = store(stream).deadLetters.find((x) => sameDeadLetter(x, ref));
      return d && clone(d);
    },
    async readPendingDeliveries({ stream, dueAtMs, limit }) {
      counted();
      const sorted = [...store(stream).deliveries.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
      const due = dueAtMs === undefined ? sorted : sorted.filter((p) => p.nextAttemptAtMs <= dueAtMs);
      return clone(limit === undefined ? due : due.slice(0, limit));
    },
    async completeDelivery(input) {
      counted();
      return store(input.stream).deliveries.delete(keyOf(input)) ? 'applied' : 'condition-failed';
    },
    async postponeDelivery(input) {
      counted();
      const p = store(input.stream).deliveries.get(keyOf(input));
      if (!p || p.attempts !== input.expectAttempts) return 'condition-failed';
      Object.assign(p, { attempts: p.attempts + 1, nextAttemptAtMs: input.nextAttemptAtMs, lastError: input.error });
      return 'applied';
    },
  };
}
