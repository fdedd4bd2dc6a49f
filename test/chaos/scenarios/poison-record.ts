/** poison-record: every 37th record is not JSON; running-totals rejects it and it must be dead-lettered. */
import type { RoundScenario } from '../scenario';

const POISON_EVERY = 37;

export const poisonRecord = (): RoundScenario => ({
  knobs: (base) => ({ poisonEvery: POISON_EVERY, config: { ...base.config, maxAttempts: 3 } }),
  allows: { deadLetters: true },
  finish(run) {
    run.injected = `every ${POISON_EVERY}th record is not JSON (running-totals rejects it)`;
  },
  check(run, f) {
    const poison = run.produced.filter((r) => r.poison).length;
    if (f.deadLetters !== poison) run.problems.push(`expected ${poison} dead letters, found ${f.deadLetters}`);
  },
});
