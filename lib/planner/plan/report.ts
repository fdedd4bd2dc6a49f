/** Reports: what happened to each partition in this run (for reports, metrics and `plan --dry-run`). */
import type { PartitionOffsets } from '../../ports/kafka-metadata';
import type { PartitionState } from '../../ports/ledger-state';
import { partitionKey } from '../../ranges';
import type { Draft, PartitionReport } from './types';

/** A partition's report with `action` (its lag from `o`, the offsets read this run). */
export function report(
  p: PartitionState,
  o: PartitionOffsets | undefined,
  action: PartitionReport['action'],
  note?: string,
): PartitionReport {
  // A bounded partition's lag counts only what lies below its stop offset.
  const end = o && (p.stopOffset === undefined ? o.latest : Math.min(o.latest, p.stopOffset));
  return {
    topic: p.topic,
    partition: p.partition,
    status: p.status,
    earliest: o?.earliest,
    latest: o?.latest,
    committed: p.committed,
    nextFrom: p.nextFrom,
    lag: end !== undefined ? Math.max(0, end - p.committed) : 0,
    planned: [],
    action,
    note,
    ...(p.stopOffset !== undefined ? { stopOffset: p.stopOffset } : {}),
  };
}

/** The reports by topic and partition; a partition registered this run reads as new, with where it starts when that is worth saying. */
export function sortedReports({ reports, startNotes }: Draft, registrations: PartitionState[]): PartitionReport[] {
  const registered = new Set(registrations.map((p) => partitionKey(p.topic, p.partition)));
  const sorted = [...reports.values()].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
  for (const rep of sorted) {
    const k = partitionKey(rep.topic, rep.partition);
    if (!registered.has(k)) continue;
    rep.status = 'new';
    if (rep.action === 'idle') rep.action = 'registered';
    const start = startNotes.get(k);
    if (start) rep.note = rep.note ? `${start}; ${rep.note}` : start;
  }
  return sorted;
}
