/** Dispatcher adapters for the local runtime, tests and benchmarks. */
import type { Dispatcher } from '../ports/dispatcher';
import type { RangePayload } from '../ranges';

export type InProcessDispatcher = Dispatcher & {
  /** Resolves when every processor started or queued so far has finished (tests, graceful shutdown). */
  idle(): Promise<void>;
  /** Processors running now. */
  inFlight(): number;
  /** The ranges dispatched and waiting for a free slot, in dispatch order. */
  queued(): RangePayload[];
  /** Forgets the queued dispatches (shutdown): their ranges stay recorded as sent, and a later planner run sends them again. */
  dropQueued(): number;
};

/** Processors the local runtime runs at once unless told otherwise (its stand-in for reserved concurrency). */
export const DEFAULT_LOCAL_CONCURRENCY = 16;

const rangeId = (r: RangePayload): string => `${r.stream}/${r.topic}/${r.partition}/${r.incarnation ?? 0}/${r.from}/${r.until}`;

/**
 * Runs the processor in this process for each range, like Lambda's async invoke: dispatch returns
 * at once, and a processor failure is reported to `onError`, never to the planner. At most
 * `maxConcurrency` processors run at once, as reserved concurrency caps a Lambda; the others wait
 * in a queue, in dispatch order (a range already waiting is not queued twice: both would carry the
 * same payload, and the second could only find the range done or held).
 */
export function createInProcessDispatcher(
  processRange: (range: RangePayload) => Promise<unknown>,
  onError: (range: RangePayload, err: unknown) => void = () => undefined,
  opts: { maxConcurrency?: number } = {},
): InProcessDispatcher {
  const limit = Math.max(1, opts.maxConcurrency ?? DEFAULT_LOCAL_CONCURRENCY);
  // A plain FIFO with de-duplication and drop-on-shutdown: small enough that a queue library
  // (p-queue and friends are ESM-only, and none de-duplicates) would not save code.
  const waiting = new Map<string, RangePayload>();
  const running = new Set<Promise<void>>();
  const settled: Array<() => void> = [];
  const notify = () => {
    if (running.size || waiting.size) return;
    for (const f of settled.splice(0)) f();
  };
  const pump = (): void => {
    while (running.size < limit && waiting.size) {
      const [key, range] = waiting.entries().next().value as [string, RangePayload];
      waiting.delete(key);
      const p: Promise<void> = Promise.resolve()
        .then(() => processRange(range))
        .then(
          () => undefined,
          (err: unknown) => onError(range, err),
        )
        .finally(() => {
          running.delete(p);
          pump();
          notify();
        });
      running.add(p);
    }
  };
  return {
    async dispatch(ranges) {
      for (const range of interleaved(ranges)) if (!waiting.has(rangeId(range))) waiting.set(rangeId(range), range);
      pump();
      return ranges.map(() => ({ ok: true as const }));
    },
    idle() {
      if (!running.size && !waiting.size) return Promise.resolve();
      return new Promise<void>((r) => settled.push(r));
    },
    inFlight: () => running.size,
    queued: () => [...waiting.values()],
    dropQueued() {
      const n = waiting.size;
      waiting.clear();
      notify();
      return n;
    },
  };
}

/**
 * The ranges of one dispatch, one per partition at a time (the first range of every partition, then
 * the second, ...). A split partition's ranges come in offset order; queued one after the other they
 * would run side by side and finish out of order, each then finishing without advancing the
 * partition (a second transaction) and leaving the planner to repair its committed offset. Spread
 * out, each usually finishes before the next one of its partition starts.
 */
function interleaved(ranges: readonly RangePayload[]): RangePayload[] {
  const byPartition = new Map<string, RangePayload[]>();
  for (const r of ranges) {
    const k = `${r.stream}/${r.topic}/${r.partition}`;
    const list = byPartition.get(k);
    if (list) list.push(r);
    else byPartition.set(k, [r]);
  }
  const lists = [...byPartition.values()];
  const out: RangePayload[] = [];
  for (let i = 0; out.length < ranges.length; i++) for (const l of lists) if (i < l.length) out.push(l[i] as RangePayload);
  return out;
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
