/**
 * How many records one processor invocation can finish before its Lambda deadline. Planning more
 * than that only makes the processor stop early and leave the remainder to be re-planned.
 */
import { ValidationError } from '../errors';
import { requireFinite } from './internal';

/** Max records per range from the observed processor rate: floor(rate x timeout x safety), at least 1; undefined before any observation. */
export function timeBudget(
  observedRecordsPerSec: number | undefined,
  processorTimeoutMs: number,
  safetyFactor: number,
): number | undefined {
  requireFinite('processorTimeoutMs', processorTimeoutMs, 0, true);
  requireFinite('safetyFactor', safetyFactor, 0, true);
  if (observedRecordsPerSec === undefined) return undefined;
  requireFinite('observedRecordsPerSec', observedRecordsPerSec, 0);
  // Multiply before dividing so whole-number rates and timeouts stay exact.
  const budget = Math.floor((observedRecordsPerSec * processorTimeoutMs * safetyFactor) / 1000);
  // Even a processor that seems stuck gets one record, or the partition could never move again.
  return Math.max(budget, 1);
}

/** Folds one finished range into the observed rate (records/s) as an EWMA; `weight` is the newest sample's share. */
export function updateObservedRate(prev: number | undefined, records: number, durationMs: number, weight = 0.5): number | undefined {
  if (!(weight > 0 && weight <= 1)) throw new ValidationError(`weight must be in (0, 1], got ${weight}`);
  // Empty ranges (compaction gaps, aborted transactions) and zero durations carry no rate information.
  if (!(records > 0 && durationMs > 0) || !Number.isFinite(records) || !Number.isFinite(durationMs)) return prev;
  const sample = (records / durationMs) * 1000;
  return prev === undefined ? sample : weight * sample + (1 - weight) * prev;
}
