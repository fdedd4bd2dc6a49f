/**
 * How long a connection may stay silent while a request waits on it, for every client the functions
 * hold (Kafka sockets, the AWS SDK's). A connection that a NAT or a firewall forgot, or that a frozen
 * container kept past its peer's patience, gives no error: nothing answers. Every service we call
 * answers within a second (DynamoDB in milliseconds; a broker holds a Fetch for its long poll,
 * at most 500 ms here), so silence of a few seconds means the connection is dead: it is closed, and
 * the call is retried on a new one, instead of waiting out a 30 s request timeout.
 */

/** A connection with a request in flight that receives nothing for this long is taken as dead. */
export const SILENT_CONNECTION_MS = 3_000;

/** How long a new connection may take to open. */
export const CONNECT_TIMEOUT_MS = 2_000;

/** A client's limits: how long a connection may take to open, and stay silent with a request waiting. */
export type ConnectionLimits = { connectMs: number; silentMs: number };

/** The functions' limits. */
export const SERVICE_LIMITS: ConnectionLimits = { connectMs: CONNECT_TIMEOUT_MS, silentMs: SILENT_CONNECTION_MS };

/**
 * A connection found silent while a request waited on it says the others kept as long are likely dead
 * too: they crossed the same NAT, or slept through the same freeze of the container, and finding each
 * in turn would cost a silence limit apiece. Each kind of client (Kafka sockets, AWS agents)
 * subscribes and closes its idle connections; connections busy with a request are left to their own watch.
 */
const listeners = new Set<() => void>();

/** Subscribes `closeIdle` to "a connection was found silent"; returns the unsubscribe. */
export function onSilentConnection(closeIdle: () => void): () => void {
  listeners.add(closeIdle);
  return () => listeners.delete(closeIdle);
}

/** Tells every kind of client that one connection went silent with a request waiting. */
export function silentConnectionFound(): void {
  for (const closeIdle of listeners) closeIdle();
}
