/**
 * Port: a failure destination (Lambda's `DestinationConfig.OnFailure` for Kafka event sources), where
 * a dead letter is delivered besides the ledger. Adapters: SQS, SNS, S3 (`lib/destinations/*.sqs.ts`,
 * `*.sns.ts`, `*.s3.ts`) and a Kafka topic (`*.kafkajs.ts`). Delivery is at least once: the same
 * dead letter may arrive twice, with the same idempotency key (and the same S3 object key).
 */
import type { DestinationKind } from './ledger-state';

/** One dead letter as one destination receives it (built by `lib/destinations/message.ts`). */
export type FailureDelivery = {
  /** `topic/partition/offset[#incarnation]`: the same for every delivery of one dead letter. */
  idempotencyKey: string;
  /** The stream that dead-lettered it (an SQS/SNS message attribute, a Kafka header). */
  stream: string;
  /** The failure record, a JSON document (docs/configuration.md, "Failure destinations"). */
  body: string;
  /** Kafka: the produced record's key (the dead record's own key, as Lambda does). */
  key: Buffer | null;
  /** S3: the object's key, derived from stream/topic/partition/offset, so a redelivery overwrites it. */
  objectKey: string;
  /** FIFO queues and topics: the message group (stream/topic/partition, hashed when over 128 characters). */
  groupId: string;
  /** FIFO queues and topics: the deduplication id (a hash of stream and idempotency key). */
  deduplicationId: string;
};

export type FailureDestination = {
  readonly kind: DestinationKind;
  /** The destination as errors and logs name it, e.g. `SQS queue arn:aws:sqs:...:dead-letters`. */
  readonly name: string;
  /** The largest body it takes (bytes); a failure record over it carries a reference instead of the record. Unset: no limit. */
  readonly maxBodyBytes?: number;
  /** Delivers one dead letter; throws a DeliveryError (one line naming the destination) when it did not. */
  deliver(d: FailureDelivery): Promise<void>;
  /** Releases connections (a Kafka producer). */
  close?(): Promise<void>;
};

/** A stream's configured destinations, by kind. */
export type FailureDestinations = Partial<Record<DestinationKind, FailureDestination>>;
