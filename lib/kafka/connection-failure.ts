/**
 * Why a connection to a cluster failed, in one line naming the broker, the way in (PLAINTEXT, SSL,
 * SASL_SSL with its mechanism) and the setting to check: refused SASL credentials, a client
 * certificate the broker refused (missing or expired), a broker certificate this client does not
 * trust or that names another host, TLS spoken to a plaintext port and plaintext to a TLS port.
 * kafkajs reports all of these as a connection error with the TLS or socket code buried in it.
 */
import type { KafkaConnectionConfig } from '../config/schema';

/** How a client connects, for messages (what `createKafka` was given; no secrets). */
export type ConnectionDescription = {
  brokers: string[];
  tls: boolean;
  /** SASL mechanism and user, when SASL is used. */
  sasl?: { mechanism: string; username?: string; region?: string };
  /** End of validity of the client certificate (mutual TLS), epoch ms. */
  clientCertValidToMs?: number;
};

/** The description of a connection config (the client certificate's validity from the resolved certificate). */
export function describeConnection(config: KafkaConnectionConfig, clientCertValidToMs?: number): ConnectionDescription {
  const sasl = config.sasl;
  return {
    brokers: [...config.brokers],
    tls: config.ssl !== undefined ? config.ssl !== false : sasl?.mechanism === 'aws-msk-iam',
    ...(sasl
      ? {
          sasl: {
            mechanism: sasl.mechanism,
            ...('username' in sasl ? { username: sasl.username } : {}),
            ...('region' in sasl ? { region: sasl.region } : {}),
          },
        }
      : {}),
    ...(clientCertValidToMs !== undefined ? { clientCertValidToMs } : {}),
  };
}

type ErrorLike = { name?: unknown; message?: unknown; code?: unknown; broker?: unknown; host?: unknown; port?: unknown; cause?: unknown };

function chain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  for (let e = err, i = 0; typeof e === 'object' && e !== null && i < 6; e = (e as ErrorLike).cause, i++) out.push(e as ErrorLike);
  return out;
}

const UNTRUSTED_SERVER = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);
const CLIENT_CERT_ALERT = /alert[ _](bad[ _]certificate|certificate[ _](unknown|expired|revoked|required)|unknown[ _]ca)/i;

/** Whether the broker refused the client's credentials: SASL authentication failed, or its TLS client certificate. */
export function isCredentialRefusal(err: unknown): boolean {
  return chain(err).some(
    (e) => e.name === 'KafkaJSSASLAuthenticationError' || (typeof e.message === 'string' && CLIENT_CERT_ALERT.test(e.message)),
  );
}

/** The way in, as Kafka names listener security protocols. */
function way(c: ConnectionDescription): string {
  if (c.sasl) return `${c.tls ? 'SASL_SSL' : 'SASL_PLAINTEXT'} ${c.sasl.mechanism.toUpperCase()}`;
  return c.tls ? (c.clientCertValidToMs !== undefined ? 'SSL with a client certificate' : 'SSL') : 'PLAINTEXT';
}

/**
 * What a refused connection was refused for: credentials (SASL, client certificate) or TLS (the
 * broker's certificate, a protocol mismatch).
 */
export type ConnectionRefusal = { kind: 'AUTHENTICATION' | 'TLS'; message: string };

/**
 * The refusal of a connection failure of a client described by `c`, or undefined when `err` is none we
 * can explain. `established`: a broker has already answered this client, so a reset or a closed
 * connection is a connection lost, not a protocol mismatch (those rules apply to a first contact only).
 */
export function explainConnectionFailure(
  err: unknown,
  c: ConnectionDescription,
  nowMs: number,
  opts: { established?: boolean } = {},
): ConnectionRefusal | undefined {
  const message = explain(err, c, nowMs, opts.established ?? false);
  if (message === undefined) return undefined;
  return { kind: isCredentialRefusal(err) ? 'AUTHENTICATION' : 'TLS', message };
}

