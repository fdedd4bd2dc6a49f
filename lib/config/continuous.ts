/**
 * What a stream's mode (micro-batch or continuous) changes for its ranges, in one place: the
 * planner, the processor and the operator commands ask here.
 */
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
