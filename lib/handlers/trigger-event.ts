/**
 * The event Lambda's Kafka trigger (event source mapping) builds for a function, built here from the
 * records of a range, so a function written for the trigger (`MSKHandler` / `SelfManagedKafkaHandler`,
 * often wrapped in Powertools' `kafkaConsumer`) runs unchanged; how the trigger cuts records into
 * events; and how it reads a function's partial batch response. Pure: no I/O.
 *
 * Sources, by the Lambda Developer Guide page they come from, and where the guide is silent:
 * - The event shape: the sample events of "with-msk" (Amazon MSK, `eventSource` "aws:kafka" with
 *   `eventSourceArn`) and "with-kafka" (self-managed Apache Kafka, "SelfManagedKafka", no ARN): records
 *   keyed `<topic>-<partition>`, key and value base64, headers a list of one-entry objects mapping the
 *   header's name to its bytes as numbers.
 * - Header bytes are Java's signed bytes (-128..127): the trigger is a Java poller serializing
 *   `byte[]`. The guide's samples show only ASCII; AWS's own event libraries changed for real events
 *   (aws-lambda-go PR #506 "Changing Headers definition from byte to int8", after issue #422 "cannot
 *   unmarshal number -23"; aws-lambda-dotnet PR #1476 `sbyte`; aws-lambda-rust-runtime `Vec<i8>`;
 *   Powertools Python issue #6862 shows "ë" arriving as [-61, -85]). Powertools TypeScript's
 *   `deserializeHeaders` reads them with `Buffer.from(numbers)`, which takes either sign.
 * - Null key, null value, null header value: the guide shows none. Real events omit the field: a
 *   record without a key has no `key` (Powertools Python issue #6508 / TypeScript #3841, making `key`
 *   optional), a tombstone has no `value` (Powertools TypeScript issue #5016, the follow-up to #4988:
 *   the real event had no `value` at all, not `null`), and a header with a null value arrives as an
 *   empty object `{}` in its place (Nike-Inc/hal PR #144, from a captured event). aws-lambda-go tags
 *   key and value `omitempty`. Powertools' consumer reads an absent key or value as `undefined`, and
 *   an empty header object as an empty header entry, so nothing there breaks.
 * - Schema registry: "Using schema registries with Kafka event sources in Lambda" (Lambda adds
 *   `keySchemaMetadata` / `valueSchemaMetadata`, `{ dataFormat, schemaId }`), and the API reference's
 *   KafkaSchemaRegistryConfig.EventRecordFormat: with SOURCE, "Lambda removes all schema metadata, such
 *   as the schema ID, before sending the record"; with JSON it sends the deserialized record as JSON
 *   (base64). Only SOURCE is built here (see `sourcePayload`).
 * - Partial batch response: "Configuring error handling controls for Kafka event sources"
 *   (kafka-retry-configurations), with the shape `{ batchItemFailures: [{ itemIdentifier: { partition:
 *   "<topic>-<partition>", offset } }] }` as Powertools Python's Kafka batch support (PR #7941,
 *   `KafkaItemIdentifier`) and aws-lambda-rust-runtime PR #1164 (`KafkaItemIdentifier`) write it.
 */
import type { MSKEvent, MSKRecord, SelfManagedKafkaEvent } from 'aws-lambda';
import { ValidationError } from '../errors';
import type { DecodedRecord, SchemaRef } from '../processor/handler-api';
import type { KafkaRecord, RecordHeader } from '../ports/range-reader';
import { parseConfluentFrame, parseGlueFrame } from '../schemas/wire';

/** Where the events say they come from: an MSK cluster (with its ARN) or a self-managed cluster. */
export type TriggerEventSource =
  | { eventSource: 'aws:kafka'; eventSourceArn: string; bootstrapServers: string }
  | { eventSource: 'SelfManagedKafka'; bootstrapServers: string };

/** What a record needs to become a trigger record: a `HandlerRecord` is one. */
export type TriggerInputRecord = KafkaRecord & { decoded?: DecodedRecord };

/** The schema metadata the trigger adds to a record's key or value when a schema registry decoded it. */
export type TriggerSchemaMetadata = { dataFormat: 'AVRO' | 'PROTOBUF' | 'JSON'; schemaId: string };

/**
 * One record as the trigger sends it. @types/aws-lambda's `MSKRecord` (the same shape as
 * `SelfManagedKafkaRecord`) declares `key` and `value` always present; the trigger leaves them out
 * when null (see the module comment), so they are optional here, and the schema metadata @types
 * lacks is added.
 */
