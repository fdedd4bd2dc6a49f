/** duplicate-invoke: every dispatched range is invoked twice at once; the second must find it held or done. */
import type { RoundScenario } from '../scenario';

export const duplicateInvoke = (): RoundScenario => ({
  knobs: () => ({ duplicateInvoke: true }),
  finish(run) {
    const { statuses, invocations, dispatched } = run.tally;
    const met = (statuses['held-elsewhere'] ?? 0) + (statuses['already-done'] ?? 0);
    run.injected = `every dispatched range invoked twice at once (${statuses['held-elsewhere'] ?? 0} held elsewhere, ${statuses['already-done'] ?? 0} already done)`;
    // Without the second invocations this is a baseline run: it must not pass as one.
    if (!dispatched || invocations !== 2 * dispatched)
      run.problems.push(`${invocations} processor invocations of ${dispatched} dispatched ranges: not every range was invoked twice`);
    if (!met) run.problems.push('no second invocation found its range held elsewhere or already done');
  },
});
