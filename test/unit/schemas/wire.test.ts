/** The registries' framing: Confluent's magic byte, id and Protobuf message indexes; Glue's header, zlib payloads and message index. */
import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { UndecodableError } from '../../../lib/errors';
import {
  confluentMessageIndexes,
  confluentSchemaIdOf,
  glueFrame,
  glueMessageIndex,
  glueSchemaVersionIdOf,
  parseConfluentFrame,
  parseGlueFrame,
  readConfluentMessageIndexes,
  readGlueMessageIndex,
} from '../../../lib/schemas/wire';

const UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';

describe('Confluent framing', () => {
  it('reads the magic byte, the big-endian schema id and the body', () => {
    const bytes = Buffer.from([0, 0, 0, 1, 2, 9, 8]);
    expect(parseConfluentFrame(bytes)).toEqual({ id: 258, body: Buffer.from([9, 8]) });
    expect(confluentSchemaIdOf(bytes)).toBe(258);
  });

  it('refuses a wrong magic byte and a value shorter than the header, saying which', () => {
    expect(() => parseConfluentFrame(Buffer.from([1, 0, 0, 0, 1, 5]))).toThrow(
      'magic byte 1, expected 0 (not a Confluent schema registry payload)',
    );
    expect(() => parseConfluentFrame(Buffer.from([0, 0, 1]))).toThrow(/3 bytes, too short for the 5-byte Confluent header/);
    expect(confluentSchemaIdOf(Buffer.from('{"a":1}'))).toBeUndefined();
  });

  it('reads the single 0 as [0], the first message', () => {
    expect(readConfluentMessageIndexes(Buffer.from([0, 0x08, 0x01]))).toEqual({ indexes: [0], message: Buffer.from([0x08, 0x01]) });
  });

  it('reads zigzag message index paths (count, then indexes), as Confluent writes them', () => {
    // [1, 0]: count 2 -> 4, 1 -> 2, 0 -> 0.
    expect(readConfluentMessageIndexes(Buffer.from([4, 2, 0, 0x0a]))).toEqual({ indexes: [1, 0], message: Buffer.from([0x0a]) });
    expect(confluentMessageIndexes([1, 0])).toEqual(Buffer.from([4, 2, 0]));
    expect(confluentMessageIndexes([0])).toEqual(Buffer.from([0]));
  });

  it('round-trips any index path through the writer and the reader', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 100_000 }), { minLength: 1, maxLength: 8 }), fc.uint8Array({ maxLength: 20 }), (path, rest) => {
        const bytes = Buffer.concat([confluentMessageIndexes(path), Buffer.from(rest)]);
        expect(readConfluentMessageIndexes(bytes)).toEqual({ indexes: path, message: Buffer.from(rest) });
      }),
    );
  });

  it('refuses truncated or absurd message indexes', () => {
    expect(() => readConfluentMessageIndexes(Buffer.from([4, 2]))).toThrow(UndecodableError);
    expect(() => readConfluentMessageIndexes(Buffer.from([]))).toThrow(/unreadable Protobuf message indexes/);
    expect(() => readConfluentMessageIndexes(Buffer.from([0xd0, 0x0f]))).toThrow(/message index count 1000/);
    expect(() => readConfluentMessageIndexes(Buffer.from([1]))).toThrow(/message index count -1/);
  });
});

describe('Glue framing', () => {
  it('reads the header version, the compression byte and the schema version id, and returns the payload', () => {
    const bytes = Buffer.concat([Buffer.from([3, 0]), Buffer.from(UUID.replace(/-/g, ''), 'hex'), Buffer.from('payload')]);
    expect(parseGlueFrame(bytes)).toEqual({ schemaVersionId: UUID, compressed: false, body: Buffer.from('payload') });
    expect(glueSchemaVersionIdOf(bytes)).toBe(UUID);
    expect(glueFrame(UUID, Buffer.from('payload'))).toEqual(bytes);
  });

  it('inflates a zlib payload (compression byte 5), as the Glue serializer deflates it', () => {
    const payload = Buffer.from('x'.repeat(1000));
    const bytes = Buffer.concat([Buffer.from([3, 5]), Buffer.from(UUID.replace(/-/g, ''), 'hex'), deflateSync(payload)]);
    expect(parseGlueFrame(bytes)).toEqual({ schemaVersionId: UUID, compressed: true, body: payload });
    expect(parseGlueFrame(glueFrame(UUID, payload, 'zlib')).body).toEqual(payload);
  });

  it('round-trips any payload and id, compressed or not', () => {
    fc.assert(
      fc.property(
        fc.uuid(),
        fc.uint8Array({ maxLength: 300 }),
        fc.constantFrom('none' as const, 'zlib' as const),
        (id, payload, compression) => {
          const parsed = parseGlueFrame(glueFrame(id, Buffer.from(payload), compression));
          expect(parsed).toEqual({ schemaVersionId: id, compressed: compression === 'zlib', body: Buffer.from(payload) });
        },
      ),
    );
  });

  it('refuses another header version, an unknown compression, a short value and a payload that does not inflate', () => {
    const id = Buffer.from(UUID.replace(/-/g, ''), 'hex');
    expect(() => parseGlueFrame(Buffer.concat([Buffer.from([0, 0]), id]))).toThrow(/header version byte 0, expected 3/);
    expect(() => parseGlueFrame(Buffer.concat([Buffer.from([3, 1]), id]))).toThrow(/compression byte 1, expected 0 \(none\) or 5 \(zlib\)/);
    expect(() => parseGlueFrame(Buffer.from([3, 0, 1]))).toThrow(/3 bytes, too short for the 18-byte Glue schema registry header/);
    expect(() => parseGlueFrame(Buffer.concat([Buffer.from([3, 5]), id, Buffer.from('not zlib')]))).toThrow(
      /zlib payload does not inflate/,
    );
    expect(glueSchemaVersionIdOf(Buffer.from([0, 0, 0, 0, 1]))).toBeUndefined();
  });

  it('reads the Protobuf message index as one unsigned varint', () => {
    expect(readGlueMessageIndex(Buffer.concat([glueMessageIndex(300), Buffer.from([7])]))).toEqual({
      index: 300,
      message: Buffer.from([7]),
    });
    expect(glueMessageIndex(1)).toEqual(Buffer.from([1])); // not zigzag: Confluent would write 2
    expect(() => readGlueMessageIndex(Buffer.from([0x80]))).toThrow(/unreadable Protobuf message index/);
  });
});
