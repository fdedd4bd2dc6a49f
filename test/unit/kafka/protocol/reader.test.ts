/** The one byte reader of the Fetch and Metadata decoders: bounds, exact offsets, varints. */
import { KafkaError } from '../../../../lib/errors';
import { Reader } from '../../../../lib/kafka/protocol/reader';

describe('Reader', () => {
  it('reads classic and flexible primitives in order', () => {
    const buf = Buffer.from([0x00, 0x02, 0x68, 0x69, 0x03, 0x61, 0x62, 0xff, 0xff, 0xff, 0xff, 0x01]);
    const r = new Reader(buf, 'Test');
    expect(r.string('s')).toBe('hi');
    expect(r.compactString('c')).toBe('ab');
    expect(r.bytes('b')).toBeNull();
    expect(r.int8('i')).toBe(1);
    expect(r.done()).toBe(true);
  });

  it.each([
    ['a truncated field', (r: Reader) => r.int32('leader id'), /Test response truncated reading leader id at byte 0 \(2 bytes\)/],
    [
      'an over-long varint',
      () => new Reader(Buffer.alloc(6, 0x80), 'Test').uvarint('count'),
      /Test response: unsigned varint of count is longer than 5 bytes/,
    ],
  ])('fails on %s with a KafkaError', (_what, read, message) => {
    const r = new Reader(Buffer.from([0x80, 0x80]), 'Test');
    expect(() => read(r)).toThrow(KafkaError);
    expect(() => read(new Reader(Buffer.from([0x80, 0x80]), 'Test'))).toThrow(message);
  });

  it('refuses an int64 offset a number cannot hold exactly', () => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64BE(2n ** 60n);
    expect(() => new Reader(buf, 'Test').int64('high watermark')).toThrow(/high watermark .* beyond Number.MAX_SAFE_INTEGER/);
    expect(new Reader(buf, 'Test').int64String('producer id')).toBe(String(2n ** 60n));
  });
});
