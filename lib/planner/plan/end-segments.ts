/**
 * Phase "end segments": a stream switched from continuous mode back to micro-batches. Its open
 * segment ranges are ended where they stand (`end-segment`), so that the next run plans
 * micro-batches from their progress. Pure, from what the run read.
 */
import { isContinuous } from '../../config/continuous';
import type { PlanWrite } from '../../ports/ledger';
import type { RangeState } from '../../ports/ledger-state';
import { holdsAsRead } from '../../ports/ledger-rules/plan-write';
import type { OwnedRange } from './plan-index';
import type { PlanInput } from './types';

/**
 * The `end-segment` writes of a micro-batch stream's open ranges, and the ranges they end (not sent
 * again this run). A range is ended whether or not a processor holds it (the holder is fenced: its
 * next commit finds no range, and an at-least-once handler is given again what it handled since its
 * last commit). Left as they are: a range with a folded batch pending (a holder must finish that
 * batch's sink writes first, and is sent the range as usual), a parked one (an operator's), and one
 * whose partition does not stand at its progress (the write's condition would fail).
 */
export function endSegments(input: Pick<PlanInput, 'stream'>, owned: OwnedRange[]): { writes: PlanWrite[]; ended: Set<RangeState> } {
  const writes: PlanWrite[] = [];
  const ended = new Set<RangeState>();
  if (isContinuous(input.stream)) return { writes, ended };
  for (const { range: r, owner } of owned) {
    if (r.status === 'parked' || r.status === 'done') continue;
    const write: PlanWrite = { kind: 'end-segment', range: r, expect: { progress: r.progress } };
    // The rule decides the rest (an open range, no batch pending, its partition at its progress).
    if (!holdsAsRead(write, (ref) => (ref.item === 'range' ? r : owner))) continue;
    writes.push(write);
    ended.add(r);
  }
  return { writes, ended };
}
