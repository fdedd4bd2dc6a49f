/** Which Kafka failures are retried: one classification for the range reader and the metadata adapter. */
import { KafkaError, ValidationError } from '../../../lib/errors';
import { isRetriableKafkaError } from '../../../lib/kafka/errors';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../../../lib/ports/range-reader';

const named = (name: string, extra: object = {}) => Object.assign(new Error(name), { name, ...extra });

describe('isRetriableKafkaError', () => {
  it('classifies kafkajs and project errors', () => {
    expect(isRetriableKafkaError(named('KafkaJSConnectionClosedError'))).toBe(true);
    expect(isRetriableKafkaError(named('KafkaJSBrokerNotFound'))).toBe(true);
    expect(isRetriableKafkaError(named('KafkaJSProtocolError', { retriable: true }))).toBe(true);
    expect(isRetriableKafkaError(named('KafkaJSProtocolError', { retriable: false }))).toBe(false);
    expect(isRetriableKafkaError(named('KafkaJSNumberOfRetriesExceeded', { cause: named('KafkaJSConnectionError') }))).toBe(true);
    expect(isRetriableKafkaError(named('KafkaJSNumberOfRetriesExceeded', { cause: new Error('x') }))).toBe(false);
    expect(isRetriableKafkaError(new KafkaError('x', { retriable: true }))).toBe(true);
    expect(isRetriableKafkaError(new PartitionNotFoundError('gone', { topic: 't', partition: 0 }))).toBe(false);
    expect(isRetriableKafkaError(new OffsetOutOfRangeError('gone', { topic: 't', partition: 0, fetchOffset: 0 }))).toBe(false);
    expect(isRetriableKafkaError(undefined)).toBe(false);
  });

  it.each([
    // A request timeout is transient: the broker may answer the next request (callers bound retries by time).
    ['a request timeout', named('KafkaJSRequestTimeoutError', { retriable: true }), true],
    ['a request timeout without kafkajs flag', named('KafkaJSRequestTimeoutError'), true],
    [
      'kafkajs giving up on request timeouts',
      named('KafkaJSNumberOfRetriesExceeded', { cause: named('KafkaJSRequestTimeoutError') }),
      true,
    ],
    ['a lost connection', named('KafkaJSConnectionError', { retriable: true }), true],
    ['a lock timeout', named('KafkaJSLockTimeout'), true],
    ['metadata not loaded', named('KafkaJSMetadataNotLoaded'), true],
    ['a coordinator moving (kafkajs: retriable)', named('KafkaJSGroupCoordinatorNotFound', { retriable: true }), true],
    ['kafkajs giving up for good', named('KafkaJSNonRetriableError', { retriable: false, cause: named('KafkaJSConnectionError') }), false],
    ['an error that is no Kafka error', new Error('bug'), false],
    ['a KafkaError marked not retriable', new KafkaError('x', { retriable: false }), false],
    ['a validation error', new ValidationError('bad request'), false],
    ['a thrown string', 'oops', false],
  ])('%s: %s', (_what, error, retriable) => {
    expect(isRetriableKafkaError(error)).toBe(retriable);
  });
});
