/**
 * The kafkajs client for a stream's cluster. The kafkajs config is built by a pure function
 * (`kafkaClientConfig`) so what we hand kafkajs is testable without a broker or AWS; `createKafka`
 * only adds the I/O: resolving the password.
 */
import { Kafka, logLevel, type KafkaConfig, type LogEntry, type SASLOptions } from 'kafkajs';
import type { ConnectionOptions } from 'node:tls';
import { ValidationError } from '../errors';
import type { KafkaConnectionConfig, SslConfig } from '../config/schema';
import { mskIamToken, type MskTokenProvider } from './msk-iam';
import { resolveSecret as processSecretResolver, type SecretResolver } from './secrets';

export { mskIamToken, type MskTokenProvider } from './msk-iam';

export type KafkaLogLevel = 'error' | 'warn' | 'info' | 'debug';
/** Receives kafkajs log lines (WARN and ERROR unless KAFKAJS_LOG_LEVEL asks for more). */
export type KafkaLogFn = (level: KafkaLogLevel, message: string, context: Record<string, unknown>) => void;

export type KafkaClientOptions = {
  /** The resolved SASL password, required for scram-sha-* and plain. */
  password?: string;
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

/** Creates a kafkajs client for the config, resolving its SASL password first. */
export async function createKafka(config: KafkaConnectionConfig, deps: CreateKafkaDeps = {}): Promise<Kafka> {
  const sasl = config.sasl;
  const password =
    sasl !== undefined && sasl.mechanism !== 'aws-msk-iam' ? await (deps.resolveSecret ?? processSecretResolver)(sasl.password) : undefined;
  return new Kafka(kafkaClientConfig(config, { password, log: deps.log, mskToken: deps.mskToken, streams: deps.streams }));
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
  };
  const ssl = kafkaSsl(config.ssl, config.sasl?.mechanism === 'aws-msk-iam');
  if (ssl !== undefined) out.ssl = ssl;
  if (config.sasl !== undefined) out.sasl = kafkaSasl(config.sasl, options);
  if (options.log !== undefined) out.logCreator = logCreatorFor(options.log);
  return out;
}

function kafkaSsl(ssl: SslConfig | undefined, tlsRequired: boolean): KafkaConfig['ssl'] {
  if (ssl === undefined) return tlsRequired ? true : undefined;
  if (typeof ssl === 'boolean') return ssl;
  const options: ConnectionOptions = {};
  if (ssl.rejectUnauthorized !== undefined) options.rejectUnauthorized = ssl.rejectUnauthorized;
  if (ssl.ca !== undefined) options.ca = [ssl.ca];
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
    write(
      `[kafkajs ${level}] ${typeof namespace === 'string' && namespace ? `${namespace}: ` : ''}${message}${details.length ? ` (${details.join(', ')})` : ''}`,
    );
  };
}
