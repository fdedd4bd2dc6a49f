/**
 * Progress inside the ranges in flight, for `status` and the local live view: a partition's
 * committed offset moves only when a whole range is done, so a large range shows nothing for
 * minutes unless its own progress (committed chunk by chunk by the processor) is shown too.
 */
import type { RangeState } from '../ports/ledger-state';
import { isOpenRange } from '../ranges';

/** A range whose processor is writing a batch now: `[progress, pendingUntil)`. */
export type WritingRange = Pick<RangeState, 'topic' | 'partition' | 'from' | 'until' | 'progress'> & { pendingUntil: number };

export type InFlightProgress = {
  /** Ranges planned, leased or failed-and-awaiting-retry (parked ones are not in flight). */
  ranges: number;
  /** Offsets those ranges span (sum of until - from). */
  offsets: number;
  /** Offsets done inside them (sum of progress - from): committed chunk by chunk, before the range is done. */
  done: number;
  /** Records delivered inside them, where the ledger records it (undefined when no range does). */
  records?: number;
  writing: WritingRange[];
};

/** Sums the progress inside the given open ranges (callers pass the current incarnation's). */
export function inFlightProgress(open: readonly RangeState[]): InFlightProgress {
  const p: InFlightProgress = { ranges: 0, offsets: 0, done: 0, writing: [] };
  for (const r of open) {
    // A continuous segment's open range has no end to count progress against: status lists it apart.
    if (r.status === 'parked' || r.status === 'done' || isOpenRange(r)) continue;
    p.ranges += 1;
    p.offsets += r.until - r.from;
    p.done += Math.max(0, Math.min(r.until, r.progress) - r.from);
    if (r.records !== undefined) p.records = (p.records ?? 0) + r.records;
    if (r.pendingUntil !== undefined && r.pendingUntil > r.progress) {
      p.writing.push({
        topic: r.topic,
        partition: r.partition,
        from: r.from,
        until: r.until,
        progress: r.progress,
        pendingUntil: r.pendingUntil,
      });
    }
  }
  return p;
}

const n = (x: number): string => x.toLocaleString('en-US');

/** One line: `in flight: 12 ranges, 840,000 of 2,000,000 offsets done inside them (42%)`, with records and batches being written. */
export function renderInFlight(p: InFlightProgress): string {
  if (!p.ranges) return 'in flight: no ranges';
  const pct = p.offsets ? ` (${Math.floor((100 * p.done) / p.offsets)}%)` : '';
  const records = p.records !== undefined ? `, ${n(p.records)} records` : '';
  const writing = p.writing.length ? `; ${p.writing.length} writing a batch` : '';
  return (
    `in flight: ${n(p.ranges)} range${p.ranges === 1 ? '' : 's'}, ${n(p.done)} ` +
    `of ${n(p.offsets)} offsets done inside them${pct}${records}${writing}`
  );
}

/** One range writing a batch, as `t/0 [0, 200000) at 84000: writing [84000, 90000)`. */
export function renderWriting(w: WritingRange): string {
  return `${w.topic}/${w.partition} [${w.from}, ${w.until}) at ${w.progress}: writing [${w.progress}, ${w.pendingUntil})`;
}

/** `done/size` of one partition's ranges in flight, for a table cell ('-' when none). */
export function doneCell(done: number, offsets: number): string {
  return offsets ? `${done}/${offsets}` : '-';
}