export type TriggerRecord = Omit<MSKRecord, 'key' | 'value'> & {
  key?: string;
  value?: string;
  keySchemaMetadata?: TriggerSchemaMetadata;
  valueSchemaMetadata?: TriggerSchemaMetadata;
};

/** An Amazon MSK event: @types' `MSKEvent` with its records as the trigger sends them. */
export type TriggerMSKEvent = Omit<MSKEvent, 'records'> & { records: Record<string, TriggerRecord[]> };
/** A self-managed Apache Kafka event: @types' `SelfManagedKafkaEvent` with its records as the trigger sends them. */
export type TriggerSelfManagedKafkaEvent = Omit<SelfManagedKafkaEvent, 'records'> & { records: Record<string, TriggerRecord[]> };
export type TriggerEvent = TriggerMSKEvent | TriggerSelfManagedKafkaEvent;

/** The trigger's payload limit: "How Lambda processes records from stream and queue-based event sources" stops a batch at 6 MB. */
export const TRIGGER_MAX_PAYLOAD_BYTES = 6 * 1024 * 1024;

/**
 * What `triggerBatches` sets aside for the event's own fields when it is not told the source: an MSK
 * ARN and a few brokers take a few hundred bytes; pass the source for an exact bound.
 */
const ENVELOPE_RESERVE_BYTES = 8 * 1024;

/** The event the trigger builds for `records` (in order, grouped by `<topic>-<partition>`). */
export function triggerEvent(
  records: readonly TriggerInputRecord[],
  source: TriggerEventSource & { eventSource: 'aws:kafka' },
): TriggerMSKEvent;
export function triggerEvent(
  records: readonly TriggerInputRecord[],
  source: TriggerEventSource & { eventSource: 'SelfManagedKafka' },
): TriggerSelfManagedKafkaEvent;
export function triggerEvent(records: readonly TriggerInputRecord[], source: TriggerEventSource): TriggerEvent;
export function triggerEvent(records: readonly TriggerInputRecord[], source: TriggerEventSource): TriggerEvent {
  const grouped: Record<string, TriggerRecord[]> = {};
  for (const r of records) {
    // `<topic>-<partition>` always holds a '-', so it is never an array-index key and keeps insertion order.
    const key = partitionKeyOf(r);
    (grouped[key] ??= []).push(triggerRecord(r));
  }
  return { ...envelopeOf(source), records: grouped } as TriggerEvent;
}

/** The key of a record's list in the event's `records`, and the `partition` of its partial batch identifier. */
function partitionKeyOf(r: { topic: string; partition: number }): string {
  return `${r.topic}-${r.partition}`;
}

/** The event's fields before `records`, in the order the guide's sample events show them. */
function envelopeOf(source: TriggerEventSource): TriggerEventSource {
  return source.eventSource === 'aws:kafka'
    ? { eventSource: 'aws:kafka', eventSourceArn: source.eventSourceArn, bootstrapServers: source.bootstrapServers }
    : { eventSource: 'SelfManagedKafka', bootstrapServers: source.bootstrapServers };
}

/** One record as the trigger sends it (fields in the order of the guide's samples, schema metadata last). */
function triggerRecord(r: TriggerInputRecord): TriggerRecord {
  const keySchema = r.key === null ? undefined : r.decoded?.keySchema;
  const valueSchema = r.value === null ? undefined : r.decoded?.valueSchema;
  return {
    topic: r.topic,
    partition: r.partition,
    offset: r.offset,
    timestamp: r.timestampMs,
    // Our reader always says which; a record built without one (a hand-made test record) reads as
    // CREATE_TIME, the topic default (message.timestamp.type=CreateTime) and what the guide's samples show.
    timestampType: r.timestampType === 'LogAppendTime' ? 'LOG_APPEND_TIME' : 'CREATE_TIME',
    // Absent rather than null: the trigger omits a null key or value (see the module comment).
    ...(r.key === null ? {} : { key: sourcePayload(r.key, keySchema).toString('base64') }),
    ...(r.value === null ? {} : { value: sourcePayload(r.value, valueSchema).toString('base64') }),
    headers: r.headers.map(triggerHeader),
    ...(keySchema ? { keySchemaMetadata: schemaMetadataOf(keySchema) } : {}),
    ...(valueSchema ? { valueSchemaMetadata: schemaMetadataOf(valueSchema) } : {}),
  };
}

