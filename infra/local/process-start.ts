/**
 * When a process started, from /proc (Linux): a pid alive now may be a different process from the
 * one that recorded it, if that one died and the system reused its number.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSec: number | undefined;

function clockTicks(): number {
  if (ticksPerSec === undefined) {
    const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5000 });
    const n = Number(out.stdout?.trim());
    ticksPerSec = out.status === 0 && Number.isInteger(n) && n > 0 ? n : 100;
  }
  return ticksPerSec;
}

/** The process's start time in epoch ms (to the clock tick), or undefined where /proc cannot say. */
export function processStartedAtMs(pid: number): number | undefined {
  try {
    const bootSec = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (in parentheses, which may itself hold spaces): starttime is the 20th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const startTicks = Number(fields[19]);
    if (!Number.isFinite(bootSec) || !Number.isFinite(startTicks)) return undefined;
    return bootSec * 1000 + (startTicks / clockTicks()) * 1000;
  } catch {
    return undefined;
  }
}
