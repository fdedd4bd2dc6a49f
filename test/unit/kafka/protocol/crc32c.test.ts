/**
 * CRC-32C, all three implementations (the CPU's instructions through @node-rs/crc32 from
 * NATIVE_MIN_BYTES on, hash-wasm's WebAssembly from WASM_MIN_BYTES on where no native one loads, the
 * hand-written JavaScript below and as the last fallback): published check values, and the crc-32
 * package on any bytes at any alignment.
 */
import { buf as crc32cReference } from 'crc-32/crc32c';
import fc from 'fast-check';
import { crc32c, crc32cJavascript } from '../../../../lib/kafka/protocol/crc32c';
import { loadNativeCrc32c } from '../../../../lib/kafka/protocol/crc32c-native';

type Crc32cModule = typeof import('../../../../lib/kafka/protocol/crc32c');
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

/**
 * A fresh crc32c module, loaded, with the native binding or hash-wasm made unavailable (mocked to
 * fail as on a platform without them); `failed` records each mocked load that ran.
 */
async function loadedWith(unavailable: { native?: boolean; wasm?: boolean }): Promise<{ m: Crc32cModule; failed: string[] }> {
  const failed: string[] = [];
  let m: Crc32cModule | undefined;
  // Async: crc32c loads hash-wasm on its first load, which must meet the mock too.
  await jest.isolateModulesAsync(async () => {
    if (unavailable.native) {
      jest.doMock('../../../../lib/kafka/protocol/crc32c-native', () => ({
        loadNativeCrc32c: () => {
          failed.push('native');
          return { crc32c: undefined, why: 'no binding for this platform' };
        },
      }));
    }
    if (unavailable.wasm) {
      jest.doMock('hash-wasm', () => ({
        createCRC32: async () => {
          failed.push('wasm');
          throw new Error('WebAssembly is not available');
        },
      }));
    }
    m = jest.requireActual<Crc32cModule>('../../../../lib/kafka/protocol/crc32c');
    await expect(m.loadCrc32c()).resolves.toBeUndefined();
  });
  jest.dontMock('../../../../lib/kafka/protocol/crc32c-native');
  jest.dontMock('hash-wasm');
  return { m: m!, failed };
}

describe('the native binding (@node-rs/crc32)', () => {
  it('loads on this platform: the project installs it with its dependencies', () => {
    const load = loadNativeCrc32c();
    expect(load).toMatchObject({ from: '@node-rs/crc32' });
    expect(load.crc32c?.(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});

describe.each([
  { tier: 'native' as const, unavailable: {}, minBytes: (m: Crc32cModule): number => m.NATIVE_MIN_BYTES },
  { tier: 'wasm' as const, unavailable: { native: true }, minBytes: (m: Crc32cModule): number => m.WASM_MIN_BYTES },
])('crc32c once loaded, the $tier implementation taking what it is fastest at', ({ tier, unavailable, minBytes }) => {
  let m: Crc32cModule;
  beforeAll(async () => {
    const loaded = await loadedWith(unavailable);
    m = loaded.m;
    expect(loaded.failed).toEqual(Object.keys(unavailable));
  });

  it('takes inputs from its threshold on, and keeps the JavaScript below', () => {
    expect(m.crc32cImplementation(minBytes(m))).toBe(tier);
    expect(m.crc32cImplementation(minBytes(m) - 1)).toBe('javascript');
  });

  it('says which implementation checks, and why not the native one when it does not', () => {
    expect(m.crc32cInUse()).toBe(tier === 'native' ? 'native' : 'wasm (native: no binding for this platform)');
  });

  it('equals the crc-32 package and the JavaScript implementation around the threshold, at any alignment', () => {
    const threshold = minBytes(m);
    fc.assert(
      fc.property(fc.integer({ min: threshold - 64, max: 3 * threshold }), fc.nat({ max: 7 }), fc.integer(), (length, before, seed) => {
        const backing = Buffer.alloc(before + length + 3, 0x5a);
        for (let i = 0; i < length; i++) backing[before + i] = (Math.imul(i + seed, 2654435761) >>> 24) & 0xff;
        const view = backing.subarray(before, before + length);
        const expected = reference(view);
        expect(m.crc32c(view)).toBe(expected);
        expect(crc32cJavascript(view)).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('detects any single flipped bit in an input it takes', () => {
    const lengthBytes = Math.max(2 * minBytes(m), 4096);
    expect(m.crc32cImplementation(lengthBytes)).toBe(tier);
    expectEveryFlippedBitDetected(m.crc32c, lengthBytes);
  });
});

describe('crc32c where neither the native binding nor WebAssembly loads', () => {
  it('keeps the JavaScript implementation for every input, and the load does not fail', async () => {
    const { m, failed } = await loadedWith({ native: true, wasm: true });
    expect(failed).toEqual(['native', 'wasm']);
    const data = Buffer.from(Array.from({ length: 3 * m.WASM_MIN_BYTES }, (_, i) => (i * 7) & 0xff));
    expect(m.crc32cImplementation(data.length)).toBe('javascript');
    expect(m.crc32cInUse()).toBe('javascript (native: no binding for this platform)');
    expect(m.crc32c(data)).toBe(reference(data));
  });
});
