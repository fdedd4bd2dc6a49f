/** The Kafka edge's small rules, each written once: error codes, internal topics, whole-name patterns, isolation levels. */
import { ValidationError } from '../../../lib/errors';
import { anchoredTopicPattern, isInternalTopic } from '../../../lib/config/topics';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { isMissingTopicCode } from '../../../lib/kafka/protocol/error-codes';
import { checkIsolationLevel } from '../../../lib/ports/kafka-metadata';

describe('isMissingTopicCode', () => {
  it.each([
    [0, false],
    [1, false],
    [3, true], // UNKNOWN_TOPIC_OR_PARTITION
    [17, true], // INVALID_TOPIC_EXCEPTION
    [29, false],
  ])('%d: %s', (code, missing) => expect(isMissingTopicCode(code)).toBe(missing));
});

describe('isInternalTopic', () => {
  it.each([
    ['__consumer_offsets', undefined, true],
    ['orders', undefined, false],
    ['orders', true, true], // the broker's flag wins where Metadata gives one
    ['orders', false, false],
  ] as const)('%s (broker flag %s): %s', (name, flag, internal) => expect(isInternalTopic(name, flag)).toBe(internal));
});

describe('anchoredTopicPattern', () => {
  it.each([
    ['orders-.*', 'orders-eu', true],
    ['orders-.*', 'old-orders-eu', false],
    [/orders/, 'orders-eu', false],
    [/orders-.*/, 'orders-eu', true],
    [/ORDERS-.*/i, 'orders-eu', true],
  ] as const)('%s matches %s: %s', (pattern, topic, matches) => expect(anchoredTopicPattern(pattern).test(topic)).toBe(matches));

  it('drops g and y, whose lastIndex would make test stateful', () => {
    const re = anchoredTopicPattern(/a.*/gy);
    expect(re.flags).toBe('');
    expect([re.test('ab'), re.test('ab')]).toEqual([true, true]);
  });

  it('is what the memory metadata adapter matches by, as the kafkajs one', async () => {
    const kafka = createMemoryKafka();
    kafka.createTopic('orders', 1);
    kafka.createTopic('old-orders', 1);
    expect((await kafka.describeTopics({ pattern: /orders/ })).map((t) => t.topic)).toEqual(['orders']);
  });
});

describe('checkIsolationLevel', () => {
  it('passes the two levels and names the caller when refusing anything else', () => {
    expect(checkIsolationLevel('read_committed')).toBe('read_committed');
    expect(checkIsolationLevel('read_uncommitted', 'read')).toBe('read_uncommitted');
    expect(() => checkIsolationLevel('serializable', 'read')).toThrow(
      new ValidationError('read: isolation level must be read_committed or read_uncommitted, not "serializable"'),
    );
    expect(() => checkIsolationLevel(undefined)).toThrow(/^isolation level must be read_committed or read_uncommitted, not undefined$/);
  });
});
