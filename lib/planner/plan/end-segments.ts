/**
 * Phase "end segments": a stream switched from continuous mode back to micro-batches. Its open
 * segment ranges are ended where they stand (`end-segment`), so that the next run plans
 * micro-batches from their progress. Pure, from what the run read.
 */
import { isContinuous } from '../../config/continuous';
import type { PlanWrite } from '../../ports/ledger';
import type { PartitionState, RangeState } from '../../ports/ledger-state';
import { sameIncarnation } from '../../ports/ledger-rules/incarnation';
import { isOpenRange, OPEN_UNTIL, partitionKey } from '../../ranges';
import type { PlanInput } from './types';

/**
 * The `end-segment` writes of a micro-batch stream's open ranges, and the ranges they end (not sent
 * again this run). A range is ended whether or not a processor holds it (the holder is fenced: its
 * next commit finds no range, and an at-least-once handler is given again what it handled since its
 * last commit). Left as they are: a range with a folded batch pending (a holder must finish that
 * batch's sink writes first, and is sent the range as usual), a parked one (an operator's), and one
 * whose partition does not stand at its progress (the write's condition would fail).
 */
export function endSegments(
  input: Pick<PlanInput, 'stream' | 'openRanges'>,
  candidates: PartitionState[],
): { writes: PlanWrite[]; ended: Set<RangeState> } {
  const writes: PlanWrite[] = [];
  const ended = new Set<RangeState>();
  if (isContinuous(input.stream)) return { writes, ended };
  const active = new Map(candidates.filter((p) => p.status === 'active').map((p) => [partitionKey(p.topic, p.partition), p]));
  for (const r of input.openRanges) {
    const owner = active.get(partitionKey(r.topic, r.partition));
    if (!owner || !sameIncarnation(r, owner) || !isOpenRange(r)) continue;
    if (r.status === 'parked' || r.status === 'done' || r.pendingUntil !== undefined) continue;
    if (owner.nextFrom !== OPEN_UNTIL || owner.committed !== r.progress) continue;
    writes.push({ kind: 'end-segment', range: r, expect: { progress: r.progress } });
    ended.add(r);
  }
  return { writes, ended };
}
