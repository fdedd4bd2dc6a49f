/**
 * One `local:up` / `local:down` at a time per stack directory: a lock file naming its holder's pid.
 * A second caller waits while the holder lives and takes over a lock whose holder died. Hand-written
 * because lock libraries (proper-lockfile and the like) tell a dead holder by a lock file's age,
 * refreshed on a timer: a stack start blocks its event loop for tens of seconds (formatting Kafka's
 * log dir, the first Maven and pip downloads), so such a lock would look stale while its holder works.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmdirSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PrerequisiteError } from '../../lib/errors';
import { isAlive, sleep } from './process';
import { processStartedAtMs } from './process-start';

/** What the lock file records: who holds it, doing what, since when. */
export type LockHolder = { pid: number; what: string; atMs: number };

export type LockOptions = {
  /** How long to wait for a live holder before giving up. Default 10 minutes (a first start downloads jars). */
  timeoutMs?: number;
  pollMs?: number;
  /** Says once that this caller waits, and for whom. */
  log?: (line: string) => void;
};

/** A breaker that died mid-break leaves its marker; older than this, the marker is removed. */
const BREAK_STALE_MS = 10_000;

export const lockFile = (dir: string): string => join(dir, '.lock');

/** Runs `body` holding the stack directory's lock (waits for another holder, takes over a dead one's). */
export async function withStackLock<T>(dir: string, what: string, body: () => Promise<T>, opts: LockOptions = {}): Promise<T> {
  const me = await acquire(dir, what, opts);
  try {
    return await body();
  } finally {
    release(dir, me);
  }
}

async function acquire(dir: string, what: string, opts: LockOptions): Promise<LockHolder> {
  mkdirSync(dir, { recursive: true });
  const file = lockFile(dir);
  const deadline = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
  let said = false;
  for (;;) {
    const me: LockHolder = { pid: process.pid, what, atMs: Date.now() };
    if (tryCreate(file, me)) return me;
    const holder = readHolder(file);
    if (holder === 'gone') {
      await sleep(20);
      continue;
    }
    if (holder === 'unreadable' || !holds(holder)) {
      breakStale(file, holder);
      continue;
    }
    if (!said) opts.log?.(`waiting: the local stack is being ${holder.what} by pid ${holder.pid} (${file})`);
    said = true;
    if (Date.now() > deadline) {
      throw new PrerequisiteError(
        `the local stack's lock ${file} is held by pid ${holder.pid} ` +
          `(${holder.what}) for ${Math.round((Date.now() - holder.atMs) / 1000)} s: ` +
          `wait for it, or stop that process`,
      );
    }
    await sleep(opts.pollMs ?? 200);
  }
}

/** Creates the lock file only if none exists (O_EXCL), with its holder written in the same step. */
function tryCreate(file: string, me: LockHolder): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify(me));
  } finally {
    closeSync(fd);
  }
  return true;
}

/** The recorded holder; 'gone' if the file vanished meanwhile; 'unreadable' if empty or torn for over a second. */
function readHolder(file: string): LockHolder | 'gone' | 'unreadable' {
  let text: string;
  let ageMs: number;
  try {
    text = readFileSync(file, 'utf8');
    ageMs = Date.now() - statSync(file).mtimeMs;
  } catch {
    return 'gone';
  }
  try {
    const h = JSON.parse(text) as LockHolder;
    if (Number.isInteger(h.pid) && typeof h.atMs === 'number') return h;
  } catch {
    /* being written, or its writer died between creating and writing */
  }
  // A holder writes its record right after creating the file; give it that moment.
  return ageMs > 1000 ? 'unreadable' : 'gone';
}

/** The holder still runs: its pid is alive and (where the system says) started before it took the lock. */
function holds(h: LockHolder): boolean {
  if (h.pid === process.pid) return true;
  if (!isAlive(h.pid)) return false;
  const startedAtMs = processStartedAtMs(h.pid);
  // Clock ticks make the start time coarse: a second of slack.
  return startedAtMs === undefined || startedAtMs <= h.atMs + 1000;
}

/**
 * Removes a dead holder's lock, one breaker at a time (a marker directory), and only if the lock is
 * still the one found dead: two waiters must not both break it, the second deleting the first's
 * fresh lock.
 */
function breakStale(file: string, seen: LockHolder | 'unreadable'): void {
  const marker = `${file}.break`;
  try {
    mkdirSync(marker);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    try {
      if (Date.now() - statSync(marker).mtimeMs > BREAK_STALE_MS) rmdirSync(marker);
    } catch {
      /* removed by its owner meanwhile */
    }
    return;
  }
  try {
    const now = readHolder(file);
    const same = seen === 'unreadable' ? now === 'unreadable' : now !== 'gone' && now !== 'unreadable' && sameHolder(now, seen);
    if (same) unlinkSync(file);
  } finally {
    rmdirSync(marker);
  }
}

const sameHolder = (a: LockHolder, b: LockHolder): boolean => a.pid === b.pid && a.atMs === b.atMs;

/** Removes the lock if it is still this caller's. */
function release(dir: string, me: LockHolder): void {
  const file = lockFile(dir);
  const now = readHolder(file);
  if (now !== 'gone' && now !== 'unreadable' && sameHolder(now, me)) unlinkSync(file);
}
