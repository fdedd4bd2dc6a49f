/** Timestamps and offsets as operators type them on the command line. */
import { ValidationError } from '../errors';
import { invalidTimeMessage } from './messages';

const RELATIVE = /^-(\d+)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Epoch milliseconds from `2024-05-01T12:00:00Z` (ISO 8601), `@1714564800000` (epoch ms), `now`, or
 * `-15m` / `-2h` / `-1d` (relative to `nowMs`). A bare number is refused: it reads as an offset.
 */
export function parseTimestamp(text: string, nowMs: number, what = 'timestamp'): number {
  const t = text.trim();
  if (t === 'now') return nowMs;
  const rel = RELATIVE.exec(t);
  if (rel) return nowMs - Number(rel[1]) * (UNIT_MS[rel[2] as string] as number);
  if (/^@\d{1,16}$/.test(t)) return Number(t.slice(1));
  // ISO dates only: Date.parse also accepts forms like "1" or "May 1", which are too easy to mistype.
  if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(t)) {
    const ms = Date.parse(t.includes('T') || t.includes(' ') ? t : `${t}T00:00:00Z`);
    if (Number.isFinite(ms)) return ms;
  }
  throw new ValidationError(invalidTimeMessage(what, text));
}

/** A non-negative whole number as typed (no sign, no exponent, no blanks). */
export function parseWhole(text: string, what: string): number {
  if (!/^\d{1,16}$/.test(text.trim())) throw new ValidationError(`invalid ${what} "${text}": expected a whole number >= 0`);
  const n = Number(text.trim());
  if (!Number.isSafeInteger(n)) throw new ValidationError(`invalid ${what} "${text}": too large`);
  return n;
}
