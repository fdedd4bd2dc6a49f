/**
 * The kafkajs client for a stream's cluster. The kafkajs config is built by a pure function
 * (`kafkaClientConfig`) so what we hand kafkajs is testable without a broker or AWS; `createKafka`
 * only adds the I/O: resolving the password.
 */
import { Kafka, logLevel, type KafkaConfig, type LogEntry, type SASLOptions } from 'kafkajs';
import type { ConnectionOptions } from 'node:tls';
import { ValidationError } from '../errors';
import { certificateValidToMs } from '../config/pem';
import type { KafkaConnectionConfig, SslConfig } from '../config/schema';
import { wholeResponseSocketFactory } from './framed-socket';
import { describeConnection, type ConnectionDescription } from './connection-failure';
import { readConnectionSecrets } from './connection-secrets';
import { mskIamToken, type MskTokenProvider } from './msk-iam';
import { resolveSecret as processSecretResolver, type SecretResolver } from './secrets';

export type { MskTokenProvider } from './msk-iam';

export type KafkaLogLevel = 'error' | 'warn' | 'info' | 'debug';
/** Receives kafkajs log lines (WARN and ERROR unless KAFKAJS_LOG_LEVEL asks for more). */
export type KafkaLogFn = (level: KafkaLogLevel, message: string, context: Record<string, unknown>) => void;

/** A mutual-TLS client identity, read from its secrets. */
export type ClientTlsIdentity = { cert: string; key: string; passphrase?: string };

export type KafkaClientOptions = {
  /** The resolved SASL password, required for scram-sha-* and plain. */
  password?: string;
  /** The resolved client certificate and key, required when `ssl` names them. */
  tls?: ClientTlsIdentity;
  log?: KafkaLogFn;
  mskToken?: MskTokenProvider;
  /** Ids of the streams the client serves, named when MSK IAM cannot get its role's credentials. */
  streams?: readonly string[];
};

export type CreateKafkaDeps = {
  resolveSecret?: SecretResolver;
  log?: KafkaLogFn;
  mskToken?: MskTokenProvider;
  streams?: readonly string[];
};

/**
 * Creates a kafkajs client for the config, reading its secrets first (SASL password, client
 * certificate and key, checked to be a key pair). `refreshCredentials(kafka)` reads them again.
 */
export async function createKafka(config: KafkaConnectionConfig, deps: CreateKafkaDeps = {}): Promise<Kafka> {
  const resolve = deps.resolveSecret ?? processSecretResolver;
  const secrets = await readConnectionSecrets(config, resolve);
  const kafkaConfig = kafkaClientConfig(config, { ...secrets, log: deps.log, mskToken: deps.mskToken, streams: deps.streams });
  const kafka = new Kafka(kafkaConfig);
  descriptions.set(kafka, describeConnection(config, certificateValidToMs(secrets.tls?.cert)));
  refreshers.set(kafka, async () => {
    const changed = await refreshSecrets(config, resolve, kafkaConfig);
    const cert = (kafkaConfig.ssl as ConnectionOptions | undefined)?.cert;
    descriptions.set(kafka, describeConnection(config, certificateValidToMs(typeof cert === 'string' ? cert : undefined)));
    return changed;
  });
  return kafka;
}

/** How each client created by `createKafka` connects, for failure messages. */
const descriptions = new WeakMap<Kafka, ConnectionDescription>();

/** How `kafka` connects (brokers, TLS, SASL mechanism and user, client certificate validity), when `createKafka` made it. */
export function connectionOf(kafka: Kafka): ConnectionDescription | undefined {
  return descriptions.get(kafka);
}

/** How each client created by `createKafka` reads its secrets again. */
const refreshers = new WeakMap<Kafka, () => Promise<boolean>>();

/**
 * Reads the client's secrets again, past the cache (the broker refused the ones it had: a rotated
 * password or certificate), and gives kafkajs the new values for its next connections; resolves to
 * whether anything changed (when nothing did, trying again would be refused the same way).
 */
export async function refreshCredentials(kafka: Kafka): Promise<boolean> {
  return (await refreshers.get(kafka)?.()) ?? false;
}

async function refreshSecrets(config: KafkaConnectionConfig, resolve: SecretResolver, kafkaConfig: KafkaClientConfig): Promise<boolean> {
  const fresh = await readConnectionSecrets(config, (ref) => resolve(ref, { fresh: true }));
  let changed = false;
  // kafkajs keeps these objects and reads them on every new connection (pinned 2.2.4: SASL
  // authenticators read `sasl.password`, sockets spread `ssl`), so updating them in place is enough.
  const sasl = kafkaConfig.sasl as { password?: string } | undefined;
  if (sasl && fresh.password !== undefined && sasl.password !== fresh.password) {
    sasl.password = fresh.password;
    changed = true;
  }
  const ssl = kafkaConfig.ssl as ConnectionOptions | undefined;
  if (typeof ssl === 'object' && fresh.tls && (ssl.cert !== fresh.tls.cert || ssl.key !== fresh.tls.key)) {
    Object.assign(ssl, { cert: fresh.tls.cert, key: fresh.tls.key, passphrase: fresh.tls.passphrase });
    changed = true;
  }
  return changed;
}

