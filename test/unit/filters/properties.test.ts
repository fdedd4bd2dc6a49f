/**
 * Properties of filter matching over generated patterns and records: anything-but is the negation of
 * the value it names on present scalars, a stream's patterns are OR-ed, `$or` is the same OR inside
 * one pattern, another field only narrows a pattern, and fields no pattern names change nothing.
 */
import fc from 'fast-check';
import { compileFilters, matchesPattern, type FilterDocument } from '../../../lib/filters/match';
import { compilePattern } from '../../../lib/filters/pattern';

const compiled = (pattern: Record<string, unknown>) => {
  const c = compilePattern(pattern).compiled;
  if (!c) throw new Error(`does not compile: ${JSON.stringify(compilePattern(pattern).problems)}`);
  return c;
};
const matches = (pattern: Record<string, unknown>, doc: FilterDocument) => matchesPattern(compiled(pattern), doc);

const FIELDS = ['a', 'b', 'c'] as const;
const text = fc.constantFrom('', 'x', 'xy', 'y', 'X', 'order', 'refund');
const num = fc.constantFrom(-1, 0, 1, 2.5, 3, 100, 6e9);
const scalar = fc.oneof(text, num, fc.boolean(), fc.constant(null));
/** A record value: scalars, lists of them, and one level of objects (also inside lists). */
const leafValue = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }));
const inner = fc.dictionary(fc.constantFrom(...FIELDS), leafValue, { maxKeys: 3 });
const fieldValue = fc.oneof(leafValue, inner, fc.array(inner, { maxLength: 2 }));
const recordValue = fc.dictionary(fc.constantFrom(...FIELDS), fieldValue, { maxKeys: 3 });

const rule = fc.oneof(
  scalar,
  text.map((prefix) => ({ prefix })),
  text.map((suffix) => ({ suffix })),
  text.map((s) => ({ 'equals-ignore-case': s })),
  fc.array(text, { minLength: 1, maxLength: 2 }).map((values) => ({ 'anything-but': values })),
  fc.array(fc.constantFrom(0, 1, 3), { minLength: 1, maxLength: 2 }).map((values) => ({ 'anything-but': values })),
  fc
    .tuple(fc.constantFrom('>', '>='), fc.constantFrom(-1, 0, 1), fc.constantFrom('<', '<='), fc.constantFrom(2, 3, 100))
    .map((r) => ({ numeric: r })),
  fc.boolean().map((exists) => ({ exists })),
);
const leafPattern = fc.array(rule, { minLength: 1, maxLength: 3 });
const innerPattern = fc.dictionary(fc.constantFrom(...FIELDS), leafPattern, { minKeys: 1, maxKeys: 2 });
/** The part of a pattern under `value`: fields with lists or one level of objects. */
const valuePattern = fc.dictionary(fc.constantFrom(...FIELDS), fc.oneof(leafPattern, innerPattern), { minKeys: 1, maxKeys: 2 });

describe('filter matching properties', () => {
  it('anything-but [x] is the negation of [x] on a present scalar field', () => {
    fc.assert(
      fc.property(fc.oneof(text, fc.constantFrom(0, 1, 3, 100)), scalar, (x, present) => {
        const doc = { value: { a: present } };
        expect(matches({ value: { a: [{ 'anything-but': [x] }] } }, doc)).toBe(!matches({ value: { a: [x] } }, doc));
      }),
    );
  });

  it("a stream's patterns are OR-ed: the filter matches exactly when some pattern does", () => {
    fc.assert(
      fc.property(fc.array(valuePattern, { minLength: 1, maxLength: 5 }), recordValue, (patterns, value) => {
        const doc = { value };
        const wrapped = patterns.map((p) => ({ value: p }));
        expect(compileFilters(wrapped).matches(doc)).toBe(wrapped.some((p) => matches(p, doc)));
      }),
    );
  });

  it('$or inside one pattern is the OR of two patterns', () => {
    fc.assert(
      fc.property(valuePattern, valuePattern, fc.oneof(recordValue, fc.array(recordValue, { maxLength: 2 })), (a, b, value) => {
        const doc = { value };
        expect(matches({ value: { $or: [a, b] } }, doc)).toBe(compileFilters([{ value: a }, { value: b }]).matches(doc));
      }),
    );
  });

  it('another field only narrows a pattern (fields are AND-ed)', () => {
    fc.assert(
      fc.property(valuePattern, fc.constantFrom('d', 'e'), leafPattern, recordValue, (p, extra, rules, value) => {
        const doc = { value };
        if (matches({ value: { ...p, [extra]: rules } }, doc)) expect(matches({ value: p }, doc)).toBe(true);
      }),
    );
  });

  it('fields no pattern names do not change the outcome', () => {
    fc.assert(
      fc.property(valuePattern, recordValue, fieldValue, (p, value, other) => {
        expect(matches({ value: p }, { value: { ...value, unnamed: other } })).toBe(matches({ value: p }, { value }));
      }),
    );
  });

  it('a list pattern is the OR of its elements', () => {
    fc.assert(
      fc.property(leafPattern, recordValue, (rules, value) => {
        const doc = { value };
        expect(matches({ value: { a: rules } }, doc)).toBe(rules.some((r) => matches({ value: { a: [r] } }, doc)));
      }),
    );
  });
});
