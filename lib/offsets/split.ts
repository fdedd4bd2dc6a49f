/**
 * Splitting one planned range into sub-ranges processed in parallel (docs/architecture.md,
 * "Planning, one run", decide: split; order-insensitive streams only), sized like Structured
 * Streaming's KafkaOffsetRangeCalculator.
 */
import { ValidationError } from '../errors';
import { ceilDiv, floorMulDiv, requireInteger, roundMulDiv } from './internal';
import type { OffsetRange } from './types';

/** Tiles `[from, until)` exactly into pieces that differ in size by at most one offset. */
export function splitRange(r: OffsetRange, opts: { maxRangeSize?: number; parts?: number }): OffsetRange[] {
  requireInteger('from', r.from, 0);
  requireInteger('until', r.until, 0);
  const size = r.until - r.from;
  if (size <= 0) return [];
  let parts = 1;
  if (opts.parts !== undefined) {
    requireInteger('parts', opts.parts, 1);
    parts = opts.parts;
  }
  if (opts.maxRangeSize !== undefined) {
    requireInteger('maxRangeSize', opts.maxRangeSize, 1);
    // Both given: honour both, at least `parts` pieces and none above maxRangeSize.
    parts = Math.max(parts, ceilDiv(size, opts.maxRangeSize));
  }
  // Empty pieces would be invocations with nothing to read.
  parts = Math.min(parts, size);

  const pieces: OffsetRange[] = [];
  let start = r.from;
  let remaining = size;
  for (let i = 0; i < parts; i++) {
    // Dividing what is left (not size / parts) spreads the remainder: later pieces are at most one larger.
    const piece = floorMulDiv(remaining, 1, parts - i);
    pieces.push({ from: start, until: start + piece });
    start += piece;
    remaining -= piece;
  }
  return pieces;
}

/** Pieces per range so the run has about `minPartitions` ranges in total (Structured Streaming's `minPartitions`); 0 for empty ranges. */
export function partsForMinPartitions(sizes: ReadonlyMap<string, number>, minPartitions: number): Map<string, number> {
  requireInteger('minPartitions', minPartitions, 1);
  for (const [key, size] of sizes) {
    if (!Number.isSafeInteger(size)) throw new ValidationError(`${key} size must be an integer, got ${size}`);
  }
  const nonEmpty = [...sizes].filter(([, size]) => size > 0);
  const total = nonEmpty.reduce((sum, [, size]) => sum + size, 0);
  // As in Spark since SPARK-36576: ranges too small to split still count towards minPartitions
  // and are left out of the proportional math, or a few tiny ranges would inflate the total and
  // leave the big ones split too little.
  const unsplit = new Set(nonEmpty.filter(([, size]) => partCount(size, total, minPartitions) === 1).map(([key]) => key));
  const unsplitTotal = nonEmpty.filter(([key]) => unsplit.has(key)).reduce((sum, [, size]) => sum + size, 0);
  const splitTotal = total - unsplitTotal;
  const splitMinPartitions = Math.max(minPartitions - unsplit.size, 1);
  // Enough ranges already: splitting would only cost invocations.
  const noSplit = nonEmpty.length >= minPartitions;

  const parts = new Map<string, number>();
  for (const [key, size] of sizes) {
    if (size <= 0) parts.set(key, 0);
    else if (noSplit || unsplit.has(key)) parts.set(key, 1);
    // Capped at the size: Spark would create empty pieces and drop them afterwards.
    else parts.set(key, Math.min(partCount(size, splitTotal, splitMinPartitions), size));
  }
  return parts;
}

/** max(round(size / total x minPartitions), 1), computed exactly. */
function partCount(size: number, total: number, minPartitions: number): number {
  return Math.max(roundMulDiv(size, minPartitions, total), 1);
}
