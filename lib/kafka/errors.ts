/**
 * Kafka errors at the edge: adapters translate kafkajs errors (and protocol error codes) into
 * `KafkaError` (lib/errors.ts), keeping the original as `cause`; the errors a port names live with it.
 */
import { AppError, KafkaError } from '../errors';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../ports/range-reader';
import { SILENT_CODE } from './framed-socket';

type KafkajsLikeError = { name?: unknown; message?: unknown; type?: unknown; retriable?: unknown; cause?: unknown };

const asObject = (v: unknown): KafkajsLikeError => (typeof v === 'object' && v !== null ? (v as KafkajsLikeError) : {});

/**
 * Translates anything thrown by kafkajs into a `KafkaError` (project errors pass through unchanged).
 * `operation` names what was being done, e.g. 'fetchOffsets'.
 */
export function toKafkaError(operation: string, err: unknown): AppError {
  if (err instanceof AppError) return err;
  const unreachable = connectionFailure(err);
  if (unreachable?.code === SILENT_CODE) {
    // Not a broker that cannot be reached: a connection that was open stopped answering (a NAT or a
    // firewall forgot it, a frozen container kept it too long). It is closed; the next call connects again.
    return new KafkaError(`Kafka: ${unreachable.broker} stopped answering on an open connection (${SILENT_CODE}) during ${operation}`, {
      cause: err,
      type: 'CONNECTION',
      retriable: true,
    });
  }
  if (unreachable) {
    return new KafkaError(`Kafka: cannot reach ${unreachable.broker} (${unreachable.code}) during ${operation}`, {
      cause: err,
      type: 'CONNECTION',
      // kafkajs already retried the connection; a caller retrying at once would only wait again.
      retriable: false,
    });
  }
  const e = asObject(err);
  // kafkajs wraps the last error of an exhausted retry loop (KafkaJSNumberOfRetriesExceeded): keep
  // the protocol error type of the wrapped one.
  const inner = asObject(e.cause);
  const message = typeof e.message === 'string' ? e.message : String(err);
  const type =
    typeof e.type === 'string' ? e.type : typeof inner.type === 'string' ? inner.type : typeof e.name === 'string' ? e.name : undefined;
  return new KafkaError(`Kafka ${operation} failed: ${message}`, {
    cause: err,
    type,
    retriable: e.retriable === true,
  });
}

/** kafkajs errors that mean "this broker cannot be reached now": its leaders' partitions are unreachable, not gone. */
export const CONNECTION_ERROR_NAMES: ReadonlySet<string> = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSBrokerNotFound',
  // A request timeout is transient like a lost connection: the broker may answer the next one.
  'KafkaJSRequestTimeoutError',
]);

/** kafkajs errors about the connection or the client's state, not the request: retried elsewhere or later. */
const TRANSIENT_ERROR_NAMES: ReadonlySet<string> = new Set([...CONNECTION_ERROR_NAMES, 'KafkaJSLockTimeout', 'KafkaJSMetadataNotLoaded']);

/**
 * Whether a failed Kafka call may succeed if made again (after a metadata refresh): the one
 * classification the range reader's and the metadata adapter's retries share. Transient: lost
 * connections, request timeouts, brokers or metadata not ready, retriable protocol errors. Not: a
 * partition or offset that is gone, project errors other than a retriable `KafkaError`. Callers
 * bound their retries by time, which is what keeps a slow transient failure (a 30 s request
 * timeout) from being retried past a Lambda's budget.
 */
export function isRetriableKafkaError(error: unknown): boolean {
  if (error instanceof PartitionNotFoundError || error instanceof OffsetOutOfRangeError) return false;
  if (error instanceof KafkaError) return error.retriable;
  if (error instanceof AppError) return false;
  const e = asObject(error);
  if (typeof e.name === 'string' && TRANSIENT_ERROR_NAMES.has(e.name)) return true;
  // kafkajs's own connect/metadata retrier gave up: judge by what it gave up on (the caller's budget bounds it).
  if (e.name === 'KafkaJSNumberOfRetriesExceeded') return isRetriableKafkaError(e.cause);
  // Protocol errors carry kafkajs's judgement of their code (NOT_LEADER, COORDINATOR_LOAD_IN_PROGRESS, ...).
  return e.retriable === true;
}

/**
 * kafkajs protocol error types that describe one topic or partition not being servable yet (or for a
 * moment): no leader elected, a leader moving, a broker whose metadata has not caught up with a topic
 * created a moment ago. Not among them: connection, timeout, authorization and request errors, which
 * say nothing about one topic.
 */
const NOT_READY_TYPES = new Set([
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION', // kafkajs's name for NOT_LEADER_OR_FOLLOWER
  'REPLICA_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'UNKNOWN_LEADER_EPOCH',
  'FENCED_LEADER_EPOCH',
  'OFFSET_NOT_AVAILABLE',
]);

/**
 * Whether `err` says "this topic (partition) is not ready yet": the partition state a topic has the
 * moment it is created, or while its leader moves. A planner skips such a topic for one run (and
 * plans it on the next) instead of failing the run.
 */
export function isNotReadyError(err: unknown): boolean {
  // kafkajs's retriers and our own wrap the last error (KafkaJSNumberOfRetriesExceeded,
  // KafkaJSNonRetriableError, "gave up after n attempts"): look a few causes deep.
  let e = asObject(err);
  for (let depth = 0; depth < 4; depth++) {
    if (typeof e.type === 'string' && NOT_READY_TYPES.has(e.type)) return true;
    if (e.cause === undefined) return false;
    e = asObject(e.cause);
  }
  return false;
}

type ConnectionLikeError = KafkajsLikeError & { broker?: unknown; code?: unknown; host?: unknown; port?: unknown };

/**
 * The broker and the socket error code when `err` (or an error it wraps, a few causes deep) is a
 * failed connection: kafkajs's KafkaJSConnectionError carries `broker` ("host:port") and `code`
 * (ECONNREFUSED, ENOTFOUND, ETIMEDOUT, ...); a connection timeout has no code.
 */
export function connectionFailure(err: unknown): { broker: string; code: string } | undefined {
  let e = asObject(err) as ConnectionLikeError;
  for (let depth = 0; depth < 5; depth++) {
    if (e.name === 'KafkaJSConnectionError') {
      const broker = typeof e.broker === 'string' ? e.broker : typeof e.host === 'string' ? `${e.host}:${String(e.port)}` : 'the broker';
      const code = typeof e.code === 'string' ? e.code : /timeout/i.test(String(e.message)) ? 'connection timeout' : String(e.message);
      return { broker, code };
    }
    if (e.cause === undefined) return undefined;
    e = asObject(e.cause) as ConnectionLikeError;
  }
  return undefined;
}

/** `err`'s message with the configuration setting to check appended, e.g. `[kafka.brokers of stream payments]`. */
export function kafkaFailureText(err: unknown, streamId: string): string {
  const message = err instanceof AppError ? err.message : err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  const connection = err instanceof KafkaError && err.type === 'CONNECTION';
  return connection ? `${message} [kafka.brokers of stream ${streamId}]` : message;
}
