/**
 * What the local stack's Kafka keeps on disk: bytes and partitions under its log dirs, read from the
 * directory tree (the broker need not be up), and the warning `local:up` gives when it is a lot:
 * every partition is reopened at each start, and a stack that reopens thousands starts slowly.
 */
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PrerequisiteError } from '../../lib/errors';

export type DataUsage = { bytes: number; partitions: number };

/** Thresholds above which `local:up` warns: LOCAL_WARN_PARTITIONS (default 2,000), LOCAL_WARN_DATA_MB (default 2,048). */
export type UsageLimits = { partitions: number; bytes: number };

export function usageLimits(env: NodeJS.ProcessEnv = process.env): UsageLimits {
  const read = (name: string, fallback: number): number => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) throw new PrerequisiteError(`${name}=${text} is not a whole number`);
    return n;
  };
  return { partitions: read('LOCAL_WARN_PARTITIONS', 2000), bytes: read('LOCAL_WARN_DATA_MB', 2048) * 1024 * 1024 };
}

/** Bytes on disk of every file under `dir` (as du counts them; symbolic links not followed). */
function treeBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(path);
    else if (entry.isFile()) total += lstatSync(path).blocks * 512; // on disk: index files are sparse
  }
  return total;
}

/**
 * Bytes and distinct user partitions (`<topic>-<n>` dirs, not Kafka's internal `__` topics nor
 * dirs of deleted partitions awaiting removal) in the given log dirs; a replica on several nodes is
 * counted once.
 */
export function dataUsage(logDirs: string[]): DataUsage {
  const partitions = new Set<string>();
  let bytes = 0;
  for (const dir of logDirs.filter((d) => existsSync(d))) {
    bytes += treeBytes(dir);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && /-\d+$/.test(entry.name) && !entry.name.startsWith('__')) partitions.add(entry.name);
    }
  }
  return { bytes, partitions: partitions.size };
}

/** "2.5 GB", "310 MB", "12 KB". */
export function sizeText(bytes: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let n = bytes;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return `${u === 0 ? n : n >= 100 ? Math.round(n) : Number(n.toFixed(1))} ${units[u]}`;
}

/** The line (or two, with a warning naming the prune command) `local:up` prints about Kafka's data (pure). */
export function usageReport(u: DataUsage, where: string, limits: UsageLimits, pruneCommand: string): string[] {
  const lines = [`Kafka data: ${sizeText(u.bytes)} in ${u.partitions.toLocaleString('en-US')} partitions (${where})`];
  const over = [
    ...(u.partitions > limits.partitions ? [`over ${limits.partitions.toLocaleString('en-US')} partitions`] : []),
    ...(u.bytes > limits.bytes ? [`over ${sizeText(limits.bytes)}`] : []),
  ];
  if (over.length) {
    lines.push(
      `warning: the local stack's Kafka data is ${over.join(' and ')}, reopened at every start: ` +
        `${pruneCommand} deletes what the project's tools left (their topics older than a day; --dry-run lists them)`,
    );
  }
  return lines;
}
