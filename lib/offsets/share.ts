/**
 * Which ranges share a processor invocation (pure). Small ranges, by records and by the bytes their
 * partitions' records weigh, go several to an invocation, so a tick over many quiet partitions costs
 * a few invocations and a few ledger writes (one per shard, the ledger's unit of writing) instead of
 * one of each per partition. A large range keeps an invocation of its own, so a backlog drains in
 * parallel. Ranges of one shard are kept together where they fit: their lease and completion are then
 * one write each.
 */
import { ValidationError } from '../errors';

/** What a range weighs, and where the ledger keeps it. */
export type ShareableRange = { records: number; bytesPerRecord?: number; shard?: string };

/** When ranges share an invocation (the stream's `processor.shareInvocations`). */
export type ShareLimits = {
  /** Records of one invocation's ranges together; a range above it alone has an invocation of its own. */
  maxRecords: number;
  /** Bytes of one invocation's ranges together (records x the partition's observed bytes per record). */
  maxBytes: number;
  /** Ranges of one invocation at most. */
  maxRanges: number;
};

/** Bytes per record assumed for a partition that has none observed yet. */
export const UNOBSERVED_BYTES_PER_RECORD = 1024;

const bytesOf = (r: ShareableRange): number => r.records * (r.bytesPerRecord ?? UNOBSERVED_BYTES_PER_RECORD);

/**
 * The ranges' invocations, as lists of indexes into `ranges`: each large range alone (over
 * `maxRecords` or `maxBytes` on its own), the small ones packed in order of their shard, first fit,
 * under all three limits. Every index appears once.
 */
export function shareInvocations(ranges: readonly ShareableRange[], limits: ShareLimits | undefined): number[][] {
  if (!limits) return ranges.map((_, i) => [i]);
  for (const [name, v] of Object.entries(limits)) {
    if (!(v >= 1) || !Number.isFinite(v)) throw new ValidationError(`share limit ${name} must be a number from 1, got ${v}`);
  }
  const alone: number[][] = [];
  const small: number[] = [];
  ranges.forEach((r, i) => (r.records > limits.maxRecords || bytesOf(r) > limits.maxBytes ? alone.push([i]) : small.push(i)));
  // A stable order by shard keeps each shard's ranges next to each other.
  small.sort((a, b) => String(ranges[a]?.shard ?? '').localeCompare(String(ranges[b]?.shard ?? '')) || a - b);
  const shared: Array<{ indexes: number[]; records: number; bytes: number }> = [];
  for (const i of small) {
    const r = ranges[i] as ShareableRange;
    const fit = shared.find(
      (s) => s.indexes.length < limits.maxRanges && s.records + r.records <= limits.maxRecords && s.bytes + bytesOf(r) <= limits.maxBytes,
    );
    if (fit) {
      fit.indexes.push(i);
      fit.records += r.records;
      fit.bytes += bytesOf(r);
    } else shared.push({ indexes: [i], records: r.records, bytes: bytesOf(r) });
  }
  return [...alone, ...shared.map((s) => s.indexes)];
}

/** Folds one finished range into the observed bytes per record (EWMA, whole bytes); `weight` is the newest sample's share. */
export function updateObservedBytesPerRecord(prev: number | undefined, bytes: number, records: number, weight = 0.5): number | undefined {
  if (!(weight > 0 && weight <= 1)) throw new ValidationError(`weight must be in (0, 1], got ${weight}`);
  if (!(records > 0) || !Number.isFinite(bytes) || bytes < 0) return prev;
  const sample = bytes / records;
  return Math.round(prev === undefined ? sample : weight * sample + (1 - weight) * prev);
}

/**
 * The invocations of a continuous stream's segment ranges: those of one shard (ledger group item)
 * together, at most `perSegment` to an invocation, so that a segment's commits are one write per
 * tick. Indexes in input order within each invocation.
 */
export function segmentInvocations(ranges: ReadonlyArray<{ shard?: string }>, perSegment: number): number[][] {
  const byShard = new Map<string | undefined, number[]>();
  ranges.forEach((r, i) => byShard.set(r.shard, [...(byShard.get(r.shard) ?? []), i]));
  const out: number[][] = [];
  for (const indexes of byShard.values()) {
    for (let i = 0; i < indexes.length; i += Math.max(1, perSegment)) out.push(indexes.slice(i, i + Math.max(1, perSegment)));
  }
  return out;
}
