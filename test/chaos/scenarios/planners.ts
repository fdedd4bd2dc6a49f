/**
 * planners-2 and planners-3: 2 or 3 one-shot planner runs of each stream at once every round,
 * beside planner loops whose schedule is delivered 2 or 3 times (test/chaos/loops.ts).
 */
import type { RoundScenario } from '../scenario';

const planners = (n: number) => (): RoundScenario => ({
  knobs: () => ({ planners: n }),
  finish(run, loops) {
    run.injected = `${n} one-shot planner runs at once every round, beside ${loops?.injected}`;
  },
});

export const planners2 = planners(2);
export const planners3 = planners(3);
