/**
 * Lambda's own runtime pieces for the local Lambda (service.ts), built once into the cache like the
 * Kafka jars: AWS's Runtime Interface Emulator (`aws-lambda-rie`, a Go program: the Runtime API and
 * the invoke endpoint Lambda's sandbox has) and the Node.js Runtime Interface Client (`aws-lambda-ric`,
 * what Lambda's nodejs22.x runtime runs: it loads the handler and speaks the Runtime API). Node 22
 * itself is the project's `node@22` devDependency, as the tests' runtime is.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PrerequisiteError } from '../../../lib/errors';
import { packageFile } from '../../../lib/paths';
import { goInstallOnce } from '../go';
import { requireCommand } from '../process';

/** The emulator's pseudo-version on the Go module proxy (its tagged releases are not served there). */
export const RIE_VERSION = 'v0.0.0-20261030222936-bef5c4ba774d';
const RIE_MODULE = 'github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie';
export const RIC_VERSION = '4.0.2';

/** Node 22 (Lambda's nodejs22.x): the running Node when it is 22, else the `node@22` devDependency's binary. */
export function node22Binary(): string {
  if (process.versions.node.startsWith('22.')) return process.execPath;
  const binary = packageFile('node_modules', 'node', 'bin', 'node');
  if (!existsSync(binary))
    throw new PrerequisiteError(`the local Lambda runs on Node 22: install it (or the engine's node@22 devDependency: npm install)`);
  return binary;
}

/** Node 22's headers, to build the runtime client's native part against: the running Node's, or the `node@22` devDependency's. */
function node22Headers(): string {
  const own = join(process.execPath, '..', '..');
  if (process.versions.node.startsWith('22.') && existsSync(join(own, 'include', 'node'))) return own;
  const nodedir = packageFile('node_modules', 'node', 'node_modules', `node-${process.platform}-${process.arch}`);
  if (!existsSync(join(nodedir, 'include', 'node')))
    throw new PrerequisiteError(
      `Node 22's headers are missing (${nodedir}/include/node): run npm rebuild node (the node@22 devDependency)`,
    );
  return nodedir;
}

/** Builds `aws-lambda-rie` with `go install` once; returns its path. */
export function ensureRie(cacheDir: string): string {
  return goInstallOnce(cacheDir, {
    module: RIE_MODULE,
    version: RIE_VERSION,
    binary: 'aws-lambda-rie',
    cacheName: 'lambda-rie',
    what: 'the Lambda runtime emulator',
  });
}

/**
 * Installs `aws-lambda-ric` once (its native part built offline against Node 22's headers); returns
 * its entry point (`index.mjs`).
 */
export function ensureRic(cacheDir: string): string {
  const dir = resolve(cacheDir, `lambda-ric-${RIC_VERSION}`);
  const entry = join(dir, 'node_modules', 'aws-lambda-ric', 'index.mjs');
  if (existsSync(join(dir, '.complete'))) return entry;
  for (const [cmd, pkg] of [
    ['cmake', 'cmake'],
    ['make', 'make'],
    ['g++', 'g++'],
  ] as const)
    requireCommand(cmd, ['--version'], `the Lambda runtime client builds its native part with it (Debian: apt-get install ${pkg})`);
  const binary = node22Binary();
  const nodedir = node22Headers();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{"name":"lambda-ric","private":true}\n');
  process.stderr.write(`building the Lambda runtime client (npm install aws-lambda-ric@${RIC_VERSION}, first use only)...\n`);
  const run = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--foreground-scripts', `aws-lambda-ric@${RIC_VERSION}`], {
    cwd: dir,
    // node-gyp builds against these headers instead of downloading them; npm and the install scripts run on Node 22.
    env: { ...process.env, npm_config_nodedir: nodedir, PATH: `${join(binary, '..')}:${process.env.PATH ?? ''}` },
    encoding: 'utf8',
    timeout: 15 * 60_000,
  });
  if (run.status !== 0 || !existsSync(join(dir, 'node_modules', 'aws-lambda-ric', 'rapid-client.node'))) {
    rmSync(dir, { recursive: true, force: true });
    const tail = `${run.stdout}${run.stderr}`.trim().split('\n').slice(-5).join('\n');
    throw new PrerequisiteError(`npm install aws-lambda-ric@${RIC_VERSION} failed:\n${tail}`);
  }
  writeFileSync(join(dir, '.complete'), RIC_VERSION);
  return entry;
}
