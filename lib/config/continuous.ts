/**
 * What a stream's mode (micro-batch or continuous) changes for its ranges, in one place: the
 * planner, the processor and the operator commands ask here.
 */
import { segmentRatePerSec } from '../offsets/segment-rate';
import type { StreamConfig } from './schema';

/** Whether the stream runs in continuous mode (resident segments) rather than micro-batches. */
export function isContinuous(stream: StreamConfig): stream is StreamConfig & { continuous: NonNullable<StreamConfig['continuous']> } {
  return stream.continuous !== undefined;
}

/**
 * The lease of the stream's ranges. A micro-batch range is held for the processor's whole time
 * budget and a margin (`processor.leaseMs`); a continuous segment renews a short lease with every
 * commit and heartbeat, so that a segment that dies is replaced within seconds, not minutes.
 */
export function rangeLeaseMs(stream: StreamConfig): number {
  return stream.continuous?.leaseMs ?? stream.processor.leaseMs;
}

/**
 * The records a second one partition of the continuous stream may read while the stream has
 * `partitions` active partitions: `maxRatePerPartition` and its share of `maxOffsetsPerTrigger`
 * as a rate over `triggerIntervalMs` (lib/offsets/segment-rate.ts). Undefined: no limit.
 */
export function partitionRatePerSec(stream: StreamConfig, partitions: number): number | undefined {
  return segmentRatePerSec(
    {
      intervalMs: stream.triggerIntervalMs,
      minRatePerPartition: stream.minRatePerPartition,
      maxRatePerPartition: stream.maxRatePerPartition,
      maxOffsetsPerTrigger: stream.maxOffsetsPerTrigger,
    },
    Math.max(1, partitions),
  );
}
