/**
 * The one way a test waits for something to become true: it probes until the probe yields the awaited
 * value, and fails at a deadline with an error naming what it waited for and what it saw last. A fixed
 * sleep either wastes time or is too short on a loaded machine; a loop without a deadline hangs a run
 * with no word of what it was waiting for; both hide the condition the test depends on.
 */
import { inspect } from 'node:util';

export type WaitForOptions<T> = {
  /** How long to wait in all, the probes' own time included. Default 10 s. */
  timeoutMs?: number;
  /** The pause between two probes. Default 100 ms. */
  intervalMs?: number;
  /** Whether a probed value is the awaited one. Default: any value but `undefined` and `false`. */
  until?: (value: T) => boolean;
};

/** What one probe gave: a value, an error, or nothing before the deadline. */
type Outcome<T> = { kind: 'value'; value: T } | { kind: 'error'; error: unknown } | { kind: 'late' };

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_INTERVAL_MS = 100;
/** Long enough to show a value's shape, short enough for a one-line failure. */
const MAX_SHOWN_CHARS = 600;

const isAwaited = (value: unknown): boolean => value !== undefined && value !== false;

/**
 * Probes `probe` until its value is the awaited one (`options.until`; by default any value but
 * `undefined` and `false`) and returns that value. A probe that throws (an `expect` not yet met, a
 * broker not yet ready) counts as "not yet". Past `timeoutMs` it rejects with
 * `timed out after <ms> ms waiting for <what>; last value: ...` (or `last error: ...`, the error also
 * as `cause`); `what` names the condition, e.g. "the topic to be deleted". A probe still running at
 * the deadline is not awaited further: the deadline holds even when the probe hangs.
 */
export function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  options: WaitForOptions<T> & { until: (value: T) => boolean },
): Promise<T>;
export function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options?: Omit<WaitForOptions<T>, 'until'>,
): Promise<T>;
export async function waitFor<T>(what: string, probe: () => T | Promise<T>, options: WaitForOptions<T> = {}): Promise<T> {
  const { timeoutMs = DEFAULT_TIMEOUT_MS, intervalMs = DEFAULT_INTERVAL_MS, until = isAwaited } = options;
  const deadline = Date.now() + timeoutMs;
  let last: Outcome<T> | undefined;
  for (;;) {
    const outcome = await probeBefore(probe, deadline);
    if (outcome.kind === 'value' && until(outcome.value)) return outcome.value;
    const left = deadline - Date.now();
    if (outcome.kind === 'late' || left <= 0) throw timedOut(what, timeoutMs, last, outcome);
    last = outcome;
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, left)));
  }
}

/** Runs one probe, giving up on it at the deadline (it keeps running; its result is dropped). */
async function probeBefore<T>(probe: () => T | Promise<T>, deadline: number): Promise<Outcome<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Outcome<T>>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'late' }), Math.max(0, deadline - Date.now()));
  });
  // Settles either way, so a probe that fails after the deadline is no unhandled rejection.
  const ran = (async () => probe())().then(
    (value): Outcome<T> => ({ kind: 'value', value }),
    (error: unknown): Outcome<T> => ({ kind: 'error', error }),
  );
  try {
    return await Promise.race([ran, late]);
  } finally {
    clearTimeout(timer);
  }
}

function timedOut<T>(what: string, timeoutMs: number, before: Outcome<T> | undefined, final: Outcome<T>): Error {
  // A late final probe saw nothing: what the one before it saw is the last news.
  const seen = final.kind === 'late' ? before : final;
  const parts = [`timed out after ${timeoutMs} ms waiting for ${what}`];
  if (seen?.kind === 'value') parts.push(`last value: ${show(seen.value)}`);
  if (seen?.kind === 'error') parts.push(`last error: ${reason(seen.error)}`);
  if (final.kind === 'late')
    parts.push(seen ? 'the last probe was still running at the deadline' : 'no probe answered before the deadline');
  const error = new Error(parts.join('; '));
  if (seen?.kind === 'error') error.cause = seen.error;
  return error;
}

const show = (value: unknown): string => clip(inspect(value, { depth: 4, breakLength: Infinity }));

const reason = (error: unknown): string => clip(error instanceof Error ? `${error.name}: ${error.message}` : show(error));

const clip = (text: string): string => (text.length > MAX_SHOWN_CHARS ? `${text.slice(0, MAX_SHOWN_CHARS)}…` : text);
