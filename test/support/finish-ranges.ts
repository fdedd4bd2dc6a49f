/** Stands in for processors in planner unit tests: every open range of the in-memory ledger finishes at once. */
import type { createMemoryLedger } from '../../lib/ledger/ledger.memory';

/** Marks every open range of `stream` done and advances each partition's committed offset over the ranges that continue it. */
export function finishAllRanges(ledger: ReturnType<typeof createMemoryLedger>, stream: string): void {
  const s = ledger.store(stream);
  for (const r of s.ranges.values()) {
    if (r.status === 'done') continue;
    r.status = 'done';
    r.progress = r.until;
    const p = s.partitions.get(`${r.topic}/${r.partition}`)!;
    if (p.committed === r.from) p.committed = r.until;
  }
}
