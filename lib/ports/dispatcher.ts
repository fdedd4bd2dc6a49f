/** Port: hands planned ranges to processors (Lambda async Invoke, or in-process locally). */
import type { RangePayload, RangesPayload } from '../ranges';

export type DispatchResult = { ok: true } | { ok: false; error: string };

/** How ranges go to processors: one invocation each, or several small ones to an invocation. */
export type DispatchOptions = {
  /**
   * The invocations, as lists of indexes into the ranges (each index once); a list of one is that
   * range's own invocation. Unset: one invocation per range.
   */
  invocations?: number[][];
};

export type Dispatcher = {
  /**
   * Dispatch the ranges, one invocation per list of `opts.invocations`; a failure of one never stops
   * the others. Results are per range, in input order (a range shares its invocation's result).
   */
  dispatch(ranges: RangePayload[], opts?: DispatchOptions): Promise<DispatchResult[]>;
};

/** The invocations of a dispatch: each range alone unless `opts` groups them. */
export function invocationsOf(count: number, opts?: DispatchOptions): number[][] {
  return opts?.invocations ?? Array.from({ length: count }, (_, i) => [i]);
}

/** The payload of one invocation: a range alone as it always was, several as `{stream, ranges}`. */
export function invocationPayload(ranges: readonly RangePayload[]): RangePayload | RangesPayload {
  if (ranges.length === 1) return ranges[0] as RangePayload;
  return { stream: (ranges[0] as RangePayload).stream, ranges: ranges.map(({ stream: _s, ...r }) => r) };
}