/**
 * One header: its own object even when the name repeats (the list keeps write order), its bytes as
 * Java's signed bytes, and `{}` for a null value (the trigger drops the null entry, see the module comment).
 */
function triggerHeader(h: RecordHeader): Record<string, number[]> {
  if (h.value === null) return {};
  // A computed key makes an own property even for "__proto__", so no header name is lost.
  return { [h.key]: Array.from(new Int8Array(h.value.buffer, h.value.byteOffset, h.value.length)) };
}

/**
 * The bytes the trigger sends with EventRecordFormat SOURCE: the payload without the registry's wire
 * header ("Lambda removes all schema metadata, such as the schema ID", KafkaSchemaRegistryConfig).
 * Our records carry the header (Confluent: magic byte and 4-byte id; Glue: 18 bytes with the schema
 * version id), so it is cut here; what follows stays, Protobuf message indexes included. That is what
 * Powertools' deserializers read: its Avro deserializer decodes the bytes as plain Avro binary
 * (`type.fromBuffer`), its Protobuf one skips the Confluent message indexes (numeric schemaId) or the
 * Glue message index (UUID schemaId) itself, and its test events for registry-decoded records carry no
 * header (tests/events/avro.json starts with the Avro fields; protobuf-complex.confluent.json with the
 * message indexes). Without registry decoding the bytes go as written: Powertools' sample
 * kafkaEventAvro.json, which has no schema metadata, still starts with Glue's header (03 00 + UUID).
 * A zlib-compressed Glue payload is sent inflated, as the registry's deserializer would read it.
 */
function sourcePayload(bytes: Buffer, schema: SchemaRef | undefined): Buffer {
  if (!schema) return bytes;
  return schema.registry === 'confluent' ? parseConfluentFrame(bytes).body : parseGlueFrame(bytes).body;
}

/** `dataFormat` as Powertools names the formats (AVRO, PROTOBUF, JSON for JSON Schema), `schemaId` as the registry's id. */
function schemaMetadataOf(schema: SchemaRef): TriggerSchemaMetadata {
  const dataFormat = schema.format === 'avro' ? 'AVRO' : schema.format === 'protobuf' ? 'PROTOBUF' : 'JSON';
  return { dataFormat, schemaId: schema.id };
}

/**
 * Cuts `records` (in order) into consecutive batches as the trigger does: at most `maxRecords` records
 * and at most `maxPayloadBytes` of event JSON each (exact when `source` is given, else with a reserve
 * for the event's own fields). Each record's JSON is measured once, so this is linear.
 */
