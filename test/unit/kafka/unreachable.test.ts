/** An unreachable broker becomes one line naming the broker, the cause and the setting to check. */
import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { kafkaLogLines } from '../../../lib/kafka/client';
import { kafkaLogTo } from '../../../lib/runtime/aws';
import { connectionFailure, kafkaFailureText, toKafkaError } from '../../../lib/kafka/errors';
import { KafkaError } from '../../../lib/errors';

const refused = (broker: string, code = 'ECONNREFUSED') =>
  new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError(`Connection error: connect ${code} ${broker}`, { broker, code }), {
    retryCount: 2,
    retryTime: 400,
  });

describe('unreachable broker', () => {
  it('finds the broker and the socket error code under kafkajs retry wrappers', () => {
    expect(connectionFailure(refused('127.0.0.1:1'))).toEqual({ broker: '127.0.0.1:1', code: 'ECONNREFUSED' });
    expect(connectionFailure(new KafkaJSConnectionError('Connection timeout', { broker: 'b-1:9098' }))).toEqual({
      broker: 'b-1:9098',
      code: 'connection timeout',
    });
    expect(connectionFailure(new KafkaJSProtocolError('This server does not host this topic-partition'))).toBeUndefined();
  });

  it('translates to a non-retriable KafkaError of type CONNECTION with a one-line message', () => {
    const e = toKafkaError('describeTopics', refused('kafka.internal:9092', 'ENOTFOUND'));
    expect(e).toBeInstanceOf(KafkaError);
    expect(e).toMatchObject({
      message: 'Kafka: cannot reach kafka.internal:9092 (ENOTFOUND) during describeTopics',
      type: 'CONNECTION',
      retriable: false,
    });
    expect(kafkaFailureText(e, 'payments')).toBe(
      'Kafka: cannot reach kafka.internal:9092 (ENOTFOUND) during describeTopics [kafka.brokers of stream payments]',
    );
  });

  it('leaves other failures as they were, the setting not blamed', () => {
    const e = toKafkaError('fetchOffsets', new KafkaJSProtocolError('Not authorized to access topics'));
    expect(e.message).toBe('Kafka fetchOffsets failed: Not authorized to access topics');
    expect(kafkaFailureText(e, 'payments')).toBe('Kafka fetchOffsets failed: Not authorized to access topics');
  });

  it("writes kafkajs's log entries as plain lines (no stack traces)", () => {
    const lines: string[] = [];
    kafkaLogLines((l) => lines.push(l))('error', 'Connection error: connect ECONNREFUSED 127.0.0.1:1', {
      namespace: 'Connection',
      broker: '127.0.0.1:1',
      stack: 'Error: connect ECONNREFUSED\n    at TCPConnectWrap',
    });
    expect(lines).toEqual(['[kafkajs error] Connection: Connection error: connect ECONNREFUSED 127.0.0.1:1 (broker=127.0.0.1:1)']);
  });

  it("routes kafkajs's log entries into a Lambda's structured logger at their level, under `kafka`", () => {
    const calls: Array<[string, string, unknown]> = [];
    const at = (level: string) => (message: string, extra: Record<string, unknown>) => void calls.push([level, message, extra]);
    const log = kafkaLogTo({ error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') });
    log('warn', 'Connection timeout', { namespace: 'Connection', broker: 'b-1:9098' });
    expect(calls).toEqual([['warn', 'kafkajs: Connection timeout', { kafka: { namespace: 'Connection', broker: 'b-1:9098' } }]]);
  });
});
