/**
 * The failure record a destination receives for one dead letter, shaped like the record Lambda's
 * Kafka trigger sends to its on-failure destination (`requestContext`, `responseContext`, `version`,
 * `timestamp`, `KafkaBatchInfo`, `payload`), with this engine's own `deadLetter` section beside it
 * (docs/configuration.md, "Failure destinations"). Pure: sizes are decided here, the adapters only send.
 */
import { createHash } from 'node:crypto';
import type { FailureDelivery } from '../ports/failure-destination';
import type { DeadLetter, DeadLetterCause, DestinationKind } from '../ports/ledger-state';
import { idempotencyKeyOf } from '../processor/handler-api';
import { incarnationTopicName } from '../ports/ledger-rules/incarnation';

/** The record's contents when the dead letter is built from the record as read (the processor's own delivery). */
export type RecordContents = {
  key: Buffer | null;
  value: Buffer | null;
  headers: ReadonlyArray<{ key: string; value: Buffer | null }>;
};

export type FailureRecordInput = {
  letter: DeadLetter;
  /** The whole record; absent on a retry, which sends the ledger's copy (cut when it was over the ledger's limits). */
  record?: RecordContents;
  /** The stream's brokers (`KafkaBatchInfo.bootstrapServers`). */
  bootstrapServers: readonly string[];
};

/** What one destination allows: its body limit, and the stream's S3 destination a reference may name. */
export type DeliveryTarget = {
  kind: DestinationKind;
  maxBodyBytes?: number;
  s3?: { bucket: string; prefix: string };
};

/** Lambda's `requestContext.condition` for a handler that kept failing; the other causes have their own. */
const CONDITIONS: Record<DeadLetterCause, string> = {
  handler: 'RetryAttemptsExhausted',
  undecodable: 'RecordUndecodable',
  expired: 'MaximumRecordAgeExceeded',
};

/** One record of a failure record's payload (Lambda's event record, headers as a list). */
export type PayloadRecord = {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  timestampType: 'CREATE_TIME' | 'LOG_APPEND_TIME';
  key: string | null;
  value: string | null;
  headers: Array<{ key: string; value: string | null }>;
};
/** Lambda's event shape: records by `<topic>-<partition>`; `truncated` when built from a ledger copy that was cut. */
export type Payload = { records: Record<string, PayloadRecord[]>; truncated?: true };

/** Where the record is when the message does not hold it: the S3 object (if configured), the ledger's dead letter, Kafka. */
export type PayloadRef = {
  s3?: { bucket: string; key: string };
  deadLetter: { stream: string; topic: string; partition: number; offset: number; incarnation?: number };
};

/** The JSON document a destination receives (docs/configuration.md, "Failure destinations"). */
export type FailureRecord = ReturnType<typeof failureEnvelope> & { payload?: Payload; payloadRef?: PayloadRef };

/** The S3 object key of a dead letter: `<prefix><stream>/<topic>[~<incarnation>]/<partition:6>/<offset:20>.json`. */
export function failureObjectKey(prefix: string, d: Pick<DeadLetter, 'stream' | 'topic' | 'partition' | 'offset' | 'incarnation'>): string {
  const topic = incarnationTopicName(d.topic, d.incarnation);
  return `${prefix}${d.stream}/${topic}/${String(d.partition).padStart(6, '0')}/${String(d.offset).padStart(20, '0')}.json`;
}

/** The delivery of one dead letter to one destination: the payload when it fits (and may be kept), else a reference. */
export function buildDelivery(input: FailureRecordInput, target: DeliveryTarget): FailureDelivery {
  const { letter } = input;
  const idempotencyKey = idempotencyKeyOf(letter.topic, letter.partition, letter.offset, letter.incarnation);
  const payload = payloadOf(input);
  const payloadSize = payload ? Buffer.byteLength(JSON.stringify(payload)) : undefined;
  const envelope = failureEnvelope(input, idempotencyKey, payloadSize);
  let body = JSON.stringify(payload ? { ...envelope, payload } : envelope);
  if (payload && target.maxBodyBytes !== undefined && Buffer.byteLength(body) > target.maxBodyBytes) {
    body = JSON.stringify({ ...envelope, payloadRef: referenceOf(letter, target.s3) });
  }
  const group = `${letter.stream}/${letter.topic}/${letter.partition}`;
  return {
    idempotencyKey,
    stream: letter.stream,
    body,
    key: kafkaKeyOf(input, idempotencyKey),
    objectKey: failureObjectKey(target.s3?.prefix ?? '', letter),
    groupId: group.length <= 128 ? group : sha256(group),
    deduplicationId: sha256(`${letter.stream}/${idempotencyKey}`),
  };
}

