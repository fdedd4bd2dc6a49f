/**
 * Archiving finished ranges (a phase of the pure plan): a partition's finished ranges leave its live
 * state for the ledger's history in the write that next changes it, so archiving costs no write of
 * its own. The write that plans its next range carries them; a closed incarnation's go with the close.
 */
import type { PlanWrite } from '../ports/ledger';
import type { RangeState } from '../ports/ledger-state';
import { partitionKey } from '../ranges';

/** Whose finished ranges a range or partition is: its partition and incarnation (absent = 0). */
const ownerKey = (x: { topic: string; partition: number; incarnation?: number }): string =>
  `${partitionKey(x.topic, x.partition)}#${x.incarnation ?? 0}`;

/**
 * `writes` with each partition's finished ranges attached to the first write that plans a range of
 * the same incarnation or closes that incarnation. Ranges of a partition no write changes stay live
 * (a partition's newest finished range is its `lastRange`).
 */
export function withArchives(writes: PlanWrite[], finished: readonly RangeState[]): PlanWrite[] {
  const byOwner = new Map<string, RangeState[]>();
  for (const r of finished) {
    if (r.status !== 'done') continue;
    const list = byOwner.get(ownerKey(r));
    if (list) list.push(r);
    else byOwner.set(ownerKey(r), [r]);
  }
  return writes.map((w) => {
    const owner =
      w.kind === 'plan-range'
        ? ownerKey(w.range)
        : w.kind === 'close-incarnation'
          ? ownerKey({ topic: w.closed.topic, partition: w.closed.partition, incarnation: w.closed.incarnation })
          : undefined;
    const archive = owner === undefined ? undefined : byOwner.get(owner);
    if (!archive || (w.kind !== 'plan-range' && w.kind !== 'close-incarnation')) return w;
    byOwner.delete(owner as string);
    return { ...w, archive };
  });
}
