/** The one rule for "the same topic incarnation": incarnation numbers (absent = 0) and topic ids (absent = unknown). */
import {
  incarnationOf,
  incarnationTopicName,
  ofIncarnation,
  sameIncarnation,
  topicIdChanged,
} from '../../../lib/ports/ledger-rules/incarnation';

describe('sameIncarnation', () => {
  it.each([
    [{}, {}, true],
    [{}, { incarnation: 0 }, true],
    [{ incarnation: 0 }, {}, true],
    [{ incarnation: 1 }, { incarnation: 1 }, true],
    [{}, { incarnation: 1 }, false],
    [{ incarnation: 1 }, { incarnation: 0 }, false],
    [{ incarnation: 2 }, { incarnation: 3 }, false],
  ])('%j and %j: %s', (a, b, same) => {
    expect(sameIncarnation(a, b)).toBe(same);
    expect(sameIncarnation(b, a)).toBe(same);
  });

  it('reads an absent incarnation as 0', () => {
    expect(incarnationOf({})).toBe(0);
    expect(incarnationOf({ incarnation: 4 })).toBe(4);
  });
});

describe('ofIncarnation', () => {
  const p = { topic: 'orders', partition: 1, incarnation: 2 };
  it.each([
    [{ topic: 'orders', partition: 1, incarnation: 2 }, true],
    [{ topic: 'orders', partition: 1 }, false],
    [{ topic: 'orders', partition: 1, incarnation: 1 }, false],
    [{ topic: 'orders', partition: 0, incarnation: 2 }, false],
    [{ topic: 'payments', partition: 1, incarnation: 2 }, false],
  ])('%j of orders/1 incarnation 2: %s', (x, mine) => {
    expect(ofIncarnation(p, x)).toBe(mine);
  });

  it('matches the first incarnation written with or without the field', () => {
    expect(ofIncarnation({ topic: 't', partition: 0 }, { topic: 't', partition: 0, incarnation: 0 })).toBe(true);
    expect(ofIncarnation({ topic: 't', partition: 0, incarnation: 0 }, { topic: 't', partition: 0 })).toBe(true);
  });
});

describe('topicIdChanged', () => {
  it.each([
    ['a', 'a', false],
    ['a', 'b', true],
    // A missing id on either side says nothing (a broker without topic ids, a ledger written before them).
    [undefined, 'b', false],
    ['a', undefined, false],
    [undefined, undefined, false],
  ])('recorded %s, now %s: %s', (recorded, now, changed) => {
    expect(topicIdChanged(recorded, now)).toBe(changed);
  });
});

describe('incarnationTopicName', () => {
  it.each([
    ['orders', undefined, 'orders'],
    ['orders', 0, 'orders'],
    ['orders', 1, 'orders~0001'],
    ['orders', 12, 'orders~0012'],
  ])('files %s incarnation %s under %s', (topic, incarnation, name) => {
    expect(incarnationTopicName(topic, incarnation)).toBe(name);
  });
});
