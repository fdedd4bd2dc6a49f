/** Whether a bounded stream (a replay) has nothing left to plan, ever. */
import type { PlanWrite } from '../../ports/ledger';
import type { PartitionState } from '../../ports/ledger-state';
import { partitionKey } from '../../ranges';

/** A bounded stream is finished when every partition is retired or committed up to its stop offset. */
export function boundedFinished(known: PartitionState[], writes: PlanWrite[]): boolean {
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
