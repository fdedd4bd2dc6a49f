/** Which topics a stream reads: explicit lists by membership, patterns anchored, never internal topics. */
import fc from 'fast-check';
import { topicMatcher, topicSelector } from '../../../lib/config/load';
import { anchoredTopicPattern, isValidTopicName } from '../../../lib/config/topics';

const topicName = fc.stringMatching(/^[a-zA-Z0-9._-]{1,30}$/).filter((name) => isValidTopicName(name) && !name.startsWith('__'));

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');

describe('topicMatcher', () => {
  it('anchors the pattern at both ends', () => {
    const matches = topicMatcher({ topicPattern: 'orders' });
    expect(matches('orders')).toBe(true);
    expect(matches('orders-eu')).toBe(false);
    expect(matches('eu-orders')).toBe(false);
  });

  it('anchors every alternative, not just the first and last', () => {
    const matches = topicMatcher({ topicPattern: 'a|b' });
    expect(['a', 'b', 'ab', 'xa', 'bx'].filter(matches)).toEqual(['a', 'b']);
  });

  it('accepts patterns that are already anchored', () => {
    expect(topicMatcher({ topicPattern: '^orders\\..*$' })('orders.eu')).toBe(true);
  });

  it('never matches internal topics, even with a match-all pattern', () => {
    const matches = topicMatcher({ topicPattern: '.*' });
    expect(matches('__consumer_offsets')).toBe(false);
    expect(matches('__transaction_state')).toBe(false);
    expect(matches('_single_underscore')).toBe(true);
  });

  it('matches exactly the topics of an explicit list', () => {
    fc.assert(
      fc.property(fc.uniqueArray(topicName, { minLength: 1, maxLength: 8 }), fc.array(topicName, { maxLength: 8 }), (topics, others) => {
        const matches = topicMatcher({ topics });
        for (const topic of [...topics, ...others]) expect(matches(topic)).toBe(topics.includes(topic));
      }),
    );
  });

  it('matches a literal pattern as exactly that name', () => {
    fc.assert(
      fc.property(topicName, topicName, (name, affix) => {
        const matches = topicMatcher({ topicPattern: escapeRegex(name) });
        expect(matches(name)).toBe(true);
        expect(matches(name + affix)).toBe(false);
        expect(matches(affix + name)).toBe(false);
      }),
    );
  });

  it('matches nothing without a subscription', () => {
    expect(topicMatcher({})('orders')).toBe(false);
  });
});

describe('topicSelector', () => {
  it('gives the describeTopics selector: the list, or the anchored pattern', () => {
    expect(topicSelector({ topics: ['a', 'b'] })).toEqual({ topics: ['a', 'b'] });
    const selector = topicSelector({ topicPattern: 'orders-.*' });
    expect(selector).toEqual({ pattern: anchoredTopicPattern('orders-.*') });
    expect('pattern' in selector && selector.pattern.test('x-orders-eu')).toBe(false);
  });
});
