/**
 * The partition fields both ledgers derive from the partition's live ranges instead of storing
 * them: its last planned time is its newest range's, and `lastRange` (the statistics the planner's
 * backpressure reads) is its newest finished range's. The rules never write them.
 */
import type { PartitionState, RangeState } from '../ledger-state';
import { ofIncarnation } from './incarnation';

/** `p` with the fields derived from `ranges` (any ranges: those of other partitions or incarnations are ignored). */
export function withDerivedFields(p: PartitionState, ranges: readonly RangeState[]): PartitionState {
  const mine = ranges.filter((r) => ofIncarnation(p, r));
  const out: PartitionState = { ...p };
  delete out.lastPlannedAtMs;
  delete out.lastRange;
  if (mine.length) out.lastPlannedAtMs = Math.max(...mine.map((r) => r.plannedAtMs));
  const last = mine
    .filter((r) => r.status === 'done' && r.finishedAtMs !== undefined)
    .sort((a, b) => (a.finishedAtMs as number) - (b.finishedAtMs as number))
    .at(-1);
  if (last) out.lastRange = statsOf(last);
  return out;
}

/** The statistics of a finished range, as the planner's rate limits read them (`lastRange`). */
function statsOf(r: RangeState): NonNullable<PartitionState['lastRange']> {
  return {
    records: r.records ?? 0,
    processingMs: r.processingMs ?? 0,
    schedulingDelayMs: r.schedulingDelayMs ?? 0,
    finishedAtMs: r.finishedAtMs ?? 0,
  };
}
