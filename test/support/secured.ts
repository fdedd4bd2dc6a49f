/**
 * The secured listeners of the test run's broker (global set-up starts it secured: SASL_SSL with
 * SCRAM-SHA-512, SSL requiring client certificates), and stream `kafka` settings for each mechanism.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { ensureKafkaJars, javaBinary } from '../../infra/local/kafka';
import { tlsFiles, type TlsMaterial } from '../../infra/local/kafka-tls';
import { CACHE_DIR } from '../../infra/local/stack/dirs';
import { waitFor } from './wait-for';

export type SecuredBroker = { saslSsl: string; ssl: string; tls: TlsMaterial; username: string; password: string };

/** The test run's secured listeners, from the environment global set-up (or `local:up --secured`) gives. */
export function securedBroker(): SecuredBroker {
  const env = process.env;
  const missing = ['KAFKA_SASL_SSL_BROKERS', 'KAFKA_SSL_BROKERS', 'KAFKA_TLS_DIR', 'KAFKA_SCRAM_USERNAME', 'KAFKA_SCRAM_PASSWORD'].filter(
    (n) => !env[n],
  );
  if (missing.length) {
    throw new Error(
      `${missing.join(', ')} not set: run the tests through jest (global set-up starts a secured broker), or export what \`npm run local:up -- --secured\` prints`,
    );
  }
  return {
    saslSsl: env.KAFKA_SASL_SSL_BROKERS!,
    ssl: env.KAFKA_SSL_BROKERS!,
    tls: tlsFiles(env.KAFKA_TLS_DIR!),
    username: env.KAFKA_SCRAM_USERNAME!,
    password: env.KAFKA_SCRAM_PASSWORD!,
  };
}

export const pem = (file: string): string => readFileSync(file, 'utf8');

/** Environment variables the secured configs read their secrets from (a local run's secret store). */
export const SECRET_ENV = { password: 'SECURED_TEST_SCRAM_PASSWORD', clientKey: 'SECURED_TEST_CLIENT_KEY' } as const;

/** Puts the secrets the configs name into this process's environment. */
export function exportSecrets(b: SecuredBroker): void {
  process.env[SECRET_ENV.password] = b.password;
  process.env[SECRET_ENV.clientKey] = pem(b.tls.clientKey);
}

export type Mechanism = { name: string; brokers: string; kafka: Record<string, unknown> };

/** The two secured ways in, as stream `kafka` settings (brokers apart: local runs take KAFKA_BROKERS). */
export function mechanisms(b: SecuredBroker): Mechanism[] {
  const ca = pem(b.tls.caCert);
  return [
    {
      name: 'SASL/SCRAM-SHA-512 over TLS',
      brokers: b.saslSsl,
      kafka: { ssl: { ca }, sasl: { mechanism: 'scram-sha-512', username: b.username, password: { env: SECRET_ENV.password } } },
    },
    {
      name: 'mutual TLS',
      brokers: b.ssl,
      kafka: { ssl: { ca, cert: pem(b.tls.clientCert), key: { env: SECRET_ENV.clientKey } } },
    },
  ];
}

/**
 * Sets (creates or changes) a SCRAM-SHA-512 user's password on the broker, over its PLAINTEXT
 * listener, with Kafka's own ConfigCommand (kafkajs has no AlterUserScramCredentials).
 */
export function setScramPassword(user: string, password: string): void {
  const libs = ensureKafkaJars(CACHE_DIR);
  const args = ['-cp', `${libs}/*`, 'kafka.admin.ConfigCommand', '--bootstrap-server', process.env.KAFKA_BROKERS!.split(',')[0]!];
  args.push('--alter', '--add-config', `SCRAM-SHA-512=[password=${password}]`, '--entity-type', 'users', '--entity-name', user);
  const run = spawnSync(javaBinary(), args, { encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`kafka ConfigCommand failed (exit ${run.status}): ${run.stderr || run.stdout}`);
}

/**
 * Waits until the broker accepts `password` for `user` and, with `refused`, no longer accepts that
 * one: a SCRAM change reaches the SASL listener asynchronously (through the controller's metadata
 * log), so a test that rotates a password first waits for the rotation to have taken effect.
 */
export async function waitForScramPassword(b: SecuredBroker, user: string, password: string, refused?: string): Promise<void> {
  const logins = async () => ({
    newAccepted: await scramLogin(b, user, password),
    oldRefused: refused === undefined || !(await scramLogin(b, user, refused)),
  });
  await waitFor(`the broker to accept the new SCRAM password of ${user}${refused === undefined ? '' : ' and refuse the old'}`, logins, {
    until: (l) => l.newAccepted && l.oldRefused,
    timeoutMs: 30_000,
    intervalMs: 250,
  });
}

/** Whether a SCRAM-SHA-512 login as `user` with `password` succeeds on the SASL_SSL listener. */
async function scramLogin(b: SecuredBroker, user: string, password: string): Promise<boolean> {
  const kafka = new Kafka({
    clientId: 'scram-probe',
    brokers: [b.saslSsl],
    ssl: { ca: [pem(b.tls.caCert)] },
    sasl: { mechanism: 'scram-sha-512', username: user, password },
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    return true;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
