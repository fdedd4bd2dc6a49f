/** The kafkajs config built from a stream's Kafka config: brokers, TLS, SASL, timeouts, logging. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ValidationError } from '../../../lib/errors';
import { parseStreamConfig, type KafkaConnectionConfig, type MskIamSaslConfig, type SecretRef } from '../../../lib/config/schema';
import { createKafka, kafkaClientConfig, logCreatorFor, type KafkaLogFn } from '../../../lib/kafka/client';
import { wholeResponseSocketFactory } from '../../../lib/kafka/framed-socket';

/** A real certificate (a CA's, its key discarded): the config checks that certificates parse. */
const EXAMPLE_CA = readFileSync(join(__dirname, '..', '..', 'fixtures', 'tls', 'example-ca.pem'), 'utf8');

/** A validated connection config (defaults applied) from a partial one. */
function kafkaConfig(kafka: Record<string, unknown>): KafkaConnectionConfig {
  return parseStreamConfig({ id: 's', kafka: { brokers: ['b-1:9096', 'b-2:9096'], ...kafka }, topics: ['t'] }, 'test').kafka;
}

describe('kafkaClientConfig', () => {
  it('maps brokers, client id and timeouts, logging quietly, with sockets that read whole responses', () => {
    expect(kafkaClientConfig(kafkaConfig({ requestTimeoutMs: 10000 }))).toEqual({
      brokers: ['b-1:9096', 'b-2:9096'],
      clientId: 'kafka-lambda-direct',
      connectionTimeout: 3000,
      requestTimeout: 10000,
      logLevel: logLevel.WARN,
      retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 1000 },
      socketFactory: wholeResponseSocketFactory,
    });
  });

  it('passes TLS settings, the CA as PEM text', () => {
    expect(kafkaClientConfig(kafkaConfig({ ssl: true })).ssl).toBe(true);
    const pem = EXAMPLE_CA;
    expect(kafkaClientConfig(kafkaConfig({ ssl: { rejectUnauthorized: false, ca: pem } })).ssl).toEqual({
      rejectUnauthorized: false,
      ca: [pem],
    });
    expect(kafkaClientConfig(kafkaConfig({ ssl: {} })).ssl).toEqual({});
  });

  it.each(['scram-sha-256', 'scram-sha-512', 'plain'] as const)('configures SASL %s with the resolved password', (mechanism) => {
    const config = kafkaConfig({ ssl: true, sasl: { mechanism, username: 'svc', password: { env: 'KAFKA_PASSWORD' } } });
    expect(kafkaClientConfig(config, { password: 's3cret' }).sasl).toEqual({ mechanism, username: 'svc', password: 's3cret' });
  });

  it('refuses SASL with a password that was not resolved', () => {
    const config = kafkaConfig({ sasl: { mechanism: 'plain', username: 'svc', password: { env: 'P' } } });
    expect(() => kafkaClientConfig(config)).toThrow(ValidationError);
  });

  it('uses OAUTHBEARER with a fresh MSK IAM token per authentication, over TLS', async () => {
    const asked: Array<[MskIamSaslConfig, readonly string[] | undefined]> = [];
    let issued = 0;
    const mskToken = async (sasl: MskIamSaslConfig, streams?: readonly string[]) => {
      asked.push([sasl, streams]);
      return `token-${++issued}`;
    };
    const sasl = { mechanism: 'aws-msk-iam', region: 'eu-west-1', roleArn: 'arn:aws:iam::210987654321:role/msk-reader' } as const;
    const config = kafkaClientConfig(kafkaConfig({ sasl }), { mskToken, streams: ['payments'] });
    expect(config.ssl).toBe(true);
    const oauth = config.sasl;
    if (oauth?.mechanism !== 'oauthbearer') throw new Error(`expected oauthbearer, got ${oauth?.mechanism}`);
    expect(await oauth.oauthBearerProvider()).toEqual({ value: 'token-1' });
    expect(await oauth.oauthBearerProvider()).toEqual({ value: 'token-2' });
    // The whole SASL config (region, role) and the streams to name in a failure.
    expect(asked).toEqual([
      [sasl, ['payments']],
      [sasl, ['payments']],
    ]);
  });

  it('keeps explicit TLS options for MSK IAM', () => {
    const config = kafkaConfig({ ssl: { rejectUnauthorized: true }, sasl: { mechanism: 'aws-msk-iam', region: 'us-east-1' } });
    expect(kafkaClientConfig(config).ssl).toEqual({ rejectUnauthorized: true });
  });

  it('routes kafkajs log lines to the given log function', () => {
    const lines: Array<Parameters<KafkaLogFn>> = [];
    const config = kafkaClientConfig(kafkaConfig({}), { log: (...args) => lines.push(args) });
    expect(config.logLevel).toBe(logLevel.WARN);
    const write = config.logCreator?.(logLevel.WARN);
    write?.({
      namespace: 'Connection',
      level: logLevel.ERROR,
      label: 'ERROR',
      log: { timestamp: '2026-01-01T00:00:00.000Z', logger: 'kafkajs', message: 'Connection timeout', broker: 'b-1:9096' },
    });
    expect(lines).toEqual([['error', 'Connection timeout', { namespace: 'Connection', broker: 'b-1:9096' }]]);
  });
});

describe('logCreatorFor', () => {
  it('names each kafkajs level', () => {
    const levels: string[] = [];
    const write = logCreatorFor((level) => levels.push(level))(logLevel.DEBUG);
    for (const level of [logLevel.ERROR, logLevel.WARN, logLevel.INFO, logLevel.DEBUG]) {
      write({ namespace: 'n', level, label: '', log: { timestamp: '', message: 'm' } });
    }
    expect(levels).toEqual(['error', 'warn', 'info', 'debug']);
  });
});

describe('createKafka', () => {
  it('resolves the SASL password through the given resolver', async () => {
    const asked: SecretRef[] = [];
    const resolveSecret = async (ref: SecretRef) => {
      asked.push(ref);
      return 's3cret';
    };
    const password = { secretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka', field: 'password' };
    const kafka = await createKafka(kafkaConfig({ sasl: { mechanism: 'scram-sha-512', username: 'svc', password } }), { resolveSecret });
    expect(kafka).toBeInstanceOf(Kafka);
    expect(asked).toEqual([password]);
  });

  it('resolves nothing without SASL or with MSK IAM', async () => {
    const resolveSecret = jest.fn(async () => 'unused');
    await createKafka(kafkaConfig({}), { resolveSecret });
    await createKafka(kafkaConfig({ sasl: { mechanism: 'aws-msk-iam', region: 'us-east-1' } }), { resolveSecret });
    expect(resolveSecret).not.toHaveBeenCalled();
  });

  it('fails before connecting when the secret cannot be resolved', async () => {
    const resolveSecret = async () => {
      throw new ValidationError('environment variable KAFKA_PASSWORD (a secret reference) is not set');
    };
    const config = kafkaConfig({ sasl: { mechanism: 'plain', username: 'svc', password: { env: 'KAFKA_PASSWORD' } } });
    await expect(createKafka(config, { resolveSecret })).rejects.toThrow(/KAFKA_PASSWORD/);
  });
});