/** Everything but the payload: Lambda's sections, then the dead letter as the ledger records it. */
function failureEnvelope(input: FailureRecordInput, idempotencyKey: string, payloadSize: number | undefined) {
  const d = input.letter;
  const cause = d.cause ?? 'handler';
  return {
    version: '1.0',
    timestamp: new Date(d.createdAtMs).toISOString(),
    requestContext: { requestId: idempotencyKey, condition: CONDITIONS[cause], approximateInvokeCount: d.attempts },
    responseContext: { functionError: cause === 'handler' ? 'Unhandled' : null, errorMessage: d.error },
    KafkaBatchInfo: {
      batchSize: 1,
      bootstrapServers: input.bootstrapServers.join(','),
      ...(payloadSize !== undefined ? { payloadSize } : {}),
      recordInfo: { topic: d.topic, partition: d.partition, offset: String(d.offset), timestamp: new Date(d.timestampMs).toISOString() },
    },
    deadLetter: {
      stream: d.stream,
      topic: d.topic,
      partition: d.partition,
      offset: d.offset,
      ...(d.incarnation ? { incarnation: d.incarnation } : {}),
      idempotencyKey,
      cause,
      error: d.error,
      attempts: d.attempts,
      timestampMs: d.timestampMs,
      timestampType: d.timestampType ?? 'CreateTime',
      deadLetteredAtMs: d.createdAtMs,
      rangeFrom: d.rangeFrom,
      kept: d.kept,
      valueBytes: d.valueBytes,
    },
  };
}

/** The record in Lambda's event shape; none when only coordinates may be kept (personal data). */
function payloadOf({ letter: d, record }: FailureRecordInput): Payload | undefined {
  if (d.kept === 'coordinates') return undefined;
  const base64 = (b: Buffer | null) => (b === null ? null : b.toString('base64'));
  const contents = record
    ? { key: base64(record.key), value: base64(record.value), headers: record.headers.map((h) => ({ key: h.key, value: base64(h.value) })) }
    : { key: d.keyBase64, value: d.valueBase64, headers: d.headers.map((h) => ({ key: h.key, value: h.valueBase64 })) };
  const one: PayloadRecord = {
    topic: d.topic,
    partition: d.partition,
    offset: d.offset,
    timestamp: d.timestampMs,
    timestampType: d.timestampType === 'LogAppendTime' ? 'LOG_APPEND_TIME' : 'CREATE_TIME',
    ...contents,
  };
  return { records: { [`${d.topic}-${d.partition}`]: [one] }, ...(!record && d.truncated ? { truncated: true as const } : {}) };
}

function referenceOf(d: DeadLetter, s3: DeliveryTarget['s3']): PayloadRef {
  return {
    ...(s3 ? { s3: { bucket: s3.bucket, key: failureObjectKey(s3.prefix, d) } } : {}),
    deadLetter: {
      stream: d.stream,
      topic: d.topic,
      partition: d.partition,
      offset: d.offset,
      ...(d.incarnation ? { incarnation: d.incarnation } : {}),
    },
  };
}

/** The dead record's own key (Lambda keeps it, so a key's failures stay in order); its idempotency key when the record is not kept. */
function kafkaKeyOf({ letter: d, record }: FailureRecordInput, idempotencyKey: string): Buffer | null {
  if (d.kept === 'coordinates') return Buffer.from(idempotencyKey);
  if (record) return record.key;
  return d.keyBase64 === null ? null : Buffer.from(d.keyBase64, 'base64');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
