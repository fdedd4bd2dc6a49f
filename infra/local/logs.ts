/**
 * Size limits of the local services' logs. The broker (log4j2's RollingFile) and the emulator
 * (Python's RotatingFileHandler) each rotate their own log by size, so a stack left running for days
 * keeps a few small files, not one that grows without end.
 */
import { existsSync, statSync, truncateSync } from 'node:fs';
import { PrerequisiteError } from '../../lib/errors';

/** How large a log grows before it is rotated, and how many rotated files are kept beside it. */
export type LogLimits = { fileBytes: number; keptFiles: number };

const MB = 1024 * 1024;
const DEFAULT_LOG_LIMITS: LogLimits = { fileBytes: 5 * MB, keptFiles: 3 };

/** LOCAL_LOG_FILE_MB (default 5; a fraction for tests) and LOCAL_LOG_FILES (rotated files kept, default 3). */
export function logLimits(env: NodeJS.ProcessEnv = process.env): LogLimits {
  const read = (name: string, ok: (n: number) => boolean, rule: string, fallback: number): number => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const n = Number(text);
    if (!ok(n)) throw new PrerequisiteError(`${name}=${text} is not ${rule}`);
    return n;
  };
  const mb = read('LOCAL_LOG_FILE_MB', (n) => n >= 0.01 && n <= 1024, 'a size in MB from 0.01 to 1024', DEFAULT_LOG_LIMITS.fileBytes / MB);
  const kept = read(
    'LOCAL_LOG_FILES',
    (n) => Number.isInteger(n) && n >= 1 && n <= 20,
    'a whole number from 1 to 20',
    DEFAULT_LOG_LIMITS.keptFiles,
  );
  return { fileBytes: Math.round(mb * MB), keptFiles: kept };
}

/** The limits in words, for `local:up`: "rotated at 5 MB, 3 kept". */
export function describeLogLimits(l: LogLimits): string {
  return `rotated at ${Number((l.fileBytes / MB).toFixed(2))} MB, ${l.keptFiles} kept`;
}

/**
 * A log written before rotation existed (or with a larger limit) is cut to nothing before the
 * service starts: rotating it would only keep the oversized file as the first archive.
 */
export function capOldLog(file: string, l: LogLimits): void {
  if (existsSync(file) && statSync(file).size > l.fileBytes) truncateSync(file, 0);
}
