/**
 * Clean-ups that must run however a tool ends (the benchmarks, the chaos soak): each is registered
 * around the work it cleans up after and runs once, from that work's `finally` or, on Ctrl-C or
 * SIGTERM, from the signal handler, whichever comes first. The handler runs the pending ones,
 * newest first, then exits 130: without it Node would exit at once and leave everything behind.
 */
import type { EventEmitter } from 'node:events';

export type ExitCleanups = {
  /** Runs `body`, then `cleanup` (also when `body` throws); a signal meanwhile runs `cleanup` first. */
  around<T>(cleanup: () => Promise<void>, body: () => Promise<T>): Promise<T>;
  /** Runs every registered clean-up not yet run, newest first; one that throws does not stop the others. */
  runPending(): Promise<void>;
};

/** A registry of clean-ups (one per process: see `exitCleanups`; tests make their own). */
export function createExitCleanups(): ExitCleanups {
  const pending: Array<() => Promise<void>> = [];
  return {
    async around(cleanup, body) {
      let running: Promise<void> | undefined;
      const once = (): Promise<void> => (running ??= cleanup());
      pending.push(once);
      try {
        return await body();
      } finally {
        await once();
        pending.splice(pending.indexOf(once), 1);
      }
    },
    async runPending() {
      for (const once of [...pending].reverse()) await once().catch(() => undefined);
    },
  };
}

/** The process's clean-ups: a signal ends the whole process, so one registry serves every tool in it. */
export const exitCleanups = createExitCleanups();

/**
 * On the first SIGINT or SIGTERM: says so, runs the pending clean-ups, then `exit(130)`; a second
 * signal exits at once. `interrupted()` tells the tool not to report the failures its interrupted
 * work may throw meanwhile.
 */
export function cleanUpOnSignals(
  cleanups: ExitCleanups,
  proc: Pick<EventEmitter, 'on'>,
  log: (line: string) => void,
  exit: (code: number) => void,
): { interrupted(): boolean } {
  let signalled = false;
  const onSignal = (signal: string): void => {
    if (signalled) {
      log(`${signal} again: exiting without finishing the clean-up`);
      exit(130);
      return;
    }
    signalled = true;
    log(`${signal}: cleaning up before exiting (again to exit at once)`);
    void cleanups.runPending().finally(() => exit(130));
  };
  proc.on('SIGINT', () => onSignal('SIGINT'));
  proc.on('SIGTERM', () => onSignal('SIGTERM'));
  return { interrupted: () => signalled };
}
