/**
 * The system packages the local stack and the tests need (a JDK, Maven, Python's venv, kcat, openssl,
 * and the local Lambda's build tools), as infra/local/install-system-packages.sh lists them: the one
 * list `.ci/run` installs from. Where one is missing, a root user on Debian gets them installed here
 * the same way (the script says what it installs); anyone else gets the one command to run.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { PrerequisiteError } from '../../lib/errors';
import { packageFile } from '../../lib/paths';

const SCRIPT = packageFile('infra', 'local', 'install-system-packages.sh');

/** The Debian packages of tools not on this machine. */
export function missingSystemPackages(env: NodeJS.ProcessEnv = process.env): string[] {
  const run = spawnSync('bash', [SCRIPT, '--check'], { encoding: 'utf8', timeout: 60_000, env });
  return (run.stdout ?? '').split('\n').filter(Boolean);
}

/** Installs what is missing (root on Debian), or throws naming it and the command that installs it. */
export function ensureSystemPackages(log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): void {
  const missing = missingSystemPackages(env);
  if (missing.length === 0) return;
  const root = process.getuid?.() === 0;
  if (!root || !existsSync('/etc/debian_version')) {
    throw new PrerequisiteError(
      `missing system packages: ${missing.join(', ')}; install them ` +
        `(on Debian: sudo bash ${SCRIPT}, or apt-get install ${missing.join(' ')})`,
    );
  }
  log(`installing the missing system packages as root (${SCRIPT}): ${missing.join(', ')}`);
  const run = spawnSync('bash', [SCRIPT], { stdio: ['ignore', 'inherit', 'inherit'], timeout: 30 * 60_000, env });
  const still = missingSystemPackages(env);
  if (run.status !== 0 || still.length > 0)
    throw new PrerequisiteError(`could not install ${still.join(', ') || missing.join(', ')} with ${SCRIPT}`);
}
