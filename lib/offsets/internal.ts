/**
 * Helpers private to lib/offsets (not re-exported): exact integer arithmetic and input checks.
 * Offsets can reach 2^53 - 1, where `a * b / c` in doubles silently loses precision, so shares are
 * computed in BigInt: a budget that is off by one can exceed a limit or drop an offset.
 */
import { ValidationError } from '../errors';
import type { PartitionLag } from './types';

/** floor(a * b / c) for non-negative safe integers a, b and positive c, computed exactly. */
export function floorMulDiv(a: number, b: number, c: number): number {
  return Number((BigInt(a) * BigInt(b)) / BigInt(c));
}

/** round-half-up(a * b / c) for non-negative safe integers a, b and positive c, computed exactly. */
export function roundMulDiv(a: number, b: number, c: number): number {
  const twice = BigInt(c) * 2n;
  return Number((BigInt(a) * BigInt(b) * 2n + BigInt(c)) / twice);
}

/** Throws unless `value` is a safe integer >= `min`. */
export function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ValidationError(`${name} must be an integer >= ${min}, got ${value}`);
  }
}

/** Throws unless `value` is a finite number >= `min` (or > `min` when `exclusive`). */
export function requireFinite(name: string, value: number, min: number, exclusive = false): void {
  const ok = Number.isFinite(value) && (exclusive ? value > min : value >= min);
  if (!ok) throw new ValidationError(`${name} must be a finite number ${exclusive ? '>' : '>='} ${min}, got ${value}`);
}

/** Throws unless every partition has integer offsets and keys are unique (a duplicate would plan twice). */
export function requirePartitions(partitions: readonly PartitionLag[]): void {
  const seen = new Set<string>();
  for (const p of partitions) {
    if (seen.has(p.key)) throw new ValidationError(`duplicate partition key ${p.key}`);
    seen.add(p.key);
    requireInteger(`${p.key} from`, p.from, 0);
    requireInteger(`${p.key} latest`, p.latest, 0);
  }
}

/** Offsets still to plan; 0 when the end offset is at or behind `from` (e.g. after a truncation). */
export function lagOf(p: PartitionLag): number {
  return Math.max(p.latest - p.from, 0);
}

/** ceil(a / b) for a non-negative safe integer a and positive safe integer b, computed exactly. */
export function ceilDiv(a: number, b: number): number {
  return Number((BigInt(a) + BigInt(b) - 1n) / BigInt(b));
}
