/**
 * Whether a run should plan a partition now (docs/architecture.md, "Planning, one run", decide:
 * check): Structured Streaming's minOffsetsPerTrigger / maxTriggerDelay, so a trickle of records
 * does not cost one Lambda invocation per planner tick.
 */

/** Why `shouldTrigger` decided as it did (for logs and metrics). */
export type TriggerReason = 'no-lag' | 'min-offsets-reached' | 'max-delay-passed' | 'no-minimum' | 'waiting-for-min-offsets';

/** Spark's default maxTriggerDelay (15 minutes). */
export const DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000;

/** Inputs of `shouldTrigger`; all times are epoch milliseconds. */
export type TriggerInput = {
  /** Offsets waiting to be planned. */
  lag: number;
  /** undefined or <= 0: no minimum, trigger on any lag. */
  minOffsetsPerTrigger?: number;
  /** Longest wait for the minimum; defaults to `DEFAULT_MAX_TRIGGER_DELAY_MS`. */
  maxTriggerDelayMs?: number;
  /** Last time a range was planned; undefined if never. */
  lastTriggerMs?: number;
  /** When the partition was first seen (persisted at discovery). */
  firstSeenMs: number;
  nowMs: number;
};

/** Plan now, or wait for more lag: skip while lag < minOffsetsPerTrigger until maxTriggerDelay has passed. */
export function shouldTrigger(input: TriggerInput): { trigger: boolean; reason: TriggerReason } {
  const { lag, minOffsetsPerTrigger, lastTriggerMs, firstSeenMs, nowMs } = input;
  const maxTriggerDelayMs = input.maxTriggerDelayMs ?? DEFAULT_MAX_TRIGGER_DELAY_MS;
  if (!(lag > 0)) return { trigger: false, reason: 'no-lag' };
  if (minOffsetsPerTrigger === undefined || minOffsetsPerTrigger <= 0) return { trigger: true, reason: 'no-minimum' };
  if (lag >= minOffsetsPerTrigger) return { trigger: true, reason: 'min-offsets-reached' };
  // Spark starts its clock at 0, so its first batch never waits; a partition that was never
  // planned waits from its discovery instead, or a new quiet partition would trigger at once.
  const waitingSinceMs = lastTriggerMs ?? firstSeenMs;
  if (nowMs - waitingSinceMs >= maxTriggerDelayMs) return { trigger: true, reason: 'max-delay-passed' };
  return { trigger: false, reason: 'waiting-for-min-offsets' };
}
