/** Dispatcher adapters for the local runtime, tests and benchmarks. */
import type { Dispatcher } from '../ports/dispatcher';
import type { RangePayload } from '../ranges';

export type InProcessDispatcher = Dispatcher & {
  /** Resolves when every processor started so far has finished (tests, graceful shutdown). */
  idle(): Promise<void>;
  inFlight(): number;
};

/**
 * Runs the processor in this process for each range, like Lambda's async invoke: dispatch returns
 * at once, and a processor failure is reported to `onError`, never to the planner.
 */
export function createInProcessDispatcher(
  processRange: (range: RangePayload) => Promise<unknown>,
  onError: (range: RangePayload, err: unknown) => void = () => undefined,
): InProcessDispatcher {
  const running = new Set<Promise<void>>();
  return {
    async dispatch(ranges) {
      for (const range of ranges) {
        const p: Promise<void> = Promise.resolve()
          .then(() => processRange(range))
          .then(
            () => undefined,
            (err: unknown) => onError(range, err),
          )
          .finally(() => running.delete(p));
        running.add(p);
      }
      return ranges.map(() => ({ ok: true as const }));
    },
    async idle() {
      while (running.size) await Promise.all([...running]);
    },
    inFlight: () => running.size,
  };
}

export type RecordingDispatcher = Dispatcher & { dispatched: RangePayload[]; failNext(n: number, error?: string): void };

/** Records dispatches without running anything (benchmarks, planner tests); can simulate failures. */
export function createRecordingDispatcher(): RecordingDispatcher {
  const dispatched: RangePayload[] = [];
  let failures = 0;
  let failure = 'simulated dispatch failure';
  return {
    dispatched,
    failNext(n, error) {
      failures = n;
      if (error) failure = error;
    },
    async dispatch(ranges) {
      return ranges.map((r) => {
        if (failures > 0) {
          failures--;
          return { ok: false as const, error: failure };
        }
        dispatched.push(r);
        return { ok: true as const };
      });
    },
  };
}
