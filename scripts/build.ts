/**
 * `npm run build` (and `npm pack`, through `prepack`): the package's JavaScript and type declarations
 * in `dist/`, so an installed engine runs on plain Node with neither tsx nor any dev dependency.
 *
 * - Every TypeScript source the package runs (lib, bin, the local stack, the CloudFormation builders,
 *   the deploy command) is transpiled file by file to CommonJS, keeping the tree's layout, so
 *   `dist/lib/x.js` requires `dist/lib/y.js` exactly as the sources import each other.
 * - The two Lambda entry points (`functions/*.ts`) are the same, except that `@middy/core` is bundled
 *   in: middy 7 is ESM-only and exports no `require` condition, so a CommonJS `require` of it fails
 *   (ERR_PACKAGE_PATH_NOT_EXPORTED). Everything else stays a `require`.
 * - `tsc` writes the declarations of the public entry points (`lib/index.ts`, `lib/testing/index.ts`)
 *   and of everything they reference.
 * - `streams.schema.json`: the streams config as JSON Schema, for editors (`"$schema"` in a config).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';

const ROOT = resolve(__dirname, '..');
const DIST = join(ROOT, 'dist');
/** Source folders the package runs from `dist/` (tests, benchmarks and scripts stay out). */
const SOURCE_DIRS = ['lib', 'bin', 'infra/local', 'infra/cfn', 'infra/serverless'];
const FUNCTIONS_DIR = 'functions';

function typescriptFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return typescriptFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const common = {
  absWorkingDir: ROOT,
  outdir: DIST,
  outbase: ROOT,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  sourcemap: true,
  // Error classes are matched by name (logs, callers): keep them.
  keepNames: true,
  // A lazy `import('./x')` becomes a `require`: Node's import() of a CommonJS path needs its extension.
  supported: { 'dynamic-import': false },
  logLevel: 'warning',
} as const;

/** Everything but middy (and the entry itself) stays an import: relative ones land on their own dist file. */
const bundleOnlyMiddy: Plugin = {
  name: 'bundle-only-middy',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      // middy's own files import each other: those are bundled with it.
      const inMiddy = args.path.startsWith('@middy/') || /[\\/]node_modules[\\/]@middy[\\/]/.test(args.importer);
      if (args.kind === 'entry-point' || inMiddy) return undefined;
      return { path: args.path, external: true };
    });
  },
};

async function javascript(): Promise<void> {
  await build({ ...common, entryPoints: SOURCE_DIRS.flatMap(typescriptFiles) });
  await build({ ...common, entryPoints: typescriptFiles(FUNCTIONS_DIR), bundle: true, plugins: [bundleOnlyMiddy] });
}

function declarations(): void {
  const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
  const run = spawnSync(tsc, ['-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`tsc (declarations) failed:\n${run.stdout}${run.stderr}`);
}

async function jsonSchema(): Promise<void> {
  const { deploymentConfigJsonSchema } = await import('../lib/config/json-schema');
  writeFileSync(join(ROOT, 'streams.schema.json'), `${JSON.stringify(deploymentConfigJsonSchema(), null, 2)}\n`);
}

async function main(): Promise<void> {
  const t0 = Date.now();
  rmSync(DIST, { recursive: true, force: true });
  await javascript();
  declarations();
  await jsonSchema();
  process.stderr.write(`[build] ${relative(process.cwd(), DIST) || DIST} and streams.schema.json in ${Date.now() - t0} ms\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`[build] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
