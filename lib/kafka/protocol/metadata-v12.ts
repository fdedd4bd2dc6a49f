/**
 * Metadata v10-v12 (flexible versions, KIP-482) request body and response decoder, for the topic
 * ids they carry (KIP-516). Hand-written because kafkajs 2.2.4 speaks Metadata only up to v6 and
 * no maintained Kafka client for Node.js exposes its codec for a single request; the layout follows
 * Kafka's MetadataRequest.json / MetadataResponse.json.
 *
 * kafkajs's Connection writes request header v1 (api key, version, correlation id, client id) and
 * then the body; a body that starts with an empty tagged-field section is request header v2 on the
 * wire. It hands the response after the correlation id to `decode`, so the decoder first skips the
 * response header v1's tagged fields.
 */
import type { RawMetadata, RawPartitionMetadata, RawTopicMetadata } from '../cluster.kafkajs';
import { Reader } from './reader';
import { KafkaError } from '../../errors';

/** The flexible Metadata versions this codec reads and writes. */
const MIN_TOPIC_ID_METADATA_VERSION = 10;
const MAX_TOPIC_ID_METADATA_VERSION = 12;

/** Kafka's Uuid.ZERO_UUID: "no topic id" (a broker without ids, or a topic that failed). */
const ZERO_UUID = Buffer.alloc(16);

/** The Metadata version to send for topic ids, or undefined when the broker's range has none. */
export function topicIdMetadataVersion(range: { minVersion: number; maxVersion: number } | undefined): number | undefined {
  if (!range || range.maxVersion < MIN_TOPIC_ID_METADATA_VERSION) return undefined;
  const v = Math.min(range.maxVersion, MAX_TOPIC_ID_METADATA_VERSION);
  return v >= range.minVersion ? v : undefined;
}

function uvarint(n: number): Buffer {
  const out: number[] = [];
  let v = n >>> 0;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

function compactString(s: string): Buffer {
  const bytes = Buffer.from(s, 'utf8');
  return Buffer.concat([uvarint(bytes.length + 1), bytes]);
}

/**
 * The request body of Metadata `version` (10-12), starting with request header v2's empty tagged
 * fields. `topics` null asks for every topic.
 */
export function encodeMetadataRequest(version: number, topics: string[] | null, allowAutoTopicCreation: boolean): Buffer {
  if (version < MIN_TOPIC_ID_METADATA_VERSION || version > MAX_TOPIC_ID_METADATA_VERSION) {
    throw new RangeError(`Metadata v${version} is outside the flexible versions this codec writes (10-12)`);
  }
  const parts: Buffer[] = [Buffer.from([0])]; // request header v2: no tagged fields
  if (topics === null) parts.push(uvarint(0));
  else {
    parts.push(uvarint(topics.length + 1));
    // Name only; the topic id field is all zeros (Kafka looks topics up by id only when the name is null).
    for (const t of topics) parts.push(ZERO_UUID, compactString(t), Buffer.from([0]));
  }
  parts.push(Buffer.from([allowAutoTopicCreation ? 1 : 0]));
  if (version === 10) parts.push(Buffer.from([0])); // IncludeClusterAuthorizedOperations (v8-10)
  parts.push(Buffer.from([0])); // IncludeTopicAuthorizedOperations
  parts.push(Buffer.from([0])); // tagged fields
  return Buffer.concat(parts);
}

/** Kafka prints topic ids as URL-safe base64 without padding (Uuid.toString), as `kafka-topics --describe` does. */
export function formatTopicId(uuid: Buffer): string | undefined {
  return uuid.equals(ZERO_UUID) ? undefined : uuid.toString('base64url');
}

function partition(r: Reader): RawPartitionMetadata {
  const p: RawPartitionMetadata = {
    partitionErrorCode: r.int16('partition error code'),
    partitionId: r.int32('partition index'),
    leader: r.int32('leader id'),
    replicas: [],
    isr: [],
  };
  r.int32('leader epoch');
  p.replicas = r.compactArray('replica nodes', (x) => x.int32('replica node'));
  p.isr = r.compactArray('isr nodes', (x) => x.int32('isr node'));
  r.compactArray('offline replicas', (x) => x.int32('offline replica'));
  r.skipTaggedFields('partition');
  return p;
}

function topic(r: Reader): RawTopicMetadata & { topicId?: string } {
  const topicErrorCode = r.int16('topic error code');
  const name = r.compactString('topic name') ?? '';
  const topicId = formatTopicId(r.raw(16, 'topic id'));
  const isInternal = r.int8('is internal') !== 0;
  const partitionMetadata = r.compactArray('partitions', partition);
  r.int32('topic authorized operations');
  r.skipTaggedFields('topic');
  return { topicErrorCode, topic: name, isInternal, partitionMetadata, ...(topicId ? { topicId } : {}) };
}

/**
 * Decodes a Metadata v10-v12 response as kafkajs hands it over (after the correlation id), into
 * kafkajs's own metadata shape plus each topic's id, so kafkajs's broker pool can keep using it.
 */
export function decodeMetadataResponse(version: number, raw: Buffer): RawMetadata {
  const r = new Reader(raw, 'Metadata');
  r.skipTaggedFields('response header');
  const throttleTimeMs = r.int32('throttle time');
  const brokers = r.compactArray('brokers', (x) => {
    const b = { nodeId: x.int32('node id'), host: x.compactString('host') ?? '', port: x.int32('port'), rack: x.compactString('rack') };
    x.skipTaggedFields('broker');
    return b;
  });
  const clusterId = r.compactString('cluster id');
  const controllerId = r.int32('controller id');
  const topicMetadata = r.compactArray('topics', topic);
  if (version === 10) r.int32('cluster authorized operations');
  r.skipTaggedFields('response');
  if (!r.done()) throw new KafkaError(`Metadata v${version} response has bytes left after its last field`);
  // As kafkajs's v6+ decoders: the broker answers before throttling, so the client waits (KIP-219).
  const decoded = { throttleTime: 0, clientSideThrottleTime: throttleTimeMs, brokers, clusterId, controllerId, topicMetadata };
  return { ...decoded, metadataVersion: version } as RawMetadata;
}
