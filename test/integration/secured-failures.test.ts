/**
 * Every way a secured connection fails, on the test run's secured broker: one line naming the broker,
 * the way in and the setting to check, from the planner (whose run fails with nothing written to the
 * ledger: the cluster is asked before the lease) and from the operations CLI.
 */
import { parseDeploymentConfig } from '../../lib/config/schema';
import { runCli } from '../../lib/cli/program';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { runPlanner } from '../../lib/planner/run';
import { composeAdapters } from '../../lib/runtime/compose';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { scanItems } from '../support/scan';
import { pem, securedBroker } from '../support/secured';

const broker = securedBroker();
const ddb = testDynamo();
const admin = testKafka('secured-failures').admin();
const topic = uniqueName('secured-failures');
const port = (address: string) => address.split(':')[1];
process.env.FAILURES_GOOD_PASSWORD = broker.password;
process.env.FAILURES_BAD_PASSWORD = 'not-the-password';
process.env.FAILURES_CLIENT_KEY = pem(broker.tls.clientKey);
process.env.FAILURES_EXPIRED_KEY = pem(broker.tls.expiredClientKey);

beforeAll(async () => {
  await admin.connect();
  await createTopicsReady(admin, [{ topic }]);
}, 60_000);
afterAll(async () => {
  await admin.disconnect();
  ddb.destroy();
});

const ca = pem(broker.tls.caCert);
const scram = (username: string, passwordEnv: string) => ({ mechanism: 'scram-sha-512', username, password: { env: passwordEnv } });

/** A failure: the stream's kafka settings, and what its one line must say. */
const FAILURES: Array<[string, Record<string, unknown>, RegExp]> = [
  ['an unreachable broker', { brokers: ['127.0.0.1:1'] }, /^Kafka: cannot reach 127\.0\.0\.1:1 \(ECONNREFUSED\)/],
  [
    'a wrong SCRAM password',
    { brokers: [broker.saslSsl], ssl: { ca }, sasl: scram(broker.username, 'FAILURES_BAD_PASSWORD') },
    new RegExp(
      `^Kafka ${broker.saslSsl} \\(SASL_SSL SCRAM-SHA-512\\): SASL authentication of user "${broker.username}" refused \\(wrong password or unknown user\\): check kafka\\.sasl\\.username and kafka\\.sasl\\.password$`,
    ),
  ],
  [
    'an unknown user',
    { brokers: [broker.saslSsl], ssl: { ca }, sasl: scram('nobody', 'FAILURES_GOOD_PASSWORD') },
    /\(SASL_SSL SCRAM-SHA-512\): SASL authentication of user "nobody" refused/,
  ],
  [
    'a CA that did not sign the broker certificate',
    { brokers: [broker.saslSsl], ssl: { ca: pem(broker.tls.otherCaCert) }, sasl: scram(broker.username, 'FAILURES_GOOD_PASSWORD') },
    new RegExp(
      `^Kafka ${broker.saslSsl} \\(SASL_SSL SCRAM-SHA-512\\): the broker's certificate is not signed by a CA this client trusts \\(SELF_SIGNED_CERT_IN_CHAIN\\): set kafka\\.ssl\\.ca`,
    ),
  ],
  [
    'a host name the certificate does not list',
    { brokers: [`localhost:${port(broker.saslSsl)}`], ssl: { ca }, sasl: scram(broker.username, 'FAILURES_GOOD_PASSWORD') },
    /^Kafka localhost:\d+ \(SASL_SSL SCRAM-SHA-512\): the broker's certificate does not name localhost \(ERR_TLS_CERT_ALTNAME_INVALID\)/,
  ],
  [
    'an expired client certificate',
    { brokers: [broker.ssl], ssl: { ca, cert: pem(broker.tls.expiredClientCert), key: { env: 'FAILURES_EXPIRED_KEY' } } },
    new RegExp(
      `^Kafka ${broker.ssl} \\(SSL with a client certificate\\): the broker refused the client certificate, which expired at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z \\(TLS alert certificate unknown\\): renew kafka\\.ssl\\.cert and kafka\\.ssl\\.key$`,
    ),
  ],
  [
    'no client certificate where one is required',
    { brokers: [broker.ssl], ssl: { ca } },
    new RegExp(
      `^Kafka ${broker.ssl} \\(SSL\\): the broker requires a client certificate \\(TLS alert bad certificate\\): set kafka\\.ssl\\.cert`,
    ),
  ],
  [
    'TLS against a plaintext port',
    { brokers: [process.env.KAFKA_BROKERS!.split(',')[0]!], ssl: { ca } },
    /\(SSL\): no TLS handshake from the broker \(ECONNRESET\): is this a plaintext listener\? Use its TLS port, or drop kafka\.ssl$/,
  ],
  [
    'plaintext against a TLS port',
    { brokers: [broker.ssl] },
    new RegExp(
      `^Kafka ${broker.ssl} \\(PLAINTEXT\\): the broker closed the connection at the first request: is this a TLS listener\\? Set kafka\\.ssl`,
    ),
  ],
];

describe.each(FAILURES)('%s', (_what, kafka, expected) => {
  const config = parseDeploymentConfig(
    {
      ledgerTable: uniqueName('failures-ledger'),
      streams: [{ id: 'f', kafka: { ...kafka, connectionTimeoutMs: 3000, requestTimeoutMs: 5000 }, topics: [topic] }],
    },
    'failure test',
  );

  it('fails the planner run with that one line, and writes nothing to the ledger', async () => {
    await ensureLedgerTable(ddb, config.ledgerTable);
    const adapters = composeAdapters({ config, env: process.env, kafkaLog: () => undefined });
    try {
      const [report] = await runPlanner(
        {
          ledger: adapters.ledger,
          metadataFor: (s) => adapters.metadata.forStream(s),
          dispatcher: { dispatch: async () => [] },
          plannerLeaseMs: 30_000,
        },
        { streams: config.streams, dryRun: false, nowMs: Date.now() },
      );
      expect(report!.status).toBe('failed');
      expect(report!.reason!.replace(/^KafkaError: /, '')).toMatch(expected);
      expect(report!.reason!.split('\n')).toHaveLength(1);
      expect(await scanItems(ddb, config.ledgerTable)).toEqual([]);
    } finally {
      await adapters.close();
    }
  }, 60_000);

  it('fails the CLI status with that line, exit 1', async () => {
    let out = '';
    let err = '';
    const code = await runCli(
      ['status', 'f'],
      { out: (s) => (out += s), err: (s) => (err += s) },
      {
        env: { ...process.env, KAFKA_BROKERS: '' },
        loadConfig: () => ({ config, env: process.env }),
      },
    );
    expect(code).toBe(1);
    const line = err.split('\n').find((l) => l.startsWith('error: '));
    expect(line?.replace(/^error: /, '').replace(/ \[kafka\.brokers of stream f\]$/, '')).toMatch(expected);
    expect(out).toContain('stream f');
  }, 60_000);
});
