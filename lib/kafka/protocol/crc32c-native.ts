/**
 * The hardware CRC-32C of @node-rs/crc32 (the CPU's CRC instructions: SSE 4.2 on x86-64, the ARMv8
 * CRC extension on Graviton), where its binding for this platform is installed. Kept apart from
 * crc32c.ts because the Lambda bundles replace this module (infra/serverless/esbuild-plugins.js)
 * with one that loads the binding packaged beside the bundle: a bundle has no node_modules.
 */
import { createRequire } from 'node:module';

/** CRC-32C of `data` as an unsigned 32-bit number. */
export type NativeCrc32c = (data: Uint8Array) => number;

/** Where the native implementation was loaded from, or why not (for logs and tests). */
export type NativeCrc32cLoad = { crc32c: NativeCrc32c; from: string } | { crc32c: undefined; why: string };

/** Loads @node-rs/crc32 (crc32c.ts does, once per process); never throws: without a binding, `why`. */
export function loadNativeCrc32c(): NativeCrc32cLoad {
  try {
    // Resolved at run time, not by a bundler: the package picks its `.node` binding by platform.
    const native = createRequire(__filename)('@node-rs/crc32') as { crc32c(data: Uint8Array): number };
    return { crc32c: native.crc32c, from: '@node-rs/crc32' };
  } catch (err) {
    return { crc32c: undefined, why: (err as Error).message.split('\n')[0] ?? String(err) };
  }
}
