/**
 * Failure destination: a Kafka topic of the stream's own cluster (Lambda's `kafka://<topic>`
 * on-failure destination), written by a kafkajs producer on the stream's connection (TLS, SASL,
 * MSK IAM as the stream reads). The produced record's key is the dead record's key, its value the
 * failure record, and headers carry the idempotency key and stream. The topic must exist: the
 * producer never creates it.
 */
import type { Kafka, Producer } from 'kafkajs';
import type { FailureDestination } from '../ports/failure-destination';
import { deliveryError } from './errors';

/** Headers of every produced failure record. */
export const IDEMPOTENCY_KEY_HEADER = 'kafka-direct-idempotency-key';
export const STREAM_HEADER = 'kafka-direct-stream';

/** Produces each dead letter to `topic` (acks from all in-sync replicas); the producer connects on first use. */
export function createKafkajsDestination(kafka: Kafka, target: { topic: string; maxMessageBytes: number }): FailureDestination {
  const name = `Kafka topic ${target.topic}`;
  let producer: Producer | undefined;
  let connecting: Promise<void> | undefined;
  const connected = async (): Promise<Producer> => {
    if (!producer) {
      // Few retries: a destination that is down leaves the delivery pending; the planner retries it later.
      producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 2, initialRetryTime: 200 } });
      connecting = producer.connect();
    }
    try {
      await connecting;
    } catch (err) {
      producer = undefined;
      throw err;
    }
    return producer;
  };
  return {
    kind: 'kafka',
    name,
    maxBodyBytes: target.maxMessageBytes,
    async deliver(d) {
      try {
        const p = await connected();
        await p.send({
          topic: target.topic,
          acks: -1,
          messages: [{ key: d.key, value: d.body, headers: { [IDEMPOTENCY_KEY_HEADER]: d.idempotencyKey, [STREAM_HEADER]: d.stream } }],
        });
      } catch (err) {
        throw deliveryError(name, kafkaCause(err));
      }
    },
    async close() {
      const p = producer;
      producer = undefined;
      await p?.disconnect().catch(() => undefined);
    },
  };
}

/** kafkajs wraps the last error of its retries: the protocol error inside says more (UNKNOWN_TOPIC_OR_PARTITION). */
function kafkaCause(err: unknown): unknown {
  const e = err as { name?: string; cause?: { type?: string; message?: string } };
  if (e?.name === 'KafkaJSNumberOfRetriesExceeded' && e.cause?.type) {
    const missing = e.cause.type === 'UNKNOWN_TOPIC_OR_PARTITION' ? ': the topic does not exist (create it; it is never auto-created)' : '';
    return Object.assign(new Error(`${e.cause.type}${missing}`), { name: 'KafkaJSProtocolError', cause: err });
  }
  return err;
}
