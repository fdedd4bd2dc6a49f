/**
 * The planner's clamp (docs/architecture.md, "Planning, one run", decide: clamp): how far each
 * partition's next range may reach. It combines Spark Streaming Direct's rate limit
 * (maxRatePerPartition, backpressure), Structured Streaming's maxOffsetsPerTrigger and a
 * Lambda-specific time budget, taking the tightest.
 */
import { lagOf, requireFinite, requireInteger, requirePartitions } from './internal';
import { splitMaxOffsets } from './rate-split';
import type { OffsetRange, PartitionLag } from './types';

/** Stream-wide limits for one planning run. */
export type ClampLimits = {
  /** Planner trigger interval (Spark's batch duration): rate budgets cover one interval. */
  intervalMs: number;
  /** records/s per partition; undefined or 0 = unlimited. */
  maxRatePerPartition?: number;
  /**
   * records/s floor for rate-based budgets (default 1). Spark uses its minRatePerPartition as a raw
   * record count per batch whatever the batch length; here it really is a rate, so the floor is
   * ceil(minRatePerPartition x interval). With a 1 s interval the two agree.
   */
  minRatePerPartition: number;
  /** Total offsets across all partitions in one run. */
  maxOffsetsPerTrigger?: number;
};

/** A partition to clamp, with its partition-specific budgets. */
export type PartitionClampInput = PartitionLag & {
  /** Backpressure estimate for this partition (records/s), e.g. from `splitRateByLag`. */
  pidRatePerSec?: number;
  /** Max records one processor invocation can finish in time (see `timeBudget`). */
  timeBudget?: number;
};

/** Next range `[from, until)` per partition: the tightest applicable budget, never starving a partition with lag. */
export function clampRanges(partitions: readonly PartitionClampInput[], limits: ClampLimits): Map<string, OffsetRange> {
  requirePartitions(partitions);
  requireFinite('intervalMs', limits.intervalMs, 0, true);
  requireFinite('minRatePerPartition', limits.minRatePerPartition, 0);
  if (limits.maxRatePerPartition !== undefined) requireFinite('maxRatePerPartition', limits.maxRatePerPartition, 0);
  const shares = limits.maxOffsetsPerTrigger === undefined ? undefined : splitMaxOffsets(partitions, limits.maxOffsetsPerTrigger);

  const ranges = new Map<string, OffsetRange>();
  for (const p of partitions) {
    if (p.pidRatePerSec !== undefined) requireFinite(`${p.key} pidRatePerSec`, p.pidRatePerSec, 0);
    if (p.timeBudget !== undefined) requireInteger(`${p.key} timeBudget`, p.timeBudget, 0);
    const lag = lagOf(p);
    const budgets = [rateBudget(p, limits), shares?.get(p.key), p.timeBudget].filter((b) => b !== undefined);
    // Every budget floor can be zero (minRatePerPartition 0, a zero estimate); one offset per run
    // keeps a partition with lag moving so it cannot be starved forever.
    const budget = budgets.length === 0 ? lag : Math.max(Math.min(...budgets), 1);
    // min(lag, budget) before adding: from + budget could pass 2^53 where latest cannot.
    ranges.set(p.key, { from: p.from, until: p.from + Math.min(lag, budget) });
  }
  return ranges;
}

/** Records allowed by rate limits in one interval, or undefined when no rate limit applies. */
function rateBudget(p: PartitionClampInput, limits: ClampLimits): number | undefined {
  const maxRate = limits.maxRatePerPartition !== undefined && limits.maxRatePerPartition > 0 ? limits.maxRatePerPartition : undefined;
  const rate = p.pidRatePerSec === undefined ? maxRate : Math.min(p.pidRatePerSec, maxRate ?? Infinity);
  if (rate === undefined) return undefined;
  // Multiply before dividing so whole-number rates and intervals give exact counts.
  const fromRate = Math.floor((rate * limits.intervalMs) / 1000);
  const floor = Math.ceil((limits.minRatePerPartition * limits.intervalMs) / 1000);
  return Math.max(fromRate, floor);
}
