/** One line per connection failure, from the errors kafkajs raises (shapes as seen against a real broker). */
import { explainConnectionFailure, type ConnectionDescription } from '../../../lib/kafka/connection-failure';

const connectionError = (message: string, code?: string, broker = 'b-1:9096') =>
  Object.assign(new Error(message), { name: 'KafkaJSConnectionError', broker, ...(code ? { code } : {}) });
const saslError = (message: string) => Object.assign(new Error(message), { name: 'KafkaJSSASLAuthenticationError' });
const wrapped = (inner: Error) => Object.assign(new Error('Connection error: wrapped'), { name: 'KafkaJSNonRetriableError', cause: inner });

const scram: ConnectionDescription = { brokers: ['b-1:9096'], tls: true, sasl: { mechanism: 'scram-sha-512', username: 'app' } };
const mtls = (validToMs: number): ConnectionDescription => ({ brokers: ['b-1:9094'], tls: true, clientCertValidToMs: validToMs });
const tlsOnly: ConnectionDescription = { brokers: ['b-1:9094'], tls: true };
const plain: ConnectionDescription = { brokers: ['b-1:9092'], tls: false };
const iam: ConnectionDescription = { brokers: ['b-1:9098'], tls: true, sasl: { mechanism: 'aws-msk-iam', region: 'eu-west-1' } };
const NOW = Date.parse('2026-12-01T12:00:00Z');

describe('explainConnectionFailure', () => {
  it.each([
    [
      'refused SCRAM credentials',
      saslError('SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials'),
      scram,
      'AUTHENTICATION',
      'Kafka b-1:9096 (SASL_SSL SCRAM-SHA-512): SASL authentication of user "app" refused (wrong password or unknown user): check kafka.sasl.username and kafka.sasl.password',
    ],
    [
      'a mechanism the listener does not take',
      saslError('SASL SCRAM-SHA-512 mechanism is not supported by the server'),
      scram,
      'AUTHENTICATION',
      'Kafka b-1:9096 (SASL_SSL SCRAM-SHA-512): the listener does not take SASL SCRAM-SHA-512: check kafka.sasl.mechanism (and the port)',
    ],
    [
      'a refused MSK IAM token',
      saslError('SASL OAUTHBEARER authentication failed: Access denied'),
      iam,
      'AUTHENTICATION',
      "Kafka b-1:9098 (SASL_SSL AWS-MSK-IAM): the cluster refused the MSK IAM token (region eu-west-1): does the function's role allow kafka-cluster:Connect on the cluster?",
    ],
    [
      'an expired client certificate',
      wrapped(
        connectionError('Connection error: ssl/tls alert certificate unknown', 'ERR_SSL_SSL/TLS_ALERT_CERTIFICATE_UNKNOWN', 'b-1:9094'),
      ),
      mtls(NOW - 1000),
      'AUTHENTICATION',
      'Kafka b-1:9094 (SSL with a client certificate): the broker refused the client certificate, which expired at 2026-12-01T11:59:59.000Z (TLS alert certificate unknown): renew kafka.ssl.cert and kafka.ssl.key',
    ],
    [
      'a client certificate the broker does not trust',
      connectionError('Connection error: ssl/tls alert bad certificate', 'ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE', 'b-1:9094'),
      mtls(NOW + 86_400_000),
      'AUTHENTICATION',
      'Kafka b-1:9094 (SSL with a client certificate): the broker refused the client certificate (TLS alert bad certificate): is kafka.ssl.cert signed by a CA the broker trusts?',
    ],
    [
      'no client certificate',
      connectionError('Connection error: ssl/tls alert bad certificate', 'ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE', 'b-1:9094'),
      tlsOnly,
      'AUTHENTICATION',
      'Kafka b-1:9094 (SSL): the broker requires a client certificate (TLS alert bad certificate): set kafka.ssl.cert and kafka.ssl.key (mutual TLS)',
    ],
    [
      'an untrusted broker certificate',
      connectionError('self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN'),
      scram,
      'TLS',
      "Kafka b-1:9096 (SASL_SSL SCRAM-SHA-512): the broker's certificate is not signed by a CA this client trusts (SELF_SIGNED_CERT_IN_CHAIN): set kafka.ssl.ca to the CA that signed it",
    ],
    [
      'an expired broker certificate',
      connectionError('certificate has expired', 'CERT_HAS_EXPIRED'),
      scram,
      'TLS',
      "Kafka b-1:9096 (SASL_SSL SCRAM-SHA-512): the broker's certificate has expired (CERT_HAS_EXPIRED)",
    ],
    [
      'a host name the certificate does not list',
      connectionError("Hostname/IP does not match certificate's altnames", 'ERR_TLS_CERT_ALTNAME_INVALID', 'localhost:9096'),
      scram,
      'TLS',
      "Kafka localhost:9096 (SASL_SSL SCRAM-SHA-512): the broker's certificate does not name localhost (ERR_TLS_CERT_ALTNAME_INVALID): connect by a name the certificate lists, in kafka.brokers",
    ],
    [
      'TLS to a plaintext port',
      connectionError(
        'Connection error: Client network socket disconnected before secure TLS connection was established',
        'ECONNRESET',
        'b-1:9092',
      ),
      tlsOnly,
      'TLS',
      'Kafka b-1:9092 (SSL): no TLS handshake from the broker (ECONNRESET): is this a plaintext listener? Use its TLS port, or drop kafka.ssl',
    ],
    [
      'plaintext to a TLS port',
      Object.assign(new Error('Closed connection'), { name: 'KafkaJSConnectionClosedError', host: 'b-1', port: 9094 }),
      plain,
      'TLS',
      'Kafka b-1:9094 (PLAINTEXT): the broker closed the connection at the first request: is this a TLS listener? Set kafka.ssl (and kafka.sasl for a SASL_SSL port)',
    ],
  ])('explains %s', (_what, err, connection, kind, message) => {
    expect(explainConnectionFailure(err, connection, NOW)).toEqual({ kind, message });
  });

  it('leaves what it cannot explain (an unreachable broker, a protocol error) to the caller', () => {
    expect(explainConnectionFailure(connectionError('connect ECONNREFUSED', 'ECONNREFUSED'), plain, NOW)).toBeUndefined();
    expect(
      explainConnectionFailure(
        Object.assign(new Error('This server does not host this topic-partition'), { type: 'UNKNOWN_TOPIC_OR_PARTITION' }),
        scram,
        NOW,
      ),
    ).toBeUndefined();
  });

  it('takes a reset or a close on a client a broker already answered as a connection lost, not a protocol mismatch', () => {
    const reset = connectionError('Connection error: read ECONNRESET', 'ECONNRESET', 'b-1:9094');
    const closed = Object.assign(new Error('Closed connection'), { name: 'KafkaJSConnectionClosedError', host: 'b-1', port: 9092 });
    expect(explainConnectionFailure(reset, tlsOnly, NOW, { established: true })).toBeUndefined();
    expect(explainConnectionFailure(closed, plain, NOW, { established: true })).toBeUndefined();
    // At first contact they still say what is most likely wrong.
    expect(explainConnectionFailure(reset, tlsOnly, NOW)?.kind).toBe('TLS');
    expect(explainConnectionFailure(closed, plain, NOW)?.kind).toBe('TLS');
    // A refused password is a refusal whenever it comes (a rotated secret).
    expect(explainConnectionFailure(saslError('SASL SCRAM SHA512 authentication failed'), scram, NOW, { established: true })?.kind).toBe(
      'AUTHENTICATION',
    );
  });
});
