/** minOffsetsPerTrigger / maxTriggerDelay: skip small lags until the delay has passed. */
import fc from 'fast-check';
import { DEFAULT_MAX_TRIGGER_DELAY_MS, shouldTrigger, type TriggerInput, type TriggerReason } from '../../../lib/offsets';

const MIN = 60_000;

describe('shouldTrigger', () => {
  it.each<{ name: string; input: TriggerInput; trigger: boolean; reason: TriggerReason }>([
    {
      name: 'lag 0 -> skip',
      input: { lag: 0, minOffsetsPerTrigger: 10, lastTriggerMs: 0, firstSeenMs: 0, nowMs: 99 * MIN },
      trigger: false,
      reason: 'no-lag',
    },
    { name: 'lag -3 (truncated) -> skip', input: { lag: -3, firstSeenMs: 0, nowMs: 0 }, trigger: false, reason: 'no-lag' },
    { name: 'lag 1, no minimum -> plan', input: { lag: 1, firstSeenMs: 0, nowMs: 0 }, trigger: true, reason: 'no-minimum' },
    {
      name: 'lag 1, minimum 0 -> plan',
      input: { lag: 1, minOffsetsPerTrigger: 0, firstSeenMs: 0, nowMs: 0 },
      trigger: true,
      reason: 'no-minimum',
    },
    {
      name: 'lag 100 >= minimum 100 -> plan',
      input: { lag: 100, minOffsetsPerTrigger: 100, lastTriggerMs: 0, firstSeenMs: 0, nowMs: 1 },
      trigger: true,
      reason: 'min-offsets-reached',
    },
    {
      name: 'lag 99 < 100, 14 min since last trigger (default 15 min) -> wait',
      input: { lag: 99, minOffsetsPerTrigger: 100, lastTriggerMs: 0, firstSeenMs: 0, nowMs: 14 * MIN },
      trigger: false,
      reason: 'waiting-for-min-offsets',
    },
    {
      name: 'lag 99 < 100, exactly 15 min since last trigger -> plan',
      input: { lag: 99, minOffsetsPerTrigger: 100, lastTriggerMs: 0, firstSeenMs: 0, nowMs: 15 * MIN },
      trigger: true,
      reason: 'max-delay-passed',
    },
    {
      name: 'lag 5 < 100, 2 min since last trigger, delay 1 min -> plan',
      input: { lag: 5, minOffsetsPerTrigger: 100, maxTriggerDelayMs: MIN, lastTriggerMs: 10 * MIN, firstSeenMs: 0, nowMs: 12 * MIN },
      trigger: true,
      reason: 'max-delay-passed',
    },
    {
      name: 'never triggered, first seen 30 s ago, delay 1 min -> wait',
      input: { lag: 5, minOffsetsPerTrigger: 100, maxTriggerDelayMs: MIN, firstSeenMs: 90_000, nowMs: 120_000 },
      trigger: false,
      reason: 'waiting-for-min-offsets',
    },
    {
      name: 'never triggered, first seen 1 min ago, delay 1 min -> plan',
      input: { lag: 5, minOffsetsPerTrigger: 100, maxTriggerDelayMs: MIN, firstSeenMs: 60_000, nowMs: 120_000 },
      trigger: true,
      reason: 'max-delay-passed',
    },
    {
      name: 'last trigger wins over first seen: first seen 1 h ago, last trigger 10 s ago -> wait',
      input: { lag: 5, minOffsetsPerTrigger: 100, maxTriggerDelayMs: MIN, lastTriggerMs: 3_590_000, firstSeenMs: 0, nowMs: 3_600_000 },
      trigger: false,
      reason: 'waiting-for-min-offsets',
    },
    {
      name: 'clock behind the last trigger -> wait',
      input: { lag: 5, minOffsetsPerTrigger: 100, maxTriggerDelayMs: MIN, lastTriggerMs: 10 * MIN, firstSeenMs: 0, nowMs: 5 * MIN },
      trigger: false,
      reason: 'waiting-for-min-offsets',
    },
  ])('$name', ({ input, trigger, reason }) => {
    expect(shouldTrigger(input)).toEqual({ trigger, reason });
  });

  it("defaults maxTriggerDelay to Spark's 15 minutes", () => {
    expect(DEFAULT_MAX_TRIGGER_DELAY_MS).toBe(15 * MIN);
  });

  it('never waits longer than maxTriggerDelay once there is lag', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 2000 }),
        fc.integer({ min: 0, max: 3_600_000 }),
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: 0, max: 7_200_000 }),
        (lag, minOffsetsPerTrigger, maxTriggerDelayMs, lastTriggerMs, elapsedMs) => {
          const decision = shouldTrigger({
            lag,
            minOffsetsPerTrigger,
            maxTriggerDelayMs,
            lastTriggerMs,
            firstSeenMs: 0,
            nowMs: lastTriggerMs + elapsedMs,
          });
          if (elapsedMs >= maxTriggerDelayMs || lag >= minOffsetsPerTrigger) expect(decision.trigger).toBe(true);
          else expect(decision).toEqual({ trigger: false, reason: 'waiting-for-min-offsets' });
        },
      ),
    );
  });
});
