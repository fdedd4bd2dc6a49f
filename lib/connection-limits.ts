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
