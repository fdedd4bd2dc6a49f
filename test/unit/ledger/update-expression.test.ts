/** The update-expression subset a marked write's statement is planned from: what it parses, what it refuses, what it computes. */
import fc from 'fast-check';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { applyUpdate, parseUpdate } from '../../../lib/ledger/update-expression.dynamodb';

const N = (n: string | number | bigint): AttributeValue => ({ N: String(n) });
const S = (s: string): AttributeValue => ({ S: s });

describe('parseUpdate', () => {
  it.each([
    ['ADD #total :total, #count :count SET lastOffset = :last', { '#total': 'total', '#count': 'count' }, ['total', 'count']],
    ['SET #a = :v', { '#a': 'a' }, []],
    ['SET a = if_not_exists(a, :zero) + :n', {}, ['a']],
    ['SET l = list_append(if_not_exists(l, :empty), :v) REMOVE old', {}, ['l']],
    ['set a = b - :n', {}, ['b']],
    ['REMOVE gone, other', {}, []],
  ])('parses %s, reading %j', (expression, names, reads) => {
    expect(parseUpdate(expression, names)?.reads).toEqual(reads);
  });

  it.each([
    ['SET #a.#b = :v', 'a nested path'],
    ['SET a[0] = :v', 'a list index'],
    ['DELETE s :v', 'DELETE'],
    ['SET a = size(b)', 'another function'],
    ['SET #missing = :v', 'a name placeholder not given'],
    ['SET a = :v, a = :w', 'one attribute twice'],
    ['SET a = :v SET b = :w', 'a clause twice'],
    ['ADD a b', 'ADD without a value'],
    ['SET a = :v +', 'a dangling operator'],
    ['', 'nothing'],
    ['SET a = :v; DROP', 'characters outside the grammar'],
  ])('refuses %s (%s)', (expression) => {
    expect(parseUpdate(expression, { '#a': 'a', '#b': 'b' })).toBeUndefined();
  });
});

describe('applyUpdate', () => {
  const apply = (expression: string, values: Record<string, AttributeValue>, image?: Record<string, AttributeValue>) =>
    applyUpdate(parseUpdate(expression, { '#t': 'total' })!, values, image);

  it('computes what DynamoDB would store', () => {
    expect(apply('ADD #t :n SET last = :l', { ':n': N(5), ':l': N(9) })).toEqual({ set: { total: N(5), last: N(9) }, remove: [] });
    expect(apply('ADD #t :n', { ':n': N(5) }, { total: N(-7) })).toEqual({ set: { total: N(-2) }, remove: [] });
    expect(apply('SET a = if_not_exists(a, :z) + :n', { ':z': N(10), ':n': N(1) })?.set).toEqual({ a: N(11) });
    expect(apply('SET a = if_not_exists(a, :z) + :n', { ':z': N(10), ':n': N(1) }, { a: N(3) })?.set).toEqual({ a: N(4) });
    expect(apply('SET l = list_append(l, :v)', { ':v': { L: [S('b')] } }, { l: { L: [S('a')] } })?.set).toEqual({
      l: { L: [S('a'), S('b')] },
    });
    expect(apply('SET a = b', {}, { b: S('x') })?.set).toEqual({ a: S('x') });
    expect(apply('REMOVE a SET b = :v', { ':v': S('y') }, { a: N(1) })).toEqual({ set: { b: S('y') }, remove: ['a'] });
  });

  it('reads every operand from the item before the update', () => {
    expect(apply('SET a = :v, b = a', { ':v': N(2) }, { a: N(1) })?.set).toEqual({ a: N(2), b: N(1) });
  });

  it.each([
    ['ADD #t :n', { ':n': N('1.5') }, { total: N(1) }, 'a fraction'],
    ['ADD #t :n', { ':n': N(1) }, { total: S('x') }, 'ADD to a string'],
    ['ADD #t :n', { ':n': { NS: ['1'] } }, undefined, 'ADD of a set'],
    ['SET a = b + :n', { ':n': N(1) }, {}, 'an attribute the item does not have'],
    ['SET a = :v', {}, undefined, 'a value not given'],
    ['ADD #t :n', { ':n': N('9'.repeat(38)) }, { total: N(1) }, 'a sum beyond 38 digits'],
    ['SET l = list_append(l, :v)', { ':v': S('x') }, { l: { L: [] } }, 'list_append of a string'],
  ])('gives nothing for %s with %j on %j (%s): DynamoDB decides', (expression, values, image, _why) => {
    expect(
      apply(expression, values as Record<string, AttributeValue>, image as Record<string, AttributeValue> | undefined),
    ).toBeUndefined();
  });

  it('adds integers of up to 38 digits exactly', () => {
    const int38 = fc.bigInt({ min: -(10n ** 37n), max: 10n ** 37n });
    fc.assert(
      fc.property(int38, fc.option(int38, { nil: undefined }), (n, current) => {
        const out = apply('ADD #t :n', { ':n': N(n) }, current === undefined ? undefined : { total: N(current) });
        expect(out?.set.total).toEqual(N(n + (current ?? 0n)));
      }),
    );
  });
});
