/** isNotReadyError: which failures mean "this topic is not ready yet" (skip it this run) and which do not. */
import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded } from 'kafkajs';
import { protocolError } from '../../../lib/kafka/cluster.kafkajs';
import { isNotReadyError, toKafkaError } from '../../../lib/kafka/errors';
import { KafkaError } from '../../../lib/errors';
import { PartitionNotFoundError } from '../../../lib/ports/range-reader';
import { withRetries } from '../../../lib/kafka/retry';

const UNKNOWN_TOPIC_OR_PARTITION = 3;
const LEADER_NOT_AVAILABLE = 5;
const NOT_LEADER_OR_FOLLOWER = 6;
const TOPIC_AUTHORIZATION_FAILED = 29;
const UNKNOWN_SERVER_ERROR = -1;

describe('isNotReadyError', () => {
  it('a fresh topic\'s protocol errors are "not ready", as kafkajs throws them and as the adapters wrap them', () => {
    for (const code of [UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER]) {
      const raw = protocolError(code);
      expect(isNotReadyError(raw)).toBe(true);
      // kafkajs's metadata refresh bails with this wrapper on UNKNOWN_TOPIC_OR_PARTITION (its retrier
      // passes the cause, which the constructor's published type leaves out).
      expect(isNotReadyError(Object.assign(new KafkaJSNonRetriableError(raw), { cause: raw }))).toBe(true);
      expect(isNotReadyError(new KafkaJSNumberOfRetriesExceeded(raw, { retryCount: 5, retryTime: 100 }))).toBe(true);
      expect(isNotReadyError(toKafkaError('fetchOffsets', raw))).toBe(true);
    }
    expect(isNotReadyError(new KafkaError('partition t/0 has no leader', { type: 'LEADER_NOT_AVAILABLE', retriable: true }))).toBe(true);
    expect(isNotReadyError(new PartitionNotFoundError('topic t does not exist', { topic: 't', partition: 0 }))).toBe(true);
  });

  it('a retry loop that gave up on a not-ready partition is still "not ready"', async () => {
    const err = await withRetries(
      async () => {
        throw new KafkaError('partition t/0 has no leader', { type: 'LEADER_NOT_AVAILABLE', retriable: true });
      },
      { operation: 'read', policy: { initialBackoffMs: 1, maxBackoffMs: 1, maxElapsedMs: 0 }, isRetriable: () => true },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KafkaError);
    expect(isNotReadyError(err)).toBe(true);
  });

  it('connection, authorization, server and programming errors are not', () => {
    expect(isNotReadyError(new KafkaJSConnectionError('Connection error: ECONNREFUSED'))).toBe(false);
    expect(isNotReadyError(toKafkaError('describeTopics', new KafkaJSConnectionError('Connection error: ECONNREFUSED')))).toBe(false);
    expect(isNotReadyError(protocolError(TOPIC_AUTHORIZATION_FAILED))).toBe(false);
    expect(isNotReadyError(protocolError(UNKNOWN_SERVER_ERROR))).toBe(false);
    expect(isNotReadyError(new Error('NOT_LEADER_OR_FOLLOWER'))).toBe(false);
    expect(isNotReadyError(new TypeError('bug'))).toBe(false);
    expect(isNotReadyError(undefined)).toBe(false);
    expect(isNotReadyError('LEADER_NOT_AVAILABLE')).toBe(false);
  });
});
