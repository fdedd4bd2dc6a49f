import { foldWriteProblem } from '../../../lib/processor/fold-write';

const item = { key: { pk: 'u11#/p3' }, table: 'clicks' };

describe('foldWriteProblem', () => {
  it.each([
    ['an update of the item', { update: { key: { pk: 'u11#/p3' }, expression: 'ADD n :n' } }],
    ['an update naming its table', { update: { key: { pk: 'u11#/p3' }, table: 'clicks', expression: 'ADD n :n' } }],
    ['the item spread into the update', { update: { ...item, expression: 'ADD n :n', values: { ':n': 1 } } }],
  ])('accepts %s', (_what, write) => {
    expect(foldWriteProblem(item, write, 'clicks')).toBeUndefined();
  });

  it('accepts a key with the same attributes in another order', () => {
    const two = { key: { a: 1, b: 'x' } };
    expect(foldWriteProblem(two, { update: { key: { b: 'x', a: 1 }, expression: 'SET c = :c' } })).toBeUndefined();
  });

  it.each([
    [
      'a key of another shape, naming both keys',
      { update: { key: { userId: 'u11' }, expression: 'ADD n :n' } },
      'fold.write returned an update of key {"userId":"u11"}, but was given the item {"pk":"u11#/p3"} in table clicks: update the key it was given',
    ],
    [
      'a key with another value',
      { update: { key: { pk: 'u12' }, expression: 'ADD n :n' } },
      'fold.write returned an update of key {"pk":"u12"}, but was given the item {"pk":"u11#/p3"}',
    ],
    [
      'a condition',
      { update: { key: { pk: 'u11#/p3' }, expression: 'ADD n :n', condition: { expression: 'attribute_exists(pk)' } } },
      'with a condition ({"expression":"attribute_exists(pk)"}): remove it',
    ],
    [
      'a put',
      { put: { item: { pk: 'u11#/p3' } } },
      'fold.write returned put for the item {"pk":"u11#/p3"} in table clicks: it must return { update:',
    ],
    ['undefined', undefined, 'fold.write returned undefined for the item'],
    ['no expression', { update: { key: { pk: 'u11#/p3' } } }, 'without an expression'],
    [
      'another table',
      { update: { key: { pk: 'u11#/p3' }, table: 'other', expression: 'ADD n :n' } },
      'fold.write returned an update in table "other", but was given the item {"pk":"u11#/p3"} in table clicks',
    ],
  ])('refuses %s', (_what, write, message) => {
    expect(foldWriteProblem(item, write, 'clicks')).toContain(message);
  });

  it("judges a write without a table against the stream's sink table", () => {
    const bare = { key: { pk: 'a' } };
    expect(foldWriteProblem(bare, { update: { key: { pk: 'a' }, expression: 'ADD n :n' } }, 'sink')).toBeUndefined();
    expect(foldWriteProblem(bare, { update: { key: { pk: 'a' }, table: 'other', expression: 'ADD n :n' } }, 'sink')).toContain(
      '(table "sink")',
    );
  });
});
