/**
 * Whether a recorded pid is still the service the stack started: alive, and the process listening on
 * the service's port (or, when the port is not listening yet or the system cannot say who listens,
 * running the service's command line). A busy service is still ours; a pid the system gave to some
 * other process after ours died is not. Read from /proc on Linux and `ps` elsewhere: no library
 * answers "who listens on this port" portably, and `ss`/`lsof` are not on every machine.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { isAlive } from './process';

/** The command line of a process (arguments joined by spaces), or undefined when it cannot be read. */
export function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    const ps = spawnSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8', timeout: 5000 });
    return ps.status === 0 && ps.stdout.trim() ? ps.stdout.trim() : undefined;
  }
}

/** Socket inodes listening on `port` (IPv4 and IPv6), from /proc/net; undefined without /proc. */
function listeningInodes(port: number): Set<string> | undefined {
  const inodes = new Set<string>();
  let readAny = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    readAny = true;
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st ... inode: local port in hex, state 0A is LISTEN.
      const f = line.trim().split(/\s+/);
      const local = f[1]?.split(':').at(-1);
      if (f[3] === '0A' && local && parseInt(local, 16) === port && f[9]) inodes.add(f[9]);
    }
  }
  return readAny ? inodes : undefined;
}

function holdsSocket(pid: number, inodes: Set<string>): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      return m?.[1] !== undefined && inodes.has(m[1]);
    } catch {
      return false;
    }
  });
}

/**
 * The pid listening on the loopback `port`: a number, 'none' when nothing listens, or 'unknown'
 * when the system cannot tell (no /proc, or a process this user may not inspect).
 */
function portOwner(port: number): number | 'none' | 'unknown' {
  const inodes = listeningInodes(port);
  if (inodes === undefined) return 'unknown';
  if (inodes.size === 0) return 'none';
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return 'unknown';
  }
  const owner = pids.find((p) => holdsSocket(Number(p), inodes));
  return owner === undefined ? 'unknown' : Number(owner);
}

/** A started service as recorded: its pid, the port it listens on, and a string its command line contains. */
export type RecordedService = { pid: number; port: number; marker: string };

/** True while `s.pid` is the recorded service (see the file's comment); false when it died or the pid is another process now. */
export function isOurService(s: RecordedService, owner: (port: number) => number | 'none' | 'unknown' = portOwner): boolean {
  if (!isAlive(s.pid)) return false;
  const listener = owner(s.port);
  if (typeof listener === 'number') return listener === s.pid;
  const cmd = commandLine(s.pid);
  return cmd === undefined || cmd.includes(s.marker);
}

/** "pid 123 (java ... kafka.Kafka ...)": who holds a port, for a message; undefined when unknown. */
export function describePortOwner(port: number): string | undefined {
  const pid = portOwner(port);
  if (typeof pid !== 'number') return undefined;
  const cmd = commandLine(pid);
  return `pid ${pid}${cmd ? ` (${cmd.length > 100 ? `${cmd.slice(0, 97)}...` : cmd})` : ''}`;
}
