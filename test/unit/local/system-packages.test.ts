/**
 * The one list of system packages (infra/local/install-system-packages.sh): what it reports missing
 * on a machine without the tools, and what a user who is not root is told to run.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageFile } from '../../../lib/paths';
import { ensureSystemPackages, missingSystemPackages } from '../../../infra/local/system-packages';

const SCRIPT = packageFile('infra', 'local', 'install-system-packages.sh');

/** A PATH with only the shell's own needs (bash, id) and python3: every other tool is missing. */
function barePath(): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'bare-path-'));
  for (const tool of ['bash', 'id', 'python3']) {
    const found = spawnSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    symlinkSync(found, join(dir, tool));
  }
  return { path: dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

it('lists every missing tool by its Debian package and fails --check', () => {
  const bare = barePath();
  try {
    const run = spawnSync(join(bare.path, 'bash'), [SCRIPT, '--check'], { encoding: 'utf8', env: { PATH: bare.path } });
    expect(run.status).toBe(1);
    expect(run.stdout.split('\n').filter(Boolean)).toEqual(
      expect.arrayContaining(['openjdk-17-jdk-headless', 'maven', 'kcat', 'openssl', 'unzip', 'cmake', 'make', 'g++', 'curl']),
    );
  } finally {
    bare.remove();
  }
});

it('reports nothing missing on this machine (the test run has every tool)', () => {
  expect(missingSystemPackages()).toEqual([]);
});

it('tells a user who is not root the one command that installs what is missing, and installs nothing', () => {
  const bare = barePath();
  const getuid = jest.spyOn(process, 'getuid').mockReturnValue(1000);
  const log = jest.fn();
  try {
    expect(() => ensureSystemPackages(log, { PATH: bare.path })).toThrow(
      /missing system packages: openjdk-17-jdk-headless, maven.*sudo bash .*install-system-packages\.sh/,
    );
    expect(log).not.toHaveBeenCalled();
  } finally {
    getuid.mockRestore();
    bare.remove();
  }
});
