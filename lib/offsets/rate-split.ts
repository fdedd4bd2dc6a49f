/**
 * Dividing a stream-wide limit among partitions in proportion to their lag, as both Spark Kafka
 * sources do: Structured Streaming for `maxOffsetsPerTrigger` (a count) and the DStream Direct
 * source for the backpressure rate (records/s).
 */
import { floorMulDiv, lagOf, requireFinite, requireInteger, requirePartitions } from './internal';
import type { PartitionLag } from './types';

/** Per-partition offset budget for one run: `maxOffsetsPerTrigger` split by lag, tiny shares rounded up. */
export function splitMaxOffsets(partitions: readonly PartitionLag[], maxOffsetsPerTrigger: number): Map<string, number> {
  requirePartitions(partitions);
  requireInteger('maxOffsetsPerTrigger', maxOffsetsPerTrigger, 1);
  const total = partitions.reduce((sum, p) => sum + lagOf(p), 0);
  const budgets = new Map<string, number>();
  for (const p of partitions) {
    const size = lagOf(p);
    if (size === 0 || total <= maxOffsetsPerTrigger) {
      budgets.set(p.key, size);
      continue;
    }
    // Exact floor(limit * size / total). Spark computes `limit * (size / total)` in doubles, which
    // can land just under an integer (100 * (58 / 200) = 28.999...) and floor one short.
    const share = floorMulDiv(maxOffsetsPerTrigger, size, total);
    // A share below one would starve a small partition for as long as a big one has lag; Spark
    // rounds it up to 1, letting the total exceed the limit by at most one per such partition.
    budgets.set(p.key, share === 0 ? 1 : share);
  }
  return budgets;
}

/** Per-partition rate (records/s): a stream-wide rate (e.g. the PID estimate) split by lag, as Spark's Direct stream does. */
export function splitRateByLag(partitions: readonly PartitionLag[], totalRatePerSec: number): Map<string, number> {
  requirePartitions(partitions);
  requireFinite('totalRatePerSec', totalRatePerSec, 0);
  const totalLag = partitions.reduce((sum, p) => sum + lagOf(p), 0);
  const rates = new Map<string, number>();
  for (const p of partitions) {
    // Fractional rates are fine here: the clamp floors rate x interval into a count.
    rates.set(p.key, totalLag === 0 ? 0 : (lagOf(p) / totalLag) * totalRatePerSec);
  }
  return rates;
}
