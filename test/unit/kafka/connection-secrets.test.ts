/** Mutual TLS identities read from their secrets: a key pair or a one-line refusal naming the field and the secret. */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureTlsMaterial } from '../../../infra/local/kafka-tls';
import { parseStreamConfig, type KafkaConnectionConfig } from '../../../lib/config/schema';
import { ValidationError } from '../../../lib/errors';
import { readConnectionSecrets } from '../../../lib/kafka/connection-secrets';
import type { SecretResolver } from '../../../lib/kafka/secrets';

const tls = ensureTlsMaterial(join(mkdtempSync(join(tmpdir(), 'tls-')), 'tls'));
const pem = (file: string) => readFileSync(file, 'utf8');
const ca = pem(tls.caCert);

const config = (ssl: Record<string, unknown>): KafkaConnectionConfig =>
  parseStreamConfig({ id: 's', kafka: { brokers: ['b:9094'], ssl: { ca, ...ssl } }, topics: ['t'] }, 'test').kafka;
/** Secrets by Secrets Manager id. */
const store =
  (values: Record<string, string>): SecretResolver =>
  async (ref) => {
    if (!('secretArn' in ref)) throw new Error('unexpected reference');
    const v = values[ref.secretArn];
    if (v === undefined) throw new Error(`no secret ${ref.secretArn}`);
    return v;
  };

describe('readConnectionSecrets', () => {
  it('reads the certificate (inline or a secret) and the key, checked to be a pair', async () => {
    const inline = await readConnectionSecrets(
      config({ cert: pem(tls.clientCert), key: { secretArn: 'key' } }),
      store({ key: pem(tls.clientKey) }),
    );
    expect(inline.tls).toEqual({ cert: pem(tls.clientCert), key: pem(tls.clientKey) });
    const both = await readConnectionSecrets(
      config({ cert: { secretArn: 'cert' }, key: { secretArn: 'key' } }),
      store({ cert: pem(tls.clientCert), key: pem(tls.clientKey) }),
    );
    expect(both.tls?.cert).toBe(pem(tls.clientCert));
  });

  it.each([
    [
      'a key of another certificate',
      { cert: pem(tls.clientCert), key: { secretArn: 'key' } },
      { key: pem(tls.expiredClientKey) },
      'kafka.ssl.key (Secrets Manager secret key) does not match kafka.ssl.cert (PEM text in the config): the certificate is for another key',
    ],
    [
      'a secret that holds no key',
      { cert: pem(tls.clientCert), key: { secretArn: 'key' } },
      { key: 'hunter2' },
      'kafka.ssl.key (Secrets Manager secret key) is not a PEM private key',
    ],
    [
      'a certificate secret that holds no certificate',
      { cert: { secretArn: 'cert' }, key: { secretArn: 'key' } },
      { cert: 'nope', key: pem(tls.clientKey) },
      'kafka.ssl.cert (Secrets Manager secret cert): must be PEM text',
    ],
  ])('refuses %s, naming the field and the secret, never the material', async (_what, ssl, values, message) => {
    const read = readConnectionSecrets(config(ssl), store(values));
    await expect(read).rejects.toThrow(ValidationError);
    await expect(read).rejects.toThrow(message);
    // The format it expects, never what it got.
    await expect(read).rejects.not.toThrow(/hunter2|MII/);
  });
});

describe('the ssl config', () => {
  it.each([
    [{ cert: pem(tls.clientCert) }, 'mutual TLS needs both cert and key (key is missing)'],
    [{ key: { secretArn: 'key' } }, 'mutual TLS needs both cert and key (cert is missing)'],
    [{ cert: pem(tls.clientCert), key: pem(tls.clientKey) }, 'kafka.ssl.key: plain-text'],
    [{ cert: '/etc/kafka/client.pem', key: { secretArn: 'k' } }, 'kafka.ssl.cert'],
    [{ ca: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' }, 'kafka.ssl.ca: certificate 1 of 1 does not parse'],
    [{ passphrase: { secretArn: 'p' } }, 'kafka.ssl.passphrase: is the passphrase of ssl.key, which is not set'],
  ])('refuses %j at load', (ssl, message) => {
    expect(() => config(ssl)).toThrow(message);
  });
});
