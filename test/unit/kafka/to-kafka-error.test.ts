/** toKafkaError on connection failures: a broker that cannot be reached is not retried at once; a connection that went silent is. */
import { KafkaJSConnectionError } from 'kafkajs';
import { KafkaError } from '../../../lib/errors';
import { isRetriableKafkaError, toKafkaError } from '../../../lib/kafka/errors';
import { SILENT_CODE } from '../../../lib/kafka/framed-socket';

const connectionError = (code: string) =>
  new KafkaJSConnectionError(`Connection error: ${code}`, { broker: 'b-1:9092', code } as never) as Error;

describe('toKafkaError on a connection failure', () => {
  it.each([
    { code: 'ECONNREFUSED', message: 'Kafka: cannot reach b-1:9092 (ECONNREFUSED) during describeTopics', retriable: false },
    { code: 'ENOTFOUND', message: 'Kafka: cannot reach b-1:9092 (ENOTFOUND) during describeTopics', retriable: false },
    {
      code: SILENT_CODE,
      message: 'Kafka: b-1:9092 stopped answering on an open connection (ESILENT) during describeTopics',
      retriable: true,
    },
  ])('$code: "$message", retriable $retriable', ({ code, message, retriable }) => {
    const err = toKafkaError('describeTopics', connectionError(code));
    expect(err).toBeInstanceOf(KafkaError);
    expect(err.message).toBe(message);
    expect((err as KafkaError).type).toBe('CONNECTION');
    expect(isRetriableKafkaError(err)).toBe(retriable);
  });
});
