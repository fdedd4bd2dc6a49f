/** Pure offset math for the planner: no I/O, time always passed in. */
export type { OffsetRange, PartitionLag } from './types';
export { splitMaxOffsets, splitRateByLag } from './rate-split';
export { DEFAULT_PID_PARAMS, computePidRate, initialPidState, type PidObservation, type PidParams, type PidState } from './pid';
export { timeBudget, updateObservedRate } from './time-budget';
export { clampRanges, type ClampLimits, type PartitionClampInput } from './clamp';
export { DEFAULT_MAX_TRIGGER_DELAY_MS, shouldTrigger, type TriggerInput, type TriggerReason } from './trigger';
export { partsForMinPartitions, splitRange } from './split';
export { segmentRatePerSec, type SegmentRateLimits } from './segment-rate';
