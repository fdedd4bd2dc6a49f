/**
 * Go programs the local stack builds once into its cache (the Lambda runtime emulator, the fault
 * proxy): `go install <module>@<version>` from the Go module proxy, with the machine's Go when new
 * enough, else Go's own toolchain module from the same proxy.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PrerequisiteError } from '../../lib/errors';
import { requireCommand } from './process';

/** The emulator's go.mod asks for Go 1.26.6; this toolchain builds it where the machine's Go is older or missing. */
const GO_TOOLCHAIN = '1.26.8';
const GO_PROXY_TOOLCHAIN = 'https://proxy.golang.org/golang.org/toolchain/@v';

/** The machine's Go when it is at least the toolchain's version. */
function machineGo(): string | undefined {
  const run = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8', timeout: 30_000 });
  const m = /^go(\d+)\.(\d+)(?:\.(\d+))?/.exec(run.stdout?.trim() ?? '');
  if (run.status !== 0 || !m) return undefined;
  const [want1, want2, want3] = GO_TOOLCHAIN.split('.').map(Number) as [number, number, number];
  const have = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] as const;
  const newEnough = have[0] > want1 || (have[0] === want1 && (have[1] > want2 || (have[1] === want2 && have[2] >= want3)));
  return newEnough ? 'go' : undefined;
}

/**
 * Go to build with: the machine's when new enough, else Go's own toolchain module
 * from the Go module proxy (what `go` itself fetches for GOTOOLCHAIN), unpacked into the cache.
 */
function ensureGo(cacheDir: string): string {
  const own = machineGo();
  if (own) return own;
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const version = `v0.0.1-go${GO_TOOLCHAIN}.${process.platform}-${arch}`;
  const dir = resolve(cacheDir, `go-${GO_TOOLCHAIN}`);
  const root = join(dir, `golang.org/toolchain@${version}`);
  const go = join(root, 'bin', 'go');
  if (existsSync(join(dir, '.complete'))) return go;
  requireCommand('curl', ['--version'], 'it downloads Go for the Lambda runtime emulator (Debian: apt-get install curl)');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  process.stderr.write(
    `downloading Go ${GO_TOOLCHAIN} from the Go module proxy to build the Lambda runtime emulator (first use only)...\n`,
  );
  const zip = join(dir, 'toolchain.zip');
  const steps: Array<[string, string[]]> = [
    ['curl', ['-fsSL', '--retry', '3', '-o', zip, `${GO_PROXY_TOOLCHAIN}/${version}.zip`]],
    ['unzip', ['-q', zip, '-d', dir]],
    // Module zips keep no file modes: the toolchain's programs are made executable, as `go` does.
    ['sh', ['-c', `chmod +x "${root}"/bin/* "${root}"/pkg/tool/*/*`]],
  ];
  for (const [cmd, args] of steps) {
    const run = spawnSync(cmd, args, { encoding: 'utf8', timeout: 15 * 60_000 });
    if (run.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new PrerequisiteError(`${cmd} failed while installing Go ${GO_TOOLCHAIN}: ${(run.stderr || String(run.error)).trim()}`);
    }
  }
  rmSync(zip, { force: true });
  writeFileSync(join(dir, '.complete'), version);
  return go;
}

/**
 * A Go program built once into the cache with `go install <module>@<version>` (the Go module proxy
 * serves the module), with the machine's Go when new enough, else Go's own toolchain module; returns
 * the binary's path. `binary` is the name `go install` gives it (its package directory's).
 */
export function goInstallOnce(
  cacheDir: string,
  o: { module: string; version: string; binary: string; what: string; cacheName?: string },
): string {
  const dir = resolve(cacheDir, `${o.cacheName ?? o.binary}-${o.version}`);
  const binary = join(dir, o.binary);
  if (existsSync(join(dir, '.complete'))) return binary;
  const go = ensureGo(cacheDir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  process.stderr.write(`building ${o.what} (go install ${o.module}@${o.version}, first use only)...\n`);
  const run = spawnSync(go, ['install', `${o.module}@${o.version}`], {
    env: { ...process.env, GOBIN: dir, CGO_ENABLED: '0', GOTOOLCHAIN: 'local' },
    encoding: 'utf8',
    timeout: 15 * 60_000,
  });
  if (run.status !== 0 || !existsSync(binary)) {
    rmSync(dir, { recursive: true, force: true });
    throw new PrerequisiteError(
      `go install ${o.module}@${o.version} failed: ${(run.stderr || String(run.error)).trim().split('\n').at(-1)}`,
    );
  }
  writeFileSync(join(dir, '.complete'), o.version);
  return binary;
}