export function triggerBatches<R extends TriggerInputRecord>(
  records: readonly R[],
  maxRecords: number,
  maxPayloadBytes = TRIGGER_MAX_PAYLOAD_BYTES,
  source?: TriggerEventSource,
): R[][] {
  if (!Number.isSafeInteger(maxRecords) || maxRecords < 1)
    throw new ValidationError(`batch size ${maxRecords}: expected a whole number >= 1`);
  if (!(maxPayloadBytes > 0)) throw new ValidationError(`payload limit ${maxPayloadBytes}: expected a number of bytes > 0`);
  // `{...,"records":{}}`: the records' lists go between the last two braces.
  const envelope = source ? jsonBytes({ ...envelopeOf(source), records: {} }) : ENVELOPE_RESERVE_BYTES;
  const batches: R[][] = [];
  let batch: R[] = [];
  let bytes = envelope;
  let lists = new Set<string>();
  for (const r of records) {
    const key = partitionKeyOf(r);
    const recordBytes = jsonBytes(triggerRecord(r));
    let cost = listCost(lists, key) + recordBytes;
    if (batch.length > 0 && (batch.length >= maxRecords || bytes + cost > maxPayloadBytes)) {
      batches.push(batch);
      batch = [];
      bytes = envelope;
      lists = new Set();
      cost = listCost(lists, key) + recordBytes;
    }
    // A record whose event alone is over the limit still goes, alone: the trigger could not deliver
    // it (an event over 6 MB exceeds the synchronous invocation payload quota, "Lambda quotas"), and
    // rather than drop it or stall the range we call the function with it; if that fails, the
    // processor retries and dead-letters it like any record its handler fails on.
    bytes += cost;
    lists.add(key);
    batch.push(r);
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/**
 * What adding a record to the event's `records` costs besides its own JSON: a comma after the
 * previous record of its list, or a new list (`"key":[` and `]`, and a comma after the previous list).
 */
function listCost(lists: ReadonlySet<string>, key: string): number {
  return lists.has(key) ? 1 : jsonBytes(key) + 3 + (lists.size > 0 ? 1 : 0);
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/**
 * The index in `batch` of the earliest record the function's partial batch response names as failed,
 * or undefined when it names none; throws ValidationError (naming `where` and the identifier) for an
 * identifier that is malformed or names no record of the batch.
 */
export function batchItemFailureIndex(answer: unknown, batch: readonly TriggerInputRecord[], where: string): number | undefined {
  // "A null EventResponse", "an empty EventResponse", "a null/empty batchItemFailures list" are complete
  // successes as "Configuring partial batch response with Kinesis Data Streams and Lambda" lists them;
  // the Kafka page (kafka-retry-configurations) states no other rules, so the same are taken here. An
  // answer that is no object (a `Handler<MSKEvent, void>` returning a string, say) has no list either.
  if (answer === null || typeof answer !== 'object') return undefined;
  const failures = (answer as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return undefined;
  if (!Array.isArray(failures)) {
    throw new ValidationError(`${where}: its answer's batchItemFailures is ${shown(failures)}, not a list`);
  }
  if (failures.length === 0) return undefined;
  const positions = recordPositions(batch);
  let earliest: number | undefined;
  failures.forEach((failure: unknown, i) => {
    const { partition, offset } = itemIdentifierOf(failure, `${where}: batchItemFailures[${i}]`);
    const index = positions.get(partition)?.get(offset);
    if (index === undefined) {
      throw new ValidationError(
        `${where}: batchItemFailures[${i}] names ${shown({ partition, offset })}, which is no record of the event it was given ` +
          `(${describePositions(positions)})`,
      );
    }
    // "Lambda uses the record with the lowest sequence number as the checkpoint" (the Kinesis page);
    // for Kafka the lowest offset of its partition, and a batch here holds one partition's range.
    earliest = earliest === undefined ? index : Math.min(earliest, index);
  });
  return earliest;
}

/**
 * A failure's `itemIdentifier`: `{ partition: "<topic>-<partition>", offset }`. "A null itemIdentifier",
 * "an empty string itemIdentifier" and "an itemIdentifier with a bad key name" fail the whole batch on
 * Lambda; here they throw. The guide and the runtimes' types give the offset as a number; a string of
 * digits is taken too, being the same offset.
 */
function itemIdentifierOf(failure: unknown, at: string): { partition: string; offset: number } {
  const id = typeof failure === 'object' && failure !== null ? (failure as { itemIdentifier?: unknown }).itemIdentifier : undefined;
  const malformed = (why: string) =>
    new ValidationError(
      `${at}: ${failure === null || typeof failure !== 'object' ? shown(failure) : `itemIdentifier ${shown(id)}`} is malformed (${why}); ` +
        'expected { "itemIdentifier": { "partition": "<topic>-<partition>", "offset": <offset> } }',
    );
  if (typeof id !== 'object' || id === null) throw malformed('no itemIdentifier object');
  const { partition, offset } = id as { partition?: unknown; offset?: unknown };
  if (typeof partition !== 'string' || partition === '') throw malformed('partition is not a non-empty string');
  const n = typeof offset === 'string' && /^(0|[1-9][0-9]*)$/.test(offset) ? Number(offset) : offset;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw malformed('offset is not a whole number >= 0');
  return { partition, offset: n };
}

/** Each record's index in the batch, by `<topic>-<partition>` and offset. */
function recordPositions(batch: readonly TriggerInputRecord[]): Map<string, Map<number, number>> {
  const positions = new Map<string, Map<number, number>>();
  batch.forEach((r, i) => {
    const key = partitionKeyOf(r);
    let offsets = positions.get(key);
    if (!offsets) positions.set(key, (offsets = new Map()));
    offsets.set(r.offset, i);
  });
  return positions;
}

/** The batch's partitions and offset spans, for an error message. */
function describePositions(positions: ReadonlyMap<string, ReadonlyMap<number, number>>): string {
  if (positions.size === 0) return 'it had no records';
  const spans = [...positions].map(([key, offsets]) => {
    let low = Infinity;
    let high = -Infinity;
    for (const offset of offsets.keys()) [low, high] = [Math.min(low, offset), Math.max(high, offset)];
    return `${JSON.stringify(key)} offsets ${low}..${high}`;
  });
  return `its records: ${spans.join(', ')}`;
}

/** A value as JSON (or its type when it has none), cut short: answers come from user code. */
function shown(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  text ??= typeof value;
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}
