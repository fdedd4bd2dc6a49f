/** deadline: invocations get 1.3-1.9 s and 25 ms per chunk, so some stop part-done at their deadline. */
import type { RoundScenario } from '../scenario';

export const deadline = (): RoundScenario => ({
  knobs: (base, rng) => ({
    config: { ...base.config, maxOffsetsPerTrigger: undefined, maxAttempts: 30 },
    handlerDelayMs: 25,
    deadlineMs: () => 1000 + 300 + Math.floor(rng() * 600),
  }),
  finish(run) {
    const { statuses } = run.tally;
    run.injected = `deadline 1.3-1.9 s after start, 25 ms per chunk: ${statuses.partial ?? 0} invocations stopped part-done at the deadline`;
    if (!statuses.partial) run.problems.push('no invocation reached its deadline');
  },
});
