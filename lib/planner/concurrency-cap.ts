/**
 * How many ranges a stream may have open at once, which open ranges hold a processor slot, and
 * which due partitions get the slots left (docs/architecture.md, "Planning, one run", decide:
 * slots). Pure: decide.ts applies it between checking the candidates and clamping their ranges.
 */
import { isContinuous } from '../config/continuous';
import type { StreamConfig } from '../config/schema';
import { segmentsApart } from '../dispatch/segment-routing';
import { ValidationError } from '../errors';
import type { PartitionState, RangeState } from '../ports/ledger-state';
import { sameIncarnation } from '../ports/ledger-rules/incarnation';
import { partitionKey } from '../ranges';

/** The planner's variable holding the processor function's reserved concurrency (the stack sets it with the param). */
export const PROCESSOR_RESERVED_CONCURRENCY_ENV = 'PROCESSOR_RESERVED_CONCURRENCY';

/** Processors that can run at once for the streams of one planner, and how many streams share them. */
export type ProcessorConcurrency = {
  /** The processor function's reserved concurrency, or the local runtime's processor slots. */
  limit: number;
  /** The streams sharing it: every stream the planner plans on its schedule (but the exempt ones). */
  streams: number;
  /**
   * Streams whose invocations do not run on the processor, so neither share nor are capped by its
   * concurrency: continuous streams when the stack gives their segments a function of their own.
   */
  exempt?: readonly string[];
};

/**
 * One stream's share of the processor concurrency: floor(limit / streams), at least 1.
 *
 * Equal shares fixed by the config, not shares by lag or partitions: each stream is planned by a
 * run of its own (its own lease, possibly at the same instant as the others), so a share must not
 * depend on what the other streams' runs see, and fixed shares never add up to more than the
 * limit. With fewer processors than streams each stream still gets one (a stream must progress),
 * and Lambda throttles the surplus.
 */
export function processorShare(c: ProcessorConcurrency): number {
  return Math.max(1, Math.floor(c.limit / Math.max(1, c.streams)));
}

/** Most open ranges of a stream: the lower of its `maxConcurrency` and its processor share; undefined = no cap. */
export function openRangeCap(maxConcurrency: number | undefined, processor: ProcessorConcurrency | undefined): number | undefined {
  const share = processor && processorShare(processor);
  if (maxConcurrency === undefined) return share;
  return share === undefined ? maxConcurrency : Math.min(maxConcurrency, share);
}

/** Where a stream's cap comes from, for the note of a partition waiting for a slot. */
export function capSource(maxConcurrency: number | undefined, processor: ProcessorConcurrency | undefined): string {
  const share = processor && processorShare(processor);
  if (share !== undefined && (maxConcurrency === undefined || share < maxConcurrency)) {
    return `the stream's share of ${processor!.limit} processors over ${processor!.streams} stream(s)`;
  }
  return 'maxConcurrency';
}

/**
 * The processor concurrency `PROCESSOR_RESERVED_CONCURRENCY` gives, shared by `streams` streams;
 * undefined when unset. A value that is not a whole number >= 1 is a broken deployment: refused.
 */
export function processorConcurrencyFromEnv(env: NodeJS.ProcessEnv, streams: number): ProcessorConcurrency | undefined {
  const text = env[PROCESSOR_RESERVED_CONCURRENCY_ENV]?.trim();
  if (!text) return undefined;
  const limit = Number(text);
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new ValidationError(`${PROCESSOR_RESERVED_CONCURRENCY_ENV} must be a whole number >= 1, got ${JSON.stringify(text)}`);
  }
  return { limit, streams };
}

/**
 * The planner's processor concurrency on Lambda: `PROCESSOR_RESERVED_CONCURRENCY` shared by the
 * streams that run on the processor. With a segments function (`SEGMENT_FUNCTION_NAME`), the
 * continuous streams run there: they are exempt, and the others share the processor's concurrency.
 */
