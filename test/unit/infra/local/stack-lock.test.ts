import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockFile, withStackLock } from '../../../../infra/local/stack-lock';
import { waitFor } from '../../../support/wait-for';

/** The pid of a process that has exited (its number is free, or someone else's by now: either way not a holder). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('stack lock', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stack-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('runs one holder at a time: the second waits for the first, says so once, and then runs', async () => {
    const order: string[] = [];
    const said: string[] = [];
    let releaseFirst: () => void = () => undefined;
    const first = withStackLock(dir, 'started', async () => {
      order.push('first in');
      await new Promise<void>((r) => (releaseFirst = r));
      order.push('first out');
    });
    // The second must find the lock held: it starts once the first is inside.
    await waitFor('the first holder to be inside the lock', () => order.includes('first in'), { intervalMs: 5 });
    const second = withStackLock(dir, 'stopped', async () => void order.push('second'), { pollMs: 5, log: (l) => said.push(l) });
    // The second has seen the lock held before the first lets go.
    await waitFor('the second to say it waits', () => said.length > 0, { intervalMs: 5 });
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'second']);
    expect(said).toEqual([`waiting: the local stack is being started by pid ${process.pid} (${lockFile(dir)})`]);
    expect(existsSync(lockFile(dir))).toBe(false);
  });

  it("takes over a dead holder's lock", async () => {
    const pid = deadPid();
    writeFileSync(lockFile(dir), JSON.stringify({ pid, what: 'started', atMs: Date.now() - 1000 }));
    await expect(
      withStackLock(dir, 'started', async () => JSON.parse(readFileSync(lockFile(dir), 'utf8')) as { pid: number }),
    ).resolves.toMatchObject({
      pid: process.pid,
    });
  });

  it('takes over a lock a holder died writing (empty for over a second), not one being written now', async () => {
    writeFileSync(lockFile(dir), '');
    const old = (Date.now() - 5000) / 1000;
    utimesSync(lockFile(dir), old, old);
    await expect(withStackLock(dir, 'started', async () => 'ran')).resolves.toBe('ran');
  });

  it('gives up on a live holder after the timeout, naming it', async () => {
    writeFileSync(lockFile(dir), JSON.stringify({ pid: process.pid, what: 'stopped', atMs: Date.now() }));
    await expect(withStackLock(dir, 'started', async () => 'ran', { timeoutMs: 50, pollMs: 5 })).rejects.toThrow(
      new RegExp(`^the local stack's lock .* is held by pid ${process.pid} \\(stopped\\) for \\d+ s: wait for it, or stop that process$`),
    );
    // Not taken over: still the holder's.
    expect(JSON.parse(readFileSync(lockFile(dir), 'utf8'))).toMatchObject({ pid: process.pid, what: 'stopped' });
  });

  it('releases the lock when the body throws', async () => {
    await expect(withStackLock(dir, 'started', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(existsSync(lockFile(dir))).toBe(false);
  });

  it('treats a live pid that started after the lock was written as a reused pid, not the holder', async () => {
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      // A holder that took the lock a minute before this process existed: the number was reused.
      writeFileSync(lockFile(dir), JSON.stringify({ pid: other.pid, what: 'started', atMs: Date.now() - 60_000 }));
      await expect(withStackLock(dir, 'started', async () => 'ran', { timeoutMs: 2000 })).resolves.toBe('ran');
    } finally {
      other.kill();
    }
  });
});