function explain(err: unknown, c: ConnectionDescription, nowMs: number, established: boolean): string | undefined {
  const errors = chain(err);
  const text = errors.map((e) => `${String(e.name ?? '')} ${String(e.message ?? '')} ${String(e.code ?? '')}`).join(' | ');
  const codes = errors.map((e) => (typeof e.code === 'string' ? e.code : '')).filter(Boolean);
  const connErr = errors.find((e) => e.name === 'KafkaJSConnectionError' || e.name === 'KafkaJSConnectionClosedError');
  const broker =
    typeof connErr?.broker === 'string'
      ? connErr.broker
      : typeof connErr?.host === 'string'
        ? `${connErr.host}:${String(connErr.port)}`
        : c.brokers.join(',');
  const at = `Kafka ${broker} (${way(c)})`;
  if (errors.some((e) => e.name === 'KafkaJSSASLAuthenticationError')) return saslRefused(at, text, c);
  if (CLIENT_CERT_ALERT.test(text)) return clientCertRefused(at, text, c, nowMs);
  const code = codes.find((x) => UNTRUSTED_SERVER.has(x) || x === 'CERT_HAS_EXPIRED' || x === 'ERR_TLS_CERT_ALTNAME_INVALID');
  if (code === 'CERT_HAS_EXPIRED') return `${at}: the broker's certificate has expired (CERT_HAS_EXPIRED)`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return (
      `${at}: the broker's certificate does not name ${broker.replace(/:\d+$/, '')} ` +
      `(ERR_TLS_CERT_ALTNAME_INVALID): connect by a name the certificate lists, in kafka.brokers`
    );
  }
  if (code)
    return `${at}: the broker's certificate is not signed by a CA this client trusts (${code}): set kafka.ssl.ca to the CA that signed it`;
  if (established) return undefined;
  if (c.tls && /ECONNRESET|EPROTO|wrong version number|disconnected before secure TLS connection|packet length too long/i.test(text)) {
    return (
      `${at}: no TLS handshake from the broker (${codes[0] ?? 'connection reset'}): ` +
      `is this a plaintext listener? Use its TLS port, or drop kafka.ssl`
    );
  }
  if (!c.tls && errors.some((e) => e.name === 'KafkaJSConnectionClosedError' || /Closed connection/i.test(String(e.message)))) {
    return (
      `${at}: the broker closed the connection at the first request: is this ` +
      `a TLS listener? Set kafka.ssl (and kafka.sasl for a SASL_SSL port)`
    );
  }
  return undefined;
}

function saslRefused(at: string, text: string, c: ConnectionDescription): string {
  const mechanism = c.sasl?.mechanism ?? 'SASL';
  if (/mechanism is not supported by the server/i.test(text)) {
    return `${at}: the listener does not take SASL ${mechanism.toUpperCase()}: check kafka.sasl.mechanism (and the port)`;
  }
  if (mechanism === 'aws-msk-iam') {
    return (
      `${at}: the cluster refused the MSK IAM token (region ${c.sasl?.region ?? '?'}): ` +
      `does the function's role allow kafka-cluster:Connect on the cluster?`
    );
  }
  return (
    `${at}: SASL authentication of user ${JSON.stringify(c.sasl?.username ?? '')} refused ` +
    `(wrong password or unknown user): check kafka.sasl.username and kafka.sasl.password`
  );
}

function clientCertRefused(at: string, text: string, c: ConnectionDescription, nowMs: number): string {
  const alert = CLIENT_CERT_ALERT.exec(text)?.[0].toLowerCase().replace(/_/g, ' ') ?? 'alert';
  if (c.clientCertValidToMs === undefined) {
    return `${at}: the broker requires a client certificate (TLS ${alert}): set kafka.ssl.cert and kafka.ssl.key (mutual TLS)`;
  }
  if (c.clientCertValidToMs < nowMs) {
    return (
      `${at}: the broker refused the client certificate, which expired at ` +
      `${new Date(c.clientCertValidToMs).toISOString()} (TLS ${alert}): renew kafka.ssl.cert and kafka.ssl.key`
    );
  }
  return `${at}: the broker refused the client certificate (TLS ${alert}): is kafka.ssl.cert signed by a CA the broker trusts?`;
}
