/**
 * The emulator launcher patches moto's internals, so it must refuse any moto but the one it was
 * written for, in one line, before serving a request. A fake `moto` distribution earlier on the
 * Python path makes the installed version look different without touching the real virtualenv.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PrerequisiteError } from '../../lib/errors';
import { spawnSync } from 'node:child_process';
import { ensureMoto, startDynamo } from '../../infra/local/dynamodb';
import { stopProcess } from '../../infra/local/process';
import { CACHE_DIR } from '../../infra/local/stack/dirs';

const LAUNCHER_DIR = resolve(__dirname, '..', '..', 'infra', 'local', 'dynamodb');

describe('moto launcher version guard', () => {
  let dir: string;
  const saved = process.env.PYTHONPATH;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'moto-guard-'));
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.PYTHONPATH;
    else process.env.PYTHONPATH = saved;
    rmSync(dir, { recursive: true, force: true });
  });

  it('pins the same moto version in requirements.txt and in the launcher', () => {
    const pinned = /^moto\[[^\]]*\]==(\S+)$/m.exec(readFileSync(join(LAUNCHER_DIR, 'requirements.txt'), 'utf8'))?.[1];
    const supported = /^SUPPORTED_MOTO_VERSION = "([^"]+)"$/m.exec(readFileSync(join(LAUNCHER_DIR, 'moto_server.py'), 'utf8'))?.[1];
    expect(pinned).toBeDefined();
    expect(supported).toBe(pinned);
  });

  it('refuses to start on another moto version, saying which and what to install', async () => {
    const fake = join(dir, 'site');
    mkdirSync(join(fake, 'moto-9.9.9.dist-info'), { recursive: true });
    writeFileSync(join(fake, 'moto-9.9.9.dist-info', 'METADATA'), 'Metadata-Version: 2.1\nName: moto\nVersion: 9.9.9\n');
    process.env.PYTHONPATH = fake;
    const started = startDynamo({ dir: join(dir, 'run'), cacheDir: CACHE_DIR, ownerPid: process.pid, startTimeoutMs: 20_000 });
    // Should it start after all, stop it rather than leave an emulator behind.
    started.then(
      (instance) => stopProcess(instance.pid),
      () => undefined,
    );
    await expect(started).rejects.toThrow(PrerequisiteError);
    await expect(started).rejects.toThrow(/exited during start-up: moto_server\.py: moto 9\.9\.9 found, .*install moto==\d/);
  });
});

describe("the launcher's garbage-collection patch", () => {
  it('freezes the survivors of a full collection only (the next full collection walks what is new)', () => {
    const python = ensureMoto(CACHE_DIR);
    const script = [
      'import gc',
      'from patches import speed',
      'speed.freeze_survivors_of_full_collections()',
      'kept = [[i] for i in range(10000)]',
      'gc.collect(0)',
      'young = gc.get_freeze_count()',
      'gc.collect(2)',
      'print(young, gc.get_freeze_count() >= len(kept))',
    ].join('\n');
    const out = spawnSync(python, ['-c', script], {
      cwd: LAUNCHER_DIR,
      encoding: 'utf8',
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(out.stderr).toBe('');
    expect(out.stdout.trim()).toBe('0 True');
  });
});
