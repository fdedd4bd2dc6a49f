/** Reads the entries of a zip archive (stored or deflated), enough to inspect Lambda packages. */
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';

export type ZipEntry = { name: string; size: number; compressedSize: number; data(): Buffer };

const EOCD_SIGNATURE = 0x06054b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;

export function readZip(path: string): ZipEntry[] {
  const zip = readFileSync(path);
  // The end-of-central-directory record is in the last 22 bytes plus an optional comment (< 64 KiB).
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === EOCD_SIGNATURE) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error(`${path} is not a zip file (no end of central directory)`);
  const count = zip.readUInt16LE(eocd + 10);
  let pos = zip.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(pos) !== CENTRAL_SIGNATURE) throw new Error(`${path}: bad central directory entry ${i}`);
    const method = zip.readUInt16LE(pos + 10);
    const compressedSize = zip.readUInt32LE(pos + 20);
    const size = zip.readUInt32LE(pos + 24);
    const nameLength = zip.readUInt16LE(pos + 28);
    const extraLength = zip.readUInt16LE(pos + 30);
    const commentLength = zip.readUInt16LE(pos + 32);
    const localOffset = zip.readUInt32LE(pos + 42);
    const name = zip.toString('utf8', pos + 46, pos + 46 + nameLength);
    pos += 46 + nameLength + extraLength + commentLength;
    entries.push({
      name,
      size,
      compressedSize,
      data() {
        if (zip.readUInt32LE(localOffset) !== LOCAL_SIGNATURE) throw new Error(`${path}: bad local header for ${name}`);
        const start = localOffset + 30 + zip.readUInt16LE(localOffset + 26) + zip.readUInt16LE(localOffset + 28);
        const raw = zip.subarray(start, start + compressedSize);
        if (method === 0) return Buffer.from(raw);
        if (method === 8) return inflateRawSync(raw);
        throw new Error(`${path}: ${name} uses unsupported compression method ${method}`);
      },
    });
  }
  return entries;
}
