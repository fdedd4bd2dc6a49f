/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of Kafka's v2 record batches.
 *
 * Three implementations, the fastest that is available for the input's size:
 * - From NATIVE_MIN_BYTES on, the CPU's CRC instructions through @node-rs/crc32 (crc32c-native.ts),
 *   where its binding for the platform is installed or packaged: ~6 GB/s here on 512 KiB batches,
 *   against ~2.2 for WebAssembly and ~1.8 for the JavaScript below. It is what keeps the checks from
 *   being the reader's largest cost (they were ~40 % of its CPU); Java's consumer and librdkafka
 *   (`check.crcs`) use the same instructions. Below ~256 B its per-call cost loses to the JavaScript.
 * - Otherwise from WASM_MIN_BYTES on, hash-wasm's WebAssembly CRC-32C (table-driven: WebAssembly has
 *   no CRC instruction), once `loadCrc32c()` has started it (asynchronously; the Fetch decoder awaits
 *   it once per process). Under ~4 KiB its per-call cost loses (at 128 B: 0.4 against 0.8 GB/s).
 * - Below that, or if neither loads: the classic slicing-by-16 below (16 tables of 256 entries),
 *   reading the input as little-endian 32-bit words through an Int32Array view instead of byte by
 *   byte (~1.5-1.8 GB/s, ~1.5x the crc-32 package, which reads byte by byte). On a big-endian host
 *   it falls back to the one-table loop. Hand-written because no JavaScript library reads by words.
 */
import { endianness } from 'node:os';
import type { IHasher } from 'hash-wasm';
import { loadNativeCrc32c, type NativeCrc32c } from './crc32c-native';

const POLYNOMIAL = 0x82f63b78;
const SLICES = 16;

/** TABLES[k * 256 + b]: the CRC register after byte b followed by k zero bytes. */
const TABLES = ((): Int32Array => {
  const t = new Int32Array(SLICES * 256);
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
    t[b] = c;
  }
  for (let k = 1; k < SLICES; k++) {
    for (let b = 0; b < 256; b++) {
      const prev = t[(k - 1) * 256 + b]!;
      t[k * 256 + b] = (prev >>> 8) ^ t[prev & 0xff]!;
    }
  }
  return t;
})();

const LITTLE_ENDIAN = endianness() === 'LE';

/** Bytes [start, end) into the (non-inverted) register `crc`, one at a time. */
function bytewise(crc: number, data: Uint8Array, start: number, end: number): number {
  const t = TABLES;
  for (let i = start; i < end; i++) crc = (crc >>> 8) ^ t[(crc ^ data[i]!) & 0xff]!;
  return crc;
}

/** Inputs from this size on go to the native implementation where it is loaded. */
export const NATIVE_MIN_BYTES = 256;
/** Inputs from this size on go to the WebAssembly implementation where it is loaded (and no native one is). */
export const WASM_MIN_BYTES = 4096;
let native: NativeCrc32c | undefined;
/** Why the native implementation did not load (the error's first line), once `loadCrc32c` ran. */
let nativeMissing: string | undefined;
let wasm: IHasher | undefined;
let loading: Promise<void> | undefined;

/**
 * Loads the fastest implementations available (once per process; later calls return the same
 * promise): the native one, else hash-wasm's. It never rejects: where neither loads, every input
 * keeps the JavaScript implementation.
 */
export function loadCrc32c(): Promise<void> {
  loading ??= (async () => {
    const load = loadNativeCrc32c();
    native = load.crc32c;
    if (load.crc32c) return;
    nativeMissing = load.why;
    // hash-wasm (about 200 KB) is loaded only where the native binding is missing, not at every cold start.
    wasm = await import('hash-wasm').then((m) => m.createCRC32(POLYNOMIAL)).catch(() => undefined);
  })();
  return loading;
}

/** Which implementation `crc32c` uses for an input of `lengthBytes` now. */
export function crc32cImplementation(lengthBytes: number): 'native' | 'wasm' | 'javascript' {
  if (native && lengthBytes >= NATIVE_MIN_BYTES) return 'native';
  return wasm && lengthBytes >= WASM_MIN_BYTES ? 'wasm' : 'javascript';
}

/**
 * What checks a batch of 1 MiB now, and why not the CPU's instructions when it is something else:
 * `native`, or e.g. `wasm (native: Cannot find module ...)`. For the processor's logs.
 */
export function crc32cInUse(): string {
  const used = crc32cImplementation(1 << 20);
  return used === 'native' ? used : `${used} (native: ${nativeMissing ?? 'not loaded yet'})`;
}

/** CRC-32C of `data` as an unsigned 32-bit number (`crc32c(Buffer.from('123456789')) === 0xe3069283`). */
export function crc32c(data: Uint8Array): number {
  if (native && data.length >= NATIVE_MIN_BYTES) return native(data);
  if (wasm && data.length >= WASM_MIN_BYTES) {
    wasm.init();
    wasm.update(data);
    const digest = wasm.digest('binary');
    return ((digest[0]! << 24) | (digest[1]! << 16) | (digest[2]! << 8) | digest[3]!) >>> 0;
  }
  return crc32cJavascript(data);
}

/** The slicing-by-16 JavaScript implementation (any input size). */
export function crc32cJavascript(data: Uint8Array): number {
  const t = TABLES;
  const length = data.length;
  let crc = -1;
  let i = 0;
  if (LITTLE_ENDIAN && length >= 64) {
    // Up to 3 leading bytes until the view is 4-byte aligned (an Int32Array view requires it).
    const head = (4 - (data.byteOffset & 3)) & 3;
    crc = bytewise(crc, data, 0, head);
    i = head;
    const blocks = (length - head) >>> 4;
    const words = new Int32Array(data.buffer, data.byteOffset + head, blocks * 4);
    for (let w = 0; w < words.length; w += 4) {
      const a = crc ^ words[w]!;
      const b = words[w + 1]!;
      const c = words[w + 2]!;
      const d = words[w + 3]!;
      crc =
        t[3840 + (a & 0xff)]! ^
        t[3584 + ((a >>> 8) & 0xff)]! ^
        t[3328 + ((a >>> 16) & 0xff)]! ^
        t[3072 + (a >>> 24)]! ^
        t[2816 + (b & 0xff)]! ^
        t[2560 + ((b >>> 8) & 0xff)]! ^
        t[2304 + ((b >>> 16) & 0xff)]! ^
        t[2048 + (b >>> 24)]! ^
        t[1792 + (c & 0xff)]! ^
        t[1536 + ((c >>> 8) & 0xff)]! ^
        t[1280 + ((c >>> 16) & 0xff)]! ^
        t[1024 + (c >>> 24)]! ^
        t[768 + (d & 0xff)]! ^
        t[512 + ((d >>> 8) & 0xff)]! ^
        t[256 + ((d >>> 16) & 0xff)]! ^
        t[d >>> 24]!;
    }
    i += blocks * 16;
  }
  return (bytewise(crc, data, i, length) ^ -1) >>> 0;
}
