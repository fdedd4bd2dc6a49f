/**
 * The streams' `handler.environment` in a local run, where there is no function configuration to
 * carry it: applied to the process's environment, where handler modules read it. A variable already
 * set (in the shell) keeps its value, so a local override wins over the config.
 */
import type { StreamConfig } from '../config/schema';
import { handlerEnvironment } from '../config/handler-access';

export type AppliedEnvironment = {
  /** Names set from the config. */
  set: string[];
  /** Names the config declares that were already set, and kept. */
  kept: string[];
  /** Removes the variables this set (the run is over). */
  restore(): void;
};

/** Sets every handler variable of `streams` that `target` does not have yet. */
export function applyHandlerEnvironment(streams: StreamConfig[], target: NodeJS.ProcessEnv): AppliedEnvironment {
  const set: string[] = [];
  const kept: string[] = [];
  for (const [name, value] of Object.entries(handlerEnvironment(streams))) {
    if (target[name] !== undefined) {
      kept.push(name);
      continue;
    }
    target[name] = value;
    set.push(name);
  }
  return {
    set,
    kept,
    restore() {
      for (const name of set) delete target[name];
    },
  };
}

/** The run's log line about them, or undefined when no stream declares any. */
export function appliedEnvironmentLine(applied: Pick<AppliedEnvironment, 'set' | 'kept'>): string | undefined {
  const parts = [
    ...(applied.set.length ? [`${applied.set.join(', ')} from the config`] : []),
    ...(applied.kept.length ? [`${applied.kept.join(', ')} kept from the shell`] : []),
  ];
  return parts.length ? `handler environment: ${parts.join('; ')}` : undefined;
}
