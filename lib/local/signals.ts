/**
 * Ctrl-C (SIGINT) and SIGTERM for `npm start`. While the local stack and the demo start up, the
 * first signal is acknowledged at once with a line (starting a broker takes seconds, and a silent
 * terminal reads as a hang) and start-up stops after its current step; a second one exits at once.
 * Once running, the first signal stops cleanly and the second aborts the processors (at a chunk
 * boundary); the demo itself reports what it does.
 */
import type { EventEmitter } from 'node:events';

export type StartSignals = {
  /** Aborted by the first signal: stop cleanly. */
  stop: AbortSignal;
  /** Aborted by the second signal once running: abort the processors. */
  hard: AbortSignal;
  /** Start-up is over; from now on the demo reports its own stopping. */
  running(): void;
};

/** Installs the handlers on `proc` (the process); `exit` ends the process (injected by tests). */
export function handleStartSignals(
  proc: Pick<EventEmitter, 'on'>,
  err: (text: string) => void,
  exit: (code: number) => void,
): StartSignals {
  const stop = new AbortController();
  const hard = new AbortController();
  let starting = true;
  const onSignal = (): void => {
    if (!stop.signal.aborted) {
      stop.abort();
      if (starting) err('\nstopping: interrupted during start-up; exiting after the current step (Ctrl-C again to exit now)\n');
      return;
    }
    if (starting) {
      err('stopped during start-up\n');
      exit(130);
      return;
    }
    hard.abort();
  };
  proc.on('SIGINT', onSignal);
  proc.on('SIGTERM', onSignal);
  return {
    stop: stop.signal,
    hard: hard.signal,
    running: () => {
      starting = false;
    },
  };
}
