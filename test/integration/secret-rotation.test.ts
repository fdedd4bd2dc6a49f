/**
 * A rotated secret is picked up without a parked range: a stream reads a SCRAM-SHA-512 password from
 * a Secrets Manager secret (the local emulator's), a warm runtime has it cached; between two planner
 * runs the password changes on the broker and in the secret. The next new connections are refused
 * once, the client reads the secret again past its cache, and the runs go on: nothing failed, every
 * range done in one attempt. The same for a mutual-TLS client whose certificate and key (a secret)
 * expired and were renewed in the secret.
 */
import { CreateSecretCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { parseDeploymentConfig } from '../../lib/config/schema';
import { createSecretResolver } from '../../lib/kafka/secrets';
import { readSecretsManager } from '../../lib/kafka/secrets.aws';
import { createLocalRunner, runnerDepsFrom } from '../../lib/runtime/local';
import { composeAdapters } from '../../lib/runtime/compose';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { createSinkTable, createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { pem, securedBroker, setScramPassword, waitForScramPassword } from '../support/secured';

const broker = securedBroker();
const plain = testKafka('rotation-test');
const admin = plain.admin();
const producer = plain.producer({ allowAutoTopicCreation: false });
const ddb = testDynamo();
const secrets = new SecretsManagerClient({
  endpoint: process.env.DYNAMODB_ENDPOINT,
  region: 'us-east-1',
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});
const user = uniqueName('rotating');
const topic = uniqueName('rotation');

beforeAll(async () => {
  await Promise.all([admin.connect(), producer.connect()]);
  await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
}, 60_000);
afterAll(async () => {
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
  secrets.destroy();
});

const produce = (n: number, from: number) =>
  producer.send({
    topic,
    messages: Array.from({ length: n }, (_, i) => ({ key: `acct-${i % 4}`, value: JSON.stringify({ amount: from + i }) })),
  });

it('re-reads the password once when the broker refuses it, and parks nothing', async () => {
  setScramPassword(user, 'first-password');
  await waitForScramPassword(broker, user, 'first-password');
  const secret = await secrets.send(
    new CreateSecretCommand({ Name: uniqueName('kafka/app'), SecretString: JSON.stringify({ password: 'first-password' }) }),
  );
  let storeReads = 0;
  // The emulator's Secrets Manager through the SDK; the cache lives as long as a warm Lambda's (5 min).
  const resolveSecret = createSecretResolver({ readSecretsManager: (id) => (storeReads++, readSecretsManager(secrets, id)) });
  const sink = await createSinkTable(ddb, 'rotation-sink');
  const config = parseDeploymentConfig(
    {
      ledgerTable: uniqueName('rotation-ledger'),
      streams: [
        {
          id: 'rot',
          kafka: {
            brokers: [broker.saslSsl],
            ssl: { ca: pem(broker.tls.caCert) },
            sasl: { mechanism: 'scram-sha-512', username: user, password: { secretArn: secret.ARN!, field: 'password' } },
          },
          topics: [topic],
          triggerIntervalMs: 1000,
          processor: { timeoutMs: 30_000 },
          handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: sink },
        },
      ],
    },
    'rotation test',
  );
  await ensureLedgerTable(ddb, config.ledgerTable);
  const adapters = composeAdapters({ config, env: process.env, resolveSecret });
  const runner = createLocalRunner(runnerDepsFrom(adapters), config.streams);
  try {
    await produce(40, 0);
    const first = await runner.planOnce();
    await runner.idle();
    expect(first.map((r) => r.status)).toEqual(['planned']);
    expect(storeReads).toBe(1);

    // Rotation: the broker and the secret get the new password; the runtime still caches the old one.
    setScramPassword(user, 'second-password');
    await waitForScramPassword(broker, user, 'second-password', 'first-password');
    await secrets.send(new PutSecretValueCommand({ SecretId: secret.ARN!, SecretString: JSON.stringify({ password: 'second-password' }) }));
    // New connections from here on, as after an idle disconnect or a broker restart.
    await adapters.closeConnections();
    await adapters.metadata.closeAll();

    await produce(40, 40);
    const second = await runner.planOnce();
    await runner.idle();
    expect(second.map((r) => [r.status, r.reason])).toEqual([['planned', undefined]]);
    // The old password was refused and the secret read again past its cache (the fault fired).
    expect(storeReads).toBeGreaterThanOrEqual(2);
    const parts = await adapters.ledger.readPartitions('rot');
    expect(parts.map((p) => p.committed).reduce((a, b) => a + b, 0)).toBe(80);
    const open = await adapters.ledger.readOpenRanges('rot');
    expect(open.filter((r) => r.status === 'parked' || r.status === 'failed')).toEqual([]);
    expect(runner.stats().byStatus).toEqual({ done: expect.any(Number) });
  } finally {
    await runner.stop();
    await adapters.close();
  }
}, 120_000);

it('re-reads a client certificate and key the broker refuses, and connects with the renewed ones', async () => {
  const identity = (cert: string, key: string) => JSON.stringify({ cert: pem(cert), key: pem(key) });
  const secret = await secrets.send(
    new CreateSecretCommand({
      Name: uniqueName('kafka/client'),
      SecretString: identity(broker.tls.expiredClientCert, broker.tls.expiredClientKey),
    }),
  );
  let storeReads = 0;
  const resolveSecret = createSecretResolver({ readSecretsManager: (id) => (storeReads++, readSecretsManager(secrets, id)) });
  const ref = (field: string) => ({ secretArn: secret.ARN!, field });
  const config = parseDeploymentConfig(
    {
      ledgerTable: uniqueName('mtls-rotation-ledger'),
      streams: [
        {
          id: 'mtls',
          kafka: { brokers: [broker.ssl], ssl: { ca: pem(broker.tls.caCert), cert: ref('cert'), key: ref('key') } },
          topics: [topic],
          handler: { module: 'noop', mode: 'at-least-once' },
        },
      ],
    },
    'mtls rotation test',
  );
  const adapters = composeAdapters({ config, env: process.env, resolveSecret, kafkaLog: () => undefined });
  try {
    const stream = config.streams[0]!;
    // The expired certificate is refused; reading the secret again finds the same one: the refusal stands.
    const refused = adapters.metadata.forStream(stream).then((m) => m.describeTopics({ topics: [topic] }));
    await expect(refused).rejects.toThrow(/the broker refused the client certificate, which expired at/);
    const readsBefore = storeReads;
    // Renewed in the secret; the warm client still holds the expired pair.
    await secrets.send(
      new PutSecretValueCommand({ SecretId: secret.ARN!, SecretString: identity(broker.tls.clientCert, broker.tls.clientKey) }),
    );
    const md = await adapters.metadata.forStream(stream);
    expect((await md.describeTopics({ topics: [topic] })).map((t) => t.topic)).toEqual([topic]);
    expect(storeReads).toBeGreaterThan(readsBefore);
  } finally {
    await adapters.close();
  }
}, 60_000);