export function plannerProcessorConcurrency(env: NodeJS.ProcessEnv, streams: readonly StreamConfig[]): ProcessorConcurrency | undefined {
  const exempt = segmentsApart(env) ? streams.filter(isContinuous).map((s) => s.id) : [];
  const c = processorConcurrencyFromEnv(env, streams.length - exempt.length);
  return c && exempt.length ? { ...c, exempt } : c;
}

/** The processor concurrency one stream's run is capped by: none for an exempt stream. */
export function streamProcessorConcurrency(c: ProcessorConcurrency | undefined, stream: string): ProcessorConcurrency | undefined {
  return c?.exempt?.includes(stream) ? undefined : c;
}

/**
 * The processor slots a stream's open ranges hold, now or when they are sent again:
 * - of a live partition (active and a candidate of this run, same incarnation), every range but a
 *   parked one: planned, leased, or failed awaiting its retry. A range ending at or below the
 *   committed offset is done (the open-ranges index lags), and a partition whose cursor is ahead of
 *   its committed offset holds at least one slot unless a parked range explains it: the index may
 *   not list a range planned a moment ago yet, while partitions are read consistently;
 * - of any other partition (retired, re-created, missing for a moment), whose ranges are never
 *   sent again, only a range whose processor may be running: leased and not expired, or planned and
 *   sent within the lease time.
 */
export function occupiedSlots(
  openRanges: readonly RangeState[],
  live: ReadonlyMap<string, PartitionState>,
  at: { nowMs: number; leaseMs: number },
): number {
  const listed = new Map<string, number>();
  const parked = new Set<string>();
  let others = 0;
  for (const r of openRanges) {
    const k = partitionKey(r.topic, r.partition);
    const p = live.get(k);
    if (!p || !sameIncarnation(p, r)) {
      if (mayBeRunning(r, at)) others++;
    } else if (r.status === 'parked') parked.add(k);
    else if (r.until > p.committed) listed.set(k, (listed.get(k) ?? 0) + 1);
  }
  let held = others;
  for (const [k, p] of live) {
    const n = listed.get(k) ?? 0;
    held += n === 0 && p.committed < p.nextFrom && !parked.has(k) ? 1 : n;
  }
  return held;
}

function mayBeRunning(r: RangeState, { nowMs, leaseMs }: { nowMs: number; leaseMs: number }): boolean {
  if (r.status === 'leased') return (r.leaseExpiresAtMs ?? 0) >= nowMs;
  if (r.status === 'planned') return r.dispatchedAtMs !== undefined && nowMs - r.dispatchedAtMs <= leaseMs;
  return false;
}

/** A due partition asking for a slot. */
export type SlotClaim = {
  topic: string;
  partition: number;
  /** When its last range was planned, or it was registered if it never had one. */
  waitingSinceMs: number;
  /** Offsets it would plan. */
  lag: number;
};

/**
 * The order in which due partitions get free slots: the one waiting longest first (its last range
 * planned earliest), then the one with the most lag, then by topic and partition. A partition left
 * waiting keeps its time while each one planned moves to now, so it moves up every run: nothing
 * starves, each due partition is planned once as many slots freed as partitions were ahead of it.
 */
export function bySlotPriority<T extends SlotClaim>(claims: readonly T[]): T[] {
  return [...claims].sort(
    (a, b) =>
      a.waitingSinceMs - b.waitingSinceMs ||
      b.lag - a.lag ||
      (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1),
  );
}

/**
 * The pieces of split ranges that fit `free` slots, given per partition in priority order: round
 * by round, one more piece of each partition that has one, so every partition given a slot plans
 * at least its first piece. What each keeps is a prefix of its pieces (its cursor moves over them
 * in order); the rest is planned on a later run.
 */
export function admitPieces<T>(pieces: readonly (readonly T[])[], free: number): T[][] {
  const admitted: T[][] = pieces.map(() => []);
  let left = free;
  for (let round = 0; left > 0; round++) {
    let any = false;
    for (let i = 0; i < pieces.length && left > 0; i++) {
      const piece = pieces[i]![round];
      if (piece === undefined) continue;
      admitted[i]!.push(piece);
      left--;
      any = true;
    }
    if (!any) break;
  }
  return admitted;
}
