/** Phase "clamp and split": the ranges planned for the partitions that got a slot. */
import { clampRanges, partsForMinPartitions, splitRange, type OffsetRange } from '../../offsets';
import type { PartitionState, RangeState } from '../../ports/ledger-state';
import { admitPieces } from '../concurrency-cap';
import { isContinuous } from '../../config/continuous';
import { isOpenRange, OPEN_UNTIL } from '../../ranges';
import type { PlanIndex } from './plan-index';
import { report } from './report';
import type { Slots } from './slots';
import type { Draft, PlanInput } from './types';

/**
 * Clamp and split: how far each granted partition's next range reaches under the stream's limits,
 * cut into pieces if asked; under a cap, only the pieces that fit the free slots (`admitPieces`).
 */
export function clampAndSplit(
  input: PlanInput,
  ix: PlanIndex,
  slots: Slots,
  draft: Draft,
): { newRanges: RangeState[]; recordsPlanned: number } {
  const { stream } = input;
  const eligible = slots.granted;
  // A continuous stream's partitions get their open segment range (a bounded one never: replays run in micro-batches).
  const clamped = isContinuous(stream)
    ? new Map(eligible.filter((e) => e.p.stopOffset === undefined).map((e) => [e.input.key, { from: e.input.from, until: OPEN_UNTIL }]))
    : eligible.length
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
      if (!isOpenRange(piece)) recordsPlanned += piece.until - piece.from;
    }
    const rep = report({ ...e.p }, ix.offsets.get(k), 'planned', draft.reports.get(k)?.note);
    rep.planned = pieces.map((x) => ({ from: x.from, until: x.until }));
    draft.reports.set(k, rep);
  }
  return { newRanges, recordsPlanned };
}

/** A range planned this run, recorded as sent. */
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
