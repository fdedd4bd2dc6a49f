/**
 * The operator rewind rules, once: which ranges block a rewind of a partition, which range items and
 * dead letters it removes, and how the partition item changes. Both ledgers read the partition's
 * items at or after `rewindScanFrom`, ask these rules, and execute the answer (the DynamoDB adapter
 * under conditions naming the status it read, so a range that moved meanwhile refuses the rewind).
 */
import type { DeadLetter, RangeState } from '../ledger-state';
import type { RewindPartition } from '../ledger';
import { ofIncarnation } from './incarnation';
import { isOpenRange, OPEN_UNTIL } from '../../ranges';
import { isIncarnation, partitionRef, type ItemStep } from './item-step';

/** What rewinding one partition does to its ranges: refused by a range in flight, or the ranges it removes. */
export type RewindRangesPlan =
  | { blocked: RangeState; reason: string }
  | {
      blocked?: undefined;
      /** Parked ranges at or after the lower of the old and new cursor: abandoned (their offsets are planned again). */
      abandonParked: RangeState[];
      /** Finished ranges at or after the new cursor: their keys would collide with the ranges planned again there. */
      removeDone: RangeState[];
      /**
       * Open segment ranges (continuous mode), wherever they start: removed, which fences their holder
       * (its next commit finds no range); the planner plans a new one from the new cursor.
       */
      endSegments: RangeState[];
    };

/**
 * The lowest offset whose ranges the rewind looks at: the lower of the new cursor and the committed
 * offset read (a rewind forward passes over ranges between them, a rewind back over the ranges after it).
 */
export function rewindScanFrom(p: RewindPartition): number {
  return Math.min(p.to, p.expect.committed);
}

/**
 * What a rewind of `p` does to `ranges` (any ranges; those of other partitions, incarnations or
 * before the scan start are ignored): only finished history and parked ranges may lie there.
 */
export function rewindRanges(p: RewindPartition, ranges: readonly RangeState[]): RewindRangesPlan {
  const lo = rewindScanFrom(p);
  const endSegments = ranges.filter((r) => ofIncarnation(p, r) && isOpenRange(r));
  const mine = ranges.filter((r) => ofIncarnation(p, r) && r.from >= lo && !isOpenRange(r));
  const busy = mine.find((r) => r.status !== 'done' && r.status !== 'parked');
  if (busy) return { blocked: busy, reason: `range ${busy.topic}/${busy.partition}/${busy.from}-${busy.until} is ${busy.status}` };
  return {
    abandonParked: mine.filter((r) => r.status === 'parked'),
    removeDone: mine.filter((r) => r.status === 'done' && r.from >= p.to),
    endSegments,
  };
}

/** The dead letters a rewind of `p` removes: its incarnation's at or after the new cursor (those records are processed again). */
export function rewindDeadLetters<D extends Pick<DeadLetter, 'topic' | 'partition' | 'offset' | 'incarnation'>>(
  p: RewindPartition,
  deadLetters: readonly D[],
): D[] {
  return deadLetters.filter((d) => ofIncarnation(p, d) && d.offset >= p.to);
}

/**
 * The partition's own step: committed = nextFrom = `to`, active again (a failed partition too), one
 * more rewind (folded sink writes get new marks, so the offsets from `to` on apply again), its reason
 * cleared; conditional on the cursor read (I2), the incarnation, and the partition not being retired.
 * While an open segment range runs (cursor OPEN_UNTIL) its commits move the committed offset all the
 * time: the cursor alone is the condition then, and removing the range in the same write fences them.
 */
export function rewindPartitionStep(p: RewindPartition): Extract<ItemStep, { kind: 'update' }> {
  return {
    kind: 'update',
    ref: partitionRef(p.topic, p.partition),
    when: [
      ...(p.expect.nextFrom === OPEN_UNTIL ? [] : [{ field: 'committed', is: p.expect.committed }]),
      { field: 'nextFrom', is: p.expect.nextFrom },
      { field: 'status', isNot: ['retired'] },
      isIncarnation(p.incarnation),
    ],
    change: { set: { committed: p.to, nextFrom: p.to, status: 'active' }, add: { rewinds: 1 }, remove: ['reason'] },
  };
}

/** The refusal of a partition whose item no longer meets its rewind step's conditions. */
export const partitionChangedReason = (p: RewindPartition): string => `partition ${p.topic}/${p.partition} changed since it was read`;
