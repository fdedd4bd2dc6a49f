/**
 * processor-kill: half the processor invocations (12 at most) are killed at a seeded point (a
 * processor step, or after the handler returned, before the commit); nothing a killed invocation
 * sends afterwards is written, so its range is retried by the system.
 */
import type { RoundScenario } from '../scenario';

export const processorKill = (): RoundScenario => ({
  knobs: () => ({ killProb: 0.5 }),
  finish(run) {
    const { processorKills, killedAt, killedInvocations } = run.tally;
    run.injected = `${processorKills} processor kills at seeded points (${[...new Set(killedAt)].sort().join(', ')}); ledger writes stop at the kill`;
    // Without a kill this is a baseline run: it must not pass as one.
    if (!processorKills || killedInvocations !== processorKills)
      run.problems.push(`${processorKills} processor kills fired, ${killedInvocations} invocations ended killed: the kill did not fire`);
  },
});
