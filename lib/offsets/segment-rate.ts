/**
 * The rate limit of a continuous segment (docs/architecture.md, "Continuous mode"): there is no
 * range to clamp, so the micro-batch limits become rates over time. `maxRatePerPartition` stays a
 * per-partition rate; the stream's `maxOffsetsPerTrigger` per trigger interval becomes a stream rate,
 * shared equally by the stream's active partitions (a segment runs for minutes, so a share by the lag
 * of one moment, as the clamp's, would outlive the lag it was computed from).
 */
import { requireFinite, requireInteger } from './internal';

/** A continuous stream's rate limits, as configured. */
export type SegmentRateLimits = {
  /** Planner trigger interval: `maxOffsetsPerTrigger` is spread over it. */
  intervalMs: number;
  /** records/s per partition; undefined = unlimited. */
  maxRatePerPartition?: number;
  /** records/s floor of a partition's share, so that no partition starves under a small stream rate. */
  minRatePerPartition: number;
  /** records per trigger interval over the whole stream; undefined = unlimited. */
  maxOffsetsPerTrigger?: number;
};

/**
 * The records a second one of `partitions` active partitions may read: the tighter of
 * `maxRatePerPartition` and its equal share of the stream rate (floored by `minRatePerPartition`).
 * Undefined when neither limit is set.
 */
export function segmentRatePerSec(limits: SegmentRateLimits, partitions: number): number | undefined {
  requireFinite('intervalMs', limits.intervalMs, 0, true);
  requireFinite('minRatePerPartition', limits.minRatePerPartition, 0);
  requireInteger('partitions', partitions, 1);
  const streamShare =
    limits.maxOffsetsPerTrigger === undefined
      ? undefined
      : Math.max(limits.minRatePerPartition, (limits.maxOffsetsPerTrigger * 1000) / limits.intervalMs / partitions);
  const rates = [limits.maxRatePerPartition, streamShare].filter((r): r is number => r !== undefined);
  return rates.length ? Math.min(...rates) : undefined;
}

/**
 * How many partitions share a continuous stream's rate: its partitions active in the ledger, at
 * least one. The planner counts them for the segments it starts, a segment for its successor.
 */
export function ratePartitions(partitions: ReadonlyArray<{ status: string }>): number {
  return Math.max(1, partitions.filter((p) => p.status === 'active').length);
}
