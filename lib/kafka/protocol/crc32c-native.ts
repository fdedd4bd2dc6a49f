/**
 * The hardware CRC-32C of @node-rs/crc32 (the CPU's CRC instructions: SSE 4.2 on x86-64, the ARMv8
 * CRC extension on Graviton), where its binding for this platform is installed or packaged.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';

/** CRC-32C of `data` as an unsigned 32-bit number. */
export type NativeCrc32c = (data: Uint8Array) => number;

/** Where the native implementation was loaded from, or why not (for logs and tests). */
export type NativeCrc32cLoad = { crc32c: NativeCrc32c; from: string } | { crc32c: undefined; why: string };

/**
 * Defined only in a Lambda bundle, by the `native-crc32c` esbuild plugin
 * (infra/serverless/esbuild-plugins.js): the binding's file name beside the bundle (a bundle has no
 * node_modules), or '' when none was packaged, with the reason in the second.
 */
declare const KAFKA_DIRECT_CRC32C_BINDING: string | undefined;
declare const KAFKA_DIRECT_CRC32C_MISSING: string | undefined;

/** Loads @node-rs/crc32, or the binding packaged beside the bundle; never throws: without one, `why`. */
export function loadNativeCrc32c(): NativeCrc32cLoad {
  const packaged = typeof KAFKA_DIRECT_CRC32C_BINDING === 'string' ? KAFKA_DIRECT_CRC32C_BINDING : undefined;
  if (packaged === '') {
    return {
      crc32c: undefined,
      why: `not packaged: ${typeof KAFKA_DIRECT_CRC32C_MISSING === 'string' ? KAFKA_DIRECT_CRC32C_MISSING : ''}`,
    };
  }
  // Resolved at run time, not by a bundler: the package picks its `.node` binding by platform.
  const id = packaged === undefined ? '@node-rs/crc32' : join(__dirname, packaged);
  try {
    const native = createRequire(__filename)(id) as { crc32c(data: Uint8Array): number };
    return { crc32c: native.crc32c, from: id };
  } catch (err) {
    const why = (err as Error).message.split('\n')[0] ?? String(err);
    return { crc32c: undefined, why: packaged === undefined ? why : `${id}: ${why}` };
  }
}
