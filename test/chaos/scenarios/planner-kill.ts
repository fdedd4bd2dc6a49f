/**
 * planner-kill: planner loops only (test/chaos/loops.ts), no one-shot runs; two of them are killed
 * mid-loop at a seeded tick and step, and the next delivery must take each over once its lease expired.
 */
import type { RoundScenario } from '../scenario';

export const plannerKill = (): RoundScenario => ({
  knobs: () => ({ planners: 0 }),
  finish(run, loops) {
    run.injected = loops?.injected ?? '';
    const kills = loops?.kills ?? { planned: 0, fired: 0 };
    // Without a kill this is a run of planner loops alone: it must not pass as planner-kill.
    if (!kills.fired || kills.fired !== kills.planned)
      run.problems.push(`${kills.fired} loop kills fired, ${kills.planned} planned: the kill did not fire`);
  },
});
