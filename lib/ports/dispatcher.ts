/** Port: hands one planned range to a processor (Lambda async Invoke, or in-process locally). */
import type { RangePayload } from '../ranges';

export type DispatchResult = { ok: true } | { ok: false; error: string };

export type Dispatcher = {
  /** Dispatch each range; a failure of one never stops the others. Results are in input order. */
  dispatch(ranges: RangePayload[]): Promise<DispatchResult[]>;
};
