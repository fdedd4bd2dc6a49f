/** The Metadata v10-v12 codec (topic ids) on hand-made bytes, laid out field by field from Kafka's schemas. */
import { KafkaError } from '../../../../lib/errors';
import {
  decodeMetadataResponse,
  encodeMetadataRequest,
  formatTopicId,
  topicIdMetadataVersion,
} from '../../../../lib/kafka/protocol/metadata-v12';

const i16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const i32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const uv = (n: number) => Buffer.from([n]); // every length here is below 128
const str = (s: string | null) => (s === null ? uv(0) : Buffer.concat([uv(Buffer.byteLength(s) + 1), Buffer.from(s)]));
const arr = (items: Buffer[]) => Buffer.concat([uv(items.length + 1), ...items]);
const noTags = uv(0);
const ID = Buffer.from('00112233445566778899aabbccddeeff', 'hex');

function response(version: number, opts: { headerTags?: Buffer; topicId?: Buffer } = {}): Buffer {
  const partition = Buffer.concat([i16(0), i32(2), i32(1), i32(7), arr([i32(1), i32(2)]), arr([i32(1)]), arr([]), noTags]);
  const topic = Buffer.concat([i16(0), str('orders'), opts.topicId ?? ID, Buffer.from([0]), arr([partition]), i32(-2147483648), noTags]);
  const missing = Buffer.concat([i16(3), str('gone'), Buffer.alloc(16), Buffer.from([0]), arr([]), i32(-2147483648), noTags]);
  const broker = Buffer.concat([i32(1), str('kafka-1'), i32(9092), str(null), noTags]);
  return Buffer.concat([
    opts.headerTags ?? noTags, // response header v1
    i32(0), // throttle
    arr([broker]),
    str('cluster-x'),
    i32(1),
    arr([topic, missing]),
    ...(version === 10 ? [i32(-2147483648)] : []),
    noTags,
  ]);
}

describe('Metadata v10-v12 codec', () => {
  it('picks the highest version both sides speak, or none below v10', () => {
    expect(topicIdMetadataVersion({ minVersion: 0, maxVersion: 13 })).toBe(12);
    expect(topicIdMetadataVersion({ minVersion: 0, maxVersion: 10 })).toBe(10);
    expect(topicIdMetadataVersion({ minVersion: 0, maxVersion: 9 })).toBeUndefined();
    expect(topicIdMetadataVersion(undefined)).toBeUndefined();
  });

  it('writes header v2 tagged fields, then topics by name with a zero id', () => {
    const body = encodeMetadataRequest(12, ['ab'], false);
    expect(body).toEqual(Buffer.concat([noTags, arr([Buffer.concat([Buffer.alloc(16), str('ab'), noTags])]), Buffer.from([0, 0]), noTags]));
    // v10 still has IncludeClusterAuthorizedOperations; null topics = all topics.
    expect(encodeMetadataRequest(10, null, true)).toEqual(Buffer.from([0, 0, 1, 0, 0, 0]));
    expect(() => encodeMetadataRequest(9, null, false)).toThrow(RangeError);
  });

  it.each([10, 11, 12])("decodes a v%i response into kafkajs's shape with topic ids", (version) => {
    const m = decodeMetadataResponse(version, response(version));
    expect(m).toMatchObject({
      brokers: [{ nodeId: 1, host: 'kafka-1', port: 9092, rack: null }],
      controllerId: 1,
      metadataVersion: version,
      topicMetadata: [
        {
          topicErrorCode: 0,
          topic: 'orders',
          isInternal: false,
          topicId: ID.toString('base64url'),
          partitionMetadata: [{ partitionErrorCode: 0, partitionId: 2, leader: 1, replicas: [1, 2], isr: [1] }],
        },
        { topicErrorCode: 3, topic: 'gone', partitionMetadata: [] },
      ],
    });
    expect(m.topicMetadata[1]).not.toHaveProperty('topicId'); // the zero uuid is "no id"
  });

  it('skips tagged fields in the response header and rejects truncated or over-long answers', () => {
    const tagged = Buffer.concat([uv(1), uv(5), uv(2), Buffer.from([9, 9])]);
    expect(decodeMetadataResponse(12, response(12, { headerTags: tagged })).topicMetadata[0]?.topic).toBe('orders');
    const full = response(12);
    expect(() => decodeMetadataResponse(12, full.subarray(0, full.length - 3))).toThrow(/truncated/);
    expect(() => decodeMetadataResponse(12, Buffer.concat([full, Buffer.from([0])]))).toThrow(/bytes left/);
    // A malformed answer is the broker's fault, a KafkaError like a truncated one.
    expect(() => decodeMetadataResponse(12, Buffer.concat([full, Buffer.from([0])]))).toThrow(KafkaError);
    expect(() => decodeMetadataResponse(12, full.subarray(0, full.length - 3))).toThrow(KafkaError);
    // A v10 layout read as v12 leaves the cluster authorized operations unread.
    expect(() => decodeMetadataResponse(12, response(10))).toThrow();
  });

  it('prints topic ids as Kafka does: URL-safe base64 without padding', () => {
    expect(formatTopicId(Buffer.from('fbff', 'hex').subarray(0, 2))).toBe('-_8');
    expect(formatTopicId(ID)).toHaveLength(22);
    expect(formatTopicId(Buffer.alloc(16))).toBeUndefined();
  });
});
