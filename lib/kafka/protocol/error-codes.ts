/**
 * The Kafka protocol error codes the adapters tell apart by number (kafkajs's `protocolError` gives
 * the rest their type, message and retriability). Written once: Kafka's own numbers (Errors.java).
 */

export const NO_ERROR = 0;
export const OFFSET_OUT_OF_RANGE = 1;
export const UNKNOWN_TOPIC_OR_PARTITION = 3;
export const INVALID_TOPIC_EXCEPTION = 17;

/** Whether a topic's or partition's error code says it does not exist: unknown, or a name the broker refuses. */
export function isMissingTopicCode(code: number): boolean {
  return code === UNKNOWN_TOPIC_OR_PARTITION || code === INVALID_TOPIC_EXCEPTION;
}
