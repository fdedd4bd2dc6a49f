/** Dispatcher adapters for the local runtime, tests and benchmarks. */
import { invocationPayload, invocationsOf, type Dispatcher } from '../ports/dispatcher';
import type { RangePayload, RangesPayload } from '../ranges';

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
 * Runs the processor in this process for each invocation (one range, or several small ones), like
 * Lambda's async invoke: dispatch returns at once, and a processor failure is reported to
 * `onError`, never to the planner. At most `maxConcurrency` processors run at once, as reserved
 * concurrency caps a Lambda; the others wait in a queue, in dispatch order (a range already waiting
 * is not queued twice: both would carry the same range, and the second could only find it done or held).
 */
export function createInProcessDispatcher(
  processInvocation: (payload: RangePayload | RangesPayload) => Promise<unknown>,
  onError: (payload: RangePayload | RangesPayload, err: unknown) => void = () => undefined,
  opts: { maxConcurrency?: number } = {},
): InProcessDispatcher {
  const limit = Math.max(1, opts.maxConcurrency ?? DEFAULT_LOCAL_CONCURRENCY);
  // A plain FIFO with de-duplication and drop-on-shutdown: small enough that a queue library
  // (p-queue and friends are ESM-only, and none de-duplicates) would not save code.
  const waiting = new Map<string, RangePayload[]>();
  const waitingRanges = new Set<string>();
  const running = new Set<Promise<void>>();
  const settled: Array<() => void> = [];
  const notify = () => {
    if (running.size || waiting.size) return;
    for (const f of settled.splice(0)) f();
  };
  const pump = (): void => {
    while (running.size < limit && waiting.size) {
      const [key, ranges] = waiting.entries().next().value as [string, RangePayload[]];
      waiting.delete(key);
      for (const r of ranges) waitingRanges.delete(rangeId(r));
      const payload = invocationPayload(ranges);
      const p: Promise<void> = Promise.resolve()
        .then(() => processInvocation(payload))
        .then(
          () => undefined,
          (err: unknown) => onError(payload, err),
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
    async dispatch(ranges, dispatchOpts) {
      for (const indexes of interleaved(ranges, invocationsOf(ranges.length, dispatchOpts))) {
        const fresh = indexes.map((i) => ranges[i] as RangePayload).filter((r) => !waitingRanges.has(rangeId(r)));
        if (!fresh.length) continue;
        for (const r of fresh) waitingRanges.add(rangeId(r));
        waiting.set(fresh.map(rangeId).join(' '), fresh);
      }
      pump();
      return ranges.map(() => ({ ok: true as const }));
    },
    idle() {
      if (!running.size && !waiting.size) return Promise.resolve();
      return new Promise<void>((r) => settled.push(r));
    },
    inFlight: () => running.size,
    queued: () => [...waiting.values()].flat(),
    dropQueued() {
      const n = waitingRanges.size;
      waiting.clear();
      waitingRanges.clear();
      notify();
      return n;
    },
  };
}

/**
 * The invocations of one dispatch, one range per partition at a time (the invocations holding each
 * partition's first range, then its second, ...). A split partition's ranges come in offset order;
 * queued one after the other they would run side by side and finish out of order, each then
 * finishing without advancing the partition (a second transaction) and leaving the planner to
 * repair its committed offset. Spread out, each usually finishes before the next one of its
 * partition starts.
 */
function interleaved(ranges: readonly RangePayload[], invocations: number[][]): number[][] {
  const round = new Map<number[], number>();
  const seen = new Map<string, number>();
  for (const inv of invocations) {
    let r = 0;
    for (const i of inv) {
      const p = ranges[i] as RangePayload;
      const k = `${p.stream}/${p.topic}/${p.partition}`;
      r = Math.max(r, seen.get(k) ?? 0);
      seen.set(k, (seen.get(k) ?? 0) + 1);
    }
    round.set(inv, r);
  }
  return [...invocations].sort((a, b) => (round.get(a) as number) - (round.get(b) as number));
}

export type RecordingDispatcher = Dispatcher & {
  /** The ranges dispatched, in order. */
  dispatched: RangePayload[];
  /** The invocations dispatched, each its ranges. */
  invocations: RangePayload[][];
  failNext(n: number, error?: string): void;
};

/** Records dispatches without running anything (benchmarks, planner tests); can simulate failures (per invocation). */
export function createRecordingDispatcher(): RecordingDispatcher {
  const dispatched: RangePayload[] = [];
  const invocations: RangePayload[][] = [];
  let failures = 0;
  let failure = 'simulated dispatch failure';
  return {
    dispatched,
    invocations,
    failNext(n, error) {
      failures = n;
      if (error) failure = error;
    },
    async dispatch(ranges, opts) {
      const out = new Array<{ ok: true } | { ok: false; error: string }>(ranges.length);
      for (const indexes of invocationsOf(ranges.length, opts)) {
        const failed = failures > 0;
        if (failed) failures--;
        else invocations.push(indexes.map((i) => ranges[i] as RangePayload));
        for (const i of indexes) {
          out[i] = failed ? { ok: false as const, error: failure } : { ok: true as const };
          if (!failed) dispatched.push(ranges[i] as RangePayload);
        }
      }
      return out;
    },
  };
}
