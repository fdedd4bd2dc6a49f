/** Time budget: records one processor invocation can finish before its deadline, and the observed rate behind it. */
import fc from 'fast-check';
import { ValidationError } from '../../../lib/errors';
import { timeBudget, updateObservedRate } from '../../../lib/offsets';

describe('timeBudget', () => {
  it.each([
    { name: '1000 records/s x 60 s x 0.5 -> 30000', rate: 1000, timeoutMs: 60_000, safety: 0.5, expected: 30_000 },
    { name: '333.3 records/s x 900 s x 0.8 -> floor(239976) = 239976', rate: 333.3, timeoutMs: 900_000, safety: 0.8, expected: 239_976 },
    { name: '0.01 records/s x 10 s x 0.5 -> 0.05, raised to 1', rate: 0.01, timeoutMs: 10_000, safety: 0.5, expected: 1 },
    { name: '0 records/s (stuck processor) -> 1', rate: 0, timeoutMs: 10_000, safety: 0.5, expected: 1 },
    { name: 'no observation yet -> undefined', rate: undefined, timeoutMs: 10_000, safety: 0.5, expected: undefined },
  ])('$name', ({ rate, timeoutMs, safety, expected }) => {
    expect(timeBudget(rate, timeoutMs, safety)).toBe(expected);
  });

  it.each<[string, number | undefined, number, number]>([
    ['timeout 0', 100, 0, 0.5],
    ['safety factor 0', 100, 1000, 0],
    ['negative rate', -1, 1000, 0.5],
    ['NaN rate', Number.NaN, 1000, 0.5],
  ])('rejects %s', (_name, rate, timeoutMs, safety) => {
    expect(() => timeBudget(rate, timeoutMs, safety)).toThrow(ValidationError);
  });

  it('is an integer >= 1 that grows with the rate', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        fc.integer({ min: 1, max: 900_000 }),
        (a, b, timeoutMs) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          const budgetLo = timeBudget(lo, timeoutMs, 0.8) ?? 0;
          const budgetHi = timeBudget(hi, timeoutMs, 0.8) ?? 0;
          expect(Number.isSafeInteger(budgetLo)).toBe(true);
          expect(budgetLo).toBeGreaterThanOrEqual(1);
          expect(budgetHi).toBeGreaterThanOrEqual(budgetLo);
        },
      ),
    );
  });
});

describe('updateObservedRate', () => {
  it.each([
    { name: 'first sample 500 records in 250 ms -> 2000/s', prev: undefined, records: 500, durationMs: 250, weight: 0.5, expected: 2000 },
    { name: 'prev 2000, sample 1000/s, weight 0.5 -> 1500', prev: 2000, records: 1000, durationMs: 1000, weight: 0.5, expected: 1500 },
    { name: 'prev 2000, sample 1000/s, weight 0.25 -> 1750', prev: 2000, records: 1000, durationMs: 1000, weight: 0.25, expected: 1750 },
    { name: 'weight 1 forgets the past -> 1000', prev: 2000, records: 1000, durationMs: 1000, weight: 1, expected: 1000 },
    { name: 'records 0 (empty range) keeps 2000', prev: 2000, records: 0, durationMs: 1000, weight: 0.5, expected: 2000 },
    { name: 'duration 0 keeps 2000', prev: 2000, records: 10, durationMs: 0, weight: 0.5, expected: 2000 },
    { name: 'negative duration keeps undefined', prev: undefined, records: 10, durationMs: -5, weight: 0.5, expected: undefined },
  ])('$name', ({ prev, records, durationMs, weight, expected }) => {
    expect(updateObservedRate(prev, records, durationMs, weight)).toBe(expected);
  });

  it('defaults the weight to 0.5', () => {
    expect(updateObservedRate(100, 300, 1000)).toBe(200);
  });

  it.each([0, -0.5, 1.5, Number.NaN])('rejects weight %p', (weight) => {
    expect(() => updateObservedRate(100, 10, 10, weight)).toThrow(ValidationError);
  });

  it('stays between the previous rate and the new sample', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.001, max: 1e6, noNaN: true }),
        fc.integer({ min: 1, max: 1e6 }),
        fc.integer({ min: 1, max: 900_000 }),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
        (prev, records, durationMs, weight) => {
          const sample = (records / durationMs) * 1000;
          const next = updateObservedRate(prev, records, durationMs, weight) ?? Number.NaN;
          const tolerance = 1e-9 * Math.max(prev, sample);
          expect(next).toBeGreaterThanOrEqual(Math.min(prev, sample) - tolerance);
          expect(next).toBeLessThanOrEqual(Math.max(prev, sample) + tolerance);
        },
      ),
    );
  });
});
