/**
 * The secrets a Kafka connection needs, read through the secret resolver: the SASL password, and
 * for mutual TLS the client certificate (PEM text in the config, or a secret) and its private key
 * (always a secret), checked to be a key pair before any connection is tried. Messages name the
 * config field and the secret reference, never the material.
 */
import type { KafkaConnectionConfig, SecretRef } from '../config/schema';
import { certificateMatchesKey, parsePrivateKey, pemCertificateProblem } from '../config/pem';
import { ValidationError } from '../errors';
import type { ClientTlsIdentity } from './client';
import { describeSecretRef, type SecretResolver } from './secrets';

export type ConnectionSecrets = { password?: string; tls?: ClientTlsIdentity };

/** Reads (and checks) the secrets of `config`. */
export async function readConnectionSecrets(config: KafkaConnectionConfig, resolve: SecretResolver): Promise<ConnectionSecrets> {
  const sasl = config.sasl;
  const ssl = typeof config.ssl === 'object' ? config.ssl : undefined;
  const [password, tls] = await Promise.all([
    sasl !== undefined && sasl.mechanism !== 'aws-msk-iam' ? resolve(sasl.password) : undefined,
    ssl?.key !== undefined && ssl.cert !== undefined ? readIdentity(ssl.cert, ssl.key, ssl.passphrase, resolve) : undefined,
  ]);
  return { ...(password !== undefined ? { password } : {}), ...(tls ? { tls } : {}) };
}

async function readIdentity(
  certSetting: string | SecretRef,
  keyRef: SecretRef,
  passphraseRef: SecretRef | undefined,
  resolve: SecretResolver,
): Promise<ClientTlsIdentity> {
  const [cert, key, passphrase] = await Promise.all([
    typeof certSetting === 'string' ? certSetting : resolve(certSetting),
    resolve(keyRef),
    passphraseRef ? resolve(passphraseRef) : undefined,
  ]);
  const certProblem = typeof certSetting === 'string' ? undefined : pemCertificateProblem(cert);
  if (certProblem) throw new ValidationError(`kafka.ssl.cert (${describeRef(certSetting)}): ${certProblem}`);
  const parsed = parsePrivateKey(key, passphrase);
  if ('problem' in parsed) throw new ValidationError(`kafka.ssl.key (${describeRef(keyRef)}) ${parsed.problem}`);
  if (!certificateMatchesKey(cert, parsed.key)) {
    throw new ValidationError(
      `kafka.ssl.key (${describeRef(keyRef)}) does not match kafka.ssl.cert ` +
        `(${describeRef(certSetting)}): the certificate is for another key`,
    );
  }
  return { cert, key, ...(passphrase !== undefined ? { passphrase } : {}) };
}

/** A setting as messages name it: where its secret lives, or that the value is in the config. */
function describeRef(ref: string | SecretRef): string {
  return typeof ref === 'string' ? 'PEM text in the config' : describeSecretRef(ref);
}