/** kafkajs's constructor config, narrowed to the built-in SASL mechanisms we configure. */
export type KafkaClientConfig = Omit<KafkaConfig, 'sasl'> & { sasl?: SASLOptions };

/** kafkajs's per-call retry (connect, metadata refresh): two retries, 200 ms then 400 ms. */
export const KAFKAJS_RETRY = { retries: 2, initialRetryTime: 200, maxRetryTime: 1_000 } as const;

/** The kafkajs constructor config for a validated connection config (pure; no I/O). */
export function kafkaClientConfig(config: KafkaConnectionConfig, options: KafkaClientOptions = {}): KafkaClientConfig {
  const out: KafkaClientConfig = {
    brokers: [...config.brokers],
    clientId: config.clientId,
    connectionTimeout: config.connectionTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    // kafkajs logs every reconnect and retry at INFO; at Lambda volume that is noise and cost.
    logLevel: logLevel.WARN,
    // kafkajs's own retries sit inside the project's bounded retry loops (metadata, range reader),
    // and its default (5 retries from 300 ms, doubling) keeps a caller of an unreachable broker
    // waiting ~10 s per call before any error surfaces. Two quick retries bound the first failure
    // to about 3 x connectionTimeoutMs (a refused connection: well under a second).
    retry: KAFKAJS_RETRY,
    // Each response read into one buffer of its size, not 64 KiB reads kafkajs copies together.
    socketFactory: wholeResponseSocketFactory,
  };
  const ssl = kafkaSsl(config.ssl, config.sasl?.mechanism === 'aws-msk-iam', options.tls);
  if (ssl !== undefined) out.ssl = ssl;
  if (config.sasl !== undefined) out.sasl = kafkaSasl(config.sasl, options);
  if (options.log !== undefined) out.logCreator = logCreatorFor(options.log);
  return out;
}

function kafkaSsl(ssl: SslConfig | undefined, tlsRequired: boolean, tls: ClientTlsIdentity | undefined): KafkaConfig['ssl'] {
  if (ssl === undefined) return tlsRequired ? true : undefined;
  if (typeof ssl === 'boolean') return ssl;
  const options: ConnectionOptions = {};
  if (ssl.rejectUnauthorized !== undefined) options.rejectUnauthorized = ssl.rejectUnauthorized;
  if (ssl.ca !== undefined) options.ca = [ssl.ca];
  if (ssl.key !== undefined) {
    if (tls === undefined) throw new ValidationError('mutual TLS needs the client certificate and key read from their secrets first');
    Object.assign(options, { cert: tls.cert, key: tls.key }, tls.passphrase !== undefined ? { passphrase: tls.passphrase } : {});
  }
  return options;
}

function kafkaSasl(sasl: NonNullable<KafkaConnectionConfig['sasl']>, options: KafkaClientOptions): SASLOptions {
  if (sasl.mechanism === 'aws-msk-iam') {
    const tokenFor = options.mskToken ?? mskIamToken;
    // kafkajs calls this on every (re)authentication, and MSK tokens expire after 15 minutes, so
    // a token is never reused (an assumed role's credentials are: msk-iam.ts).
    return { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: await tokenFor(sasl, options.streams) }) };
  }
  if (options.password === undefined) {
    throw new ValidationError(`SASL ${sasl.mechanism} for user ${sasl.username} needs its password resolved first`);
  }
  return { mechanism: sasl.mechanism, username: sasl.username, password: options.password };
}

const LEVEL_NAMES: Record<number, KafkaLogLevel> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** Adapts kafkajs's logger to a plain log function (kafkajs has already filtered by level). */
export function logCreatorFor(log: KafkaLogFn): NonNullable<KafkaConfig['logCreator']> {
  return () =>
    ({ namespace, level, log: entry }: LogEntry) => {
      const { message, timestamp: _timestamp, logger: _logger, ...extra } = entry;
      log(LEVEL_NAMES[level] ?? 'warn', String(message), { namespace, ...extra });
    };
}

/** Drops kafkajs's log lines: the CLI's default, which reports the one failure that matters itself. */
export const quietKafkaLog: KafkaLogFn = () => undefined;

/** Writes kafkajs's log lines as plain text lines (the CLI's `--verbose`, the local runtime's log). */
export function kafkaLogLines(write: (line: string) => void): KafkaLogFn {
  return (level, message, context) => {
    const { namespace, ...extra } = context;
    const details = Object.entries(extra)
      .filter(([k, v]) => v !== undefined && k !== 'stack')
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
    const where = typeof namespace === 'string' && namespace ? `${namespace}: ` : '';
    write(`[kafkajs ${level}] ${where}${message}${details.length ? ` (${details.join(', ')})` : ''}`);
  };
}
