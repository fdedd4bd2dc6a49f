/**
 * Small process helpers for the local stack: prerequisite checks, free ports, detached services with
 * an optional watchdog, bounded waits. Node's child_process covers this; no library adds much here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { PrerequisiteError, TimeoutError } from '../../lib/errors';

export const LOOPBACK = '127.0.0.1';

/** Runs `cmd --version`-like probes; throws a PrerequisiteError with `hint` when the command is missing. */
export function requireCommand(cmd: string, args: string[], hint: string): string {
  const res = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000 });
  if (res.error || res.status !== 0) {
    throw new PrerequisiteError(`${cmd} is required but ${res.error ? 'was not found' : 'failed'}: ${hint}`, {
      cause: res.error,
    });
  }
  return `${res.stdout}${res.stderr}`;
}

/** Asks the kernel for a free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, LOOPBACK, () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** True when something accepts TCP connections on the loopback port. */
export async function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: LOOPBACK, port });
    sock.setTimeout(1000);
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('timeout', () => {
      sock.destroy();
      resolve(false);
    });
    sock.once('error', () => resolve(false));
  });
}

/** Uses `requested` (from an env var) if given and free, otherwise a kernel-chosen free port. */
export async function choosePort(requested: string | undefined, envName: string): Promise<number> {
  if (requested === undefined || requested === '') return freePort();
  const port = Number(requested);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new PrerequisiteError(`${envName}=${requested} is not a valid TCP port (1-65535)`);
  }
  if (await portInUse(port)) {
    throw new PrerequisiteError(
      `port ${port} (${envName}) is already in use on ${LOOPBACK}: stop what listens there or unset ${envName} to pick a free port`,
    );
  }
  return port;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export type SpawnedService = { pid: number; watchdogPid?: number };

/**
 * Starts a long-running service detached from this process, output to `logFile`. With `ownerPid`, a
 * watchdog shell kills the service when the owner dies, so a crashed test run leaves nothing behind.
 */
export function spawnService(opts: {
  cmd: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  logFile: string;
  ownerPid?: number;
}): SpawnedService {
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(opts.cmd, opts.args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  if (child.pid === undefined) throw new PrerequisiteError(`could not start ${opts.cmd}`);
  child.unref();
  if (opts.ownerPid === undefined) return { pid: child.pid };
  const script =
    'while kill -0 "$0" 2>/dev/null && kill -0 "$1" 2>/dev/null; do sleep 1; done; ' +
    'if kill -0 "$1" 2>/dev/null; then kill "$1"; sleep 5; kill -9 "$1" 2>/dev/null; fi';
  const dog = spawn('bash', ['-c', script, String(opts.ownerPid), String(child.pid)], {
    detached: true,
    stdio: 'ignore',
  });
  dog.unref();
  return { pid: child.pid, watchdogPid: dog.pid };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopProcess(pid: number, graceMs = 10_000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(100);
  if (isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    const killDeadline = Date.now() + 5000;
    while (isAlive(pid) && Date.now() < killDeadline) await sleep(50);
  }
}

/** SIGKILL (no shutdown hooks: a crash); resolves once the process is gone. */
export async function killProcess(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return; // already gone
  }
  const deadline = Date.now() + 5000;
  while (isAlive(pid) && Date.now() < deadline) await sleep(50);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The last non-empty line a service wrote to its log (its own reason for exiting), if short enough to quote. */
function lastLogLine(logFile: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return undefined;
  }
  const line = text.trimEnd().split('\n').pop()?.trim();
  return line && line.length <= 300 ? line : undefined;
}

/** Retries `probe` until it resolves true or `timeoutMs` passes; `isAlive` short-circuits a dead process. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  opts: { timeoutMs: number; intervalMs?: number; pid?: number; logFile?: string },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  const where = opts.logFile ? ` (see ${opts.logFile})` : '';
  for (;;) {
    if (opts.pid !== undefined && !isAlive(opts.pid)) {
      const said = opts.logFile ? lastLogLine(opts.logFile) : undefined;
      throw new PrerequisiteError(`${what} exited during start-up${said ? `: ${said}` : ''}${where}`);
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new TimeoutError(`${what} not ready after ${opts.timeoutMs} ms${where}`);
    await sleep(opts.intervalMs ?? 250);
  }
}
