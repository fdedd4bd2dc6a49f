/**
 * The continuous-mode variants of the scenarios that apply to it (docs/architecture.md, "Continuous
 * mode"): the same fault, on streams whose partitions are read by resident segments (short ones, so
 * that a run sees several segments per partition) instead of micro-batches. A segment invocation
 * here has no successor to invoke: it gives its ranges back at its end and the next planner round
 * sends them again, so every round starts segments over (the hand-over itself is in
 * test/integration/continuous.test.ts and bench:latency -- --continuous).
 */
import type { Knobs, RoundScenario } from '../scenario';

/** The variants' names: `continuous-` and the scenario each varies. */
export const CONTINUOUS_VARIANTS = [
  'continuous-processor-kill',
  'continuous-duplicate-invoke',
  'continuous-planner-kill',
  'continuous-dynamodb-faults',
  'continuous-broker-restart',
  'continuous-leader-killed',
] as const;
export type ContinuousVariant = (typeof CONTINUOUS_VARIANTS)[number];

/** Segments of 2 s, commits every 50 ms, a lease of 2 s (a killed segment is replaced within a round or two). */
const CONTINUOUS = { segmentMs: 2_000, commitIntervalMs: 50, leaseMs: 2_000, handoverLeadMs: 500 };

/** The scenario a name varies (itself when it is no variant): what its runner and its loops go by. */
export function variedScenario<N extends string>(name: N): string {
  return name.startsWith('continuous-') ? name.slice('continuous-'.length) : name;
}

/** `base` with its streams continuous: its knobs, the stream config added. */
export function continuous(base: () => RoundScenario): () => RoundScenario {
  return () => {
    const s = base();
    return {
      ...s,
      knobs: (b: Knobs, rng: () => number): Partial<Knobs> => {
        const k = s.knobs?.(b, rng) ?? {};
        return { ...k, config: { ...(k.config ?? b.config), continuous: CONTINUOUS } };
      },
    };
  };
}
