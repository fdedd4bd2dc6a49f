/**
 * `kafka-direct history`: the ranges a stream ran, from the ledger: its history (finished ranges the
 * planner moved out of their partitions' live state, kept RANGE_HISTORY_DAYS) and the finished
 * ranges still live (a partition's newest, until its next range is planned). Each range once, in
 * the order they finished.
 */
import type { StreamConfig } from '../config/schema';
import type { RangeState } from '../ports/ledger-state';
import { rangeIdentity } from '../ranges';
import type { OpsContext } from './context';
import { duration, isoTime, table } from './format';

export type HistoryFilter = {
  /** Ranges that finished at or after this time (store time, epoch ms). */
  sinceMs: number;
  topic?: string;
  partition?: number;
};

export type RangeHistory = { stream: string; sinceMs: number; ranges: RangeState[] };

const identity = rangeIdentity;

/** The finished ranges of `stream` matching `filter`, oldest first. */
export async function streamHistory(ctx: Pick<OpsContext, 'ledger'>, stream: StreamConfig, filter: HistoryFilter): Promise<RangeHistory> {
  // A range finished at `sinceMs` was archived later: reading the archives since then finds it.
  const [archived, live] = await Promise.all([
    ctx.ledger.readRangeHistory(stream.id, { sinceMs: filter.sinceMs }),
    ctx.ledger.readRanges(stream.id),
  ]);
  const byId = new Map<string, RangeState>();
  for (const r of [...archived, ...live.filter((x) => x.status === 'done')]) if (!byId.has(identity(r))) byId.set(identity(r), r);
  const ranges = [...byId.values()]
    .filter((r) => (r.finishedAtMs ?? 0) >= filter.sinceMs)
    .filter((r) => filter.topic === undefined || r.topic === filter.topic)
    .filter((r) => filter.partition === undefined || r.partition === filter.partition)
    .sort((a, b) => (a.finishedAtMs ?? 0) - (b.finishedAtMs ?? 0) || a.topic.localeCompare(b.topic) || a.partition - b.partition);
  return { stream: stream.id, sinceMs: filter.sinceMs, ranges };
}

/** A table of the ranges, with a line saying how many and since when. */
export function renderHistory(h: RangeHistory): string {
  const head = `${h.ranges.length} range(s) of stream ${h.stream} finished since ${isoTime(h.sinceMs)}`;
  if (!h.ranges.length) return head;
  const rows = h.ranges.map((r) => [
    `${r.topic}/${r.partition}${r.incarnation ? `#${r.incarnation}` : ''}`,
    r.from,
    r.until,
    r.records ?? 0,
    r.attempts,
    isoTime(r.plannedAtMs),
    isoTime(r.finishedAtMs),
    r.finishedAtMs === undefined ? '-' : duration(r.finishedAtMs - r.plannedAtMs),
  ]);
  return `${head}\n${table(['partition', 'from', 'until', 'records', 'attempts', 'planned', 'finished', 'planned->done'], rows)}`;
}
