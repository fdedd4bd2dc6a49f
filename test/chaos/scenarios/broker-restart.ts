/**
 * broker-restart: on a private broker (private-kafka.ts) which the streams reach over SASL_SSL with
 * SCRAM, the broker is stopped and started again on the same data dir and port once a seeded number
 * of chunks were handled, while processors read (slow chunks keep them mid-range).
 */
import type { RoundScenario } from '../scenario';

export const brokerRestart = (): RoundScenario => {
  let restart: Promise<void> | undefined;
  let restartMs = 0;
  let restartAfterChunks = 0;
  let chunksHandled = 0;
  /** Invocations running when the restart began, and those of them that still finished their range. */
  const across = { running: 0, done: 0 };
  return {
    knobs: (_base, rng) => {
      restartAfterChunks = 3 + Math.floor(rng() * 4);
      return { handlerDelayMs: 20 };
    },
    hasEvent: true,
    invocation(run) {
      const before = !restart;
      return {
        afterStep(step) {
          const broker = run.opts.broker;
          if (!broker || step !== 'handled' || restart || ++chunksHandled < restartAfterChunks) return;
          // Not awaited: this processor and the others keep reading while the broker goes down.
          const r0 = Date.now();
          across.running = run.tally.inFlight;
          restart = broker.restart().then(() => {
            restartMs = Date.now() - r0;
          });
          restart.catch(() => undefined);
        },
        settled(status) {
          if (before && restart && status === 'done') across.done++;
        },
      };
    },
    async afterRound(run) {
      if (!restart) return;
      // The broker is back before the next planner round (the processors above rode through or failed).
      await restart;
      run.eventDone = true;
    },
    finish(run) {
      const { processorErrors, plannerFailures } = run.tally;
      run.injected = restart
        ? `private broker (streams over SASL_SSL, SCRAM-SHA-512) stopped (SIGTERM) and started again on the same data dir and port after ${restartAfterChunks} handled chunks (stop + start ${restartMs} ms): ${across.running} invocations were reading, ${across.done} of them rode through to done; ${processorErrors} processor invocations failed and were re-dispatched, ${plannerFailures} planner runs failed`
        : 'no restart happened';
      if (!restart) run.problems.push('the broker was never restarted');
    },
  };
};
