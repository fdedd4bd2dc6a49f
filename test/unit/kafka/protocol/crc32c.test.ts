/**
 * CRC-32C, both implementations (hash-wasm's WebAssembly from WASM_MIN_BYTES on once loaded, the
 * hand-written JavaScript below): published check values, and the crc-32 package on any bytes at any alignment.
 */
import { buf as crc32cReference } from 'crc-32/crc32c';
import fc from 'fast-check';
import { crc32c, crc32cImplementation, crc32cJavascript, loadWasmCrc32c, WASM_MIN_BYTES } from '../../../../lib/kafka/protocol/crc32c';

const reference = (data: Uint8Array): number => crc32cReference(data) >>> 0;

/** `checksum` changes whenever any one bit of a `lengthBytes` input flips. */
function expectEveryFlippedBitDetected(checksum: (data: Uint8Array) => number, lengthBytes: number): void {
  const data = Buffer.from(Array.from({ length: lengthBytes }, (_, i) => (i * 131) & 0xff));
  const expected = checksum(data);
  fc.assert(
    fc.property(fc.nat({ max: data.length * 8 - 1 }), (bit) => {
      const copy = Buffer.from(data);
      copy[bit >>> 3]! ^= 1 << (bit & 7);
      expect(checksum(copy)).not.toBe(expected);
    }),
  );
}

describe('crc32c', () => {
  it.each([
    ['the empty input', Buffer.alloc(0), 0],
    ['"123456789" (the CRC catalogue check value)', Buffer.from('123456789'), 0xe3069283],
    ['32 zero bytes (RFC 3720 B.4)', Buffer.alloc(32, 0x00), 0x8a9136aa],
    ['32 bytes of 0xff (RFC 3720 B.4)', Buffer.alloc(32, 0xff), 0x62a8ab43],
    ['bytes 0..31 (RFC 3720 B.4)', Buffer.from(Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e],
    ['bytes 31..0 (RFC 3720 B.4)', Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i)), 0x113fdb5c],
    // The same patterns repeated past the word loop's threshold, checked against the reference.
    ['1 KiB of 0xff', Buffer.alloc(1024, 0xff), reference(Buffer.alloc(1024, 0xff))],
  ])('matches the known value of %s', (_name, data, expected) => {
    expect(crc32c(data)).toBe(expected);
  });

  it('equals the crc-32 package for any bytes, at any offset into its ArrayBuffer (alignment)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600, size: 'max' }), fc.nat({ max: 7 }), fc.nat({ max: 7 }), (bytes, before, after) => {
        const backing = Buffer.alloc(before + bytes.length + after, 0xa5);
        backing.set(bytes, before);
        const view = backing.subarray(before, before + bytes.length);
        expect(crc32c(view)).toBe(reference(view));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads only its own bytes: the ones around the view do not change the result', () => {
    const data = Buffer.from(Array.from({ length: 200 }, (_, i) => (i * 37) & 0xff));
    const expected = crc32c(data);
    for (const fill of [0x00, 0xff]) {
      const backing = Buffer.alloc(data.length + 10, fill);
      data.copy(backing, 3);
      expect(crc32c(backing.subarray(3, 3 + data.length))).toBe(expected);
    }
  });

  it('detects any single flipped bit in a batch-sized input (the JavaScript implementation)', () => {
    expectEveryFlippedBitDetected(crc32cJavascript, 4096);
  });
});

describe('crc32c once the WebAssembly implementation is loaded', () => {
  beforeAll(() => loadWasmCrc32c());

  it('takes inputs from WASM_MIN_BYTES on, and keeps the JavaScript below', () => {
    expect(crc32cImplementation(WASM_MIN_BYTES)).toBe('wasm');
    expect(crc32cImplementation(WASM_MIN_BYTES - 1)).toBe('javascript');
  });

  it('equals the crc-32 package and the JavaScript implementation around the threshold, at any alignment', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: WASM_MIN_BYTES - 64, max: 3 * WASM_MIN_BYTES }),
        fc.nat({ max: 7 }),
        fc.integer(),
        (length, before, seed) => {
          const backing = Buffer.alloc(before + length + 3, 0x5a);
          for (let i = 0; i < length; i++) backing[before + i] = (Math.imul(i + seed, 2654435761) >>> 24) & 0xff;
          const view = backing.subarray(before, before + length);
          const expected = reference(view);
          expect(crc32c(view)).toBe(expected);
          expect(crc32cJavascript(view)).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('detects any single flipped bit in an input it takes', () => {
    expect(crc32cImplementation(2 * WASM_MIN_BYTES)).toBe('wasm');
    expectEveryFlippedBitDetected(crc32c, 2 * WASM_MIN_BYTES);
  });
});

describe('crc32c where WebAssembly cannot start', () => {
  it('keeps the JavaScript implementation for every input, and the load does not fail', async () => {
    let loaded: typeof import('../../../../lib/kafka/protocol/crc32c') | undefined;
    const createCRC32 = jest.fn(async () => {
      throw new Error('WebAssembly is not available');
    });
    jest.isolateModules(() => {
      jest.doMock('hash-wasm', () => ({ createCRC32 }));
      loaded = jest.requireActual<typeof import('../../../../lib/kafka/protocol/crc32c')>('../../../../lib/kafka/protocol/crc32c');
    });
    await expect(loaded!.loadWasmCrc32c()).resolves.toBeUndefined();
    expect(createCRC32).toHaveBeenCalledTimes(1);
    const data = Buffer.from(Array.from({ length: 3 * loaded!.WASM_MIN_BYTES }, (_, i) => (i * 7) & 0xff));
    expect(loaded!.crc32cImplementation(data.length)).toBe('javascript');
    expect(loaded!.crc32c(data)).toBe(reference(data));
    jest.dontMock('hash-wasm');
  });
});
