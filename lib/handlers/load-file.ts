/**
 * Loads a user handler file from disk (the local runtime, the CLI, the test kit, the package-time
 * check) the way the Lambda bundle will run it: compiled by esbuild, TypeScript or JavaScript, ESM or
 * CommonJS, with its relative imports bundled in and its packages required at run time from the
 * file's own node_modules. `kafka-lambda-direct` (and `/testing`) resolve to this engine, so a
 * handler shares the engine's classes wherever it is.
 *
 * esbuild rather than a require hook (tsx, ts-node, jiti): the deployed bundle is esbuild's, so a
 * local run executes the same compiled code, and esbuild is already the engine's bundler. Node has no
 * public API to evaluate compiled code as a module with its own `require`; `Module#_compile` is the
 * one every such loader uses, hence the casts below.
 *
 * A Lambda bundle never reaches this file: the project's esbuild plugin replaces it with a stub.
 */
import { existsSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import NodeModule from 'node:module';
import { dirname, join, relative } from 'node:path';
import type { BuildFailure, BuildResult, Message, Metafile } from 'esbuild';
import { PACKAGE_ROOT } from '../paths';

/** Why a handler file cannot be loaded, in one line (the caller names the stream and the file). */
export type LoadProblem = { kind: 'build' | 'missing-package' | 'evaluation'; message: string; cause?: unknown };

/** The module's exports, or what stops it from loading. */
export function loadHandlerFile(file: string): { exports: unknown } | { problem: LoadProblem } {
  const built = build(file);
  if ('problem' in built) return built;
  const missing = missingPackages(built.metafile, file);
  if (missing.length) {
    const list = missing.map((m) => JSON.stringify(m.name)).join(', ');
    const where = relative(process.cwd(), packageDirOf(file)) || '.';
    const message =
      `imports ${list}, which ${missing.length > 1 ? 'are' : 'is'} not ` +
      `installed (npm install ${missing.map((m) => m.name).join(' ')} in ${where})`;
    return { problem: { kind: 'missing-package', message } };
  }
  try {
    return { exports: evaluate(file, built.code) };
  } catch (e) {
    const message = e instanceof Error ? `${e.name}: ${firstLine(e.message)}` : String(e);
    return { problem: { kind: 'evaluation', message, cause: e } };
  }
}

/** The file compiled to one CommonJS module (packages left to `require`), with its metafile. */
function build(file: string): { code: string; metafile: Metafile } | { problem: LoadProblem } {
  // Loaded lazily: only local runs and packaging compile handlers, and esbuild is a native binary.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const esbuild = require('esbuild') as typeof import('esbuild');
  let result: BuildResult<{ write: false; metafile: true }>;
  try {
    result = esbuild.buildSync({
      entryPoints: [file],
      absWorkingDir: dirname(file),
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'cjs',
      target: 'node22',
      keepNames: true,
      sourcemap: 'inline',
      sourcesContent: false,
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
  } catch (e) {
    const errors = (e as Partial<BuildFailure>).errors ?? [];
    const message = errors.length ? errors.slice(0, 3).map(describeMessage).join('; ') : String(e);
    return { problem: { kind: 'build', message, cause: e } };
  }
  return { code: result.outputFiles[0]?.text ?? '', metafile: result.metafile };
}

function describeMessage(m: Message): string {
  // esbuild names files relative to the handler's directory, which the caller's message names.
  const at = m.location ? `${m.location.file}:${m.location.line}:${m.location.column}: ` : '';
  return `${at}${m.text}`;
}

/** The engine's own entry points, which a handler's imports of the package's name resolve to. */
function selfModules(): Record<string, () => unknown> {
  /* eslint-disable @typescript-eslint/no-require-imports -- required when a handler asks, not before (they import this file) */
  return {
    'kafka-lambda-direct': () => require('../index'),
    'kafka-lambda-direct/testing': () => require('../testing'),
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
}

/**
 * Where a handler's packages are looked up after its own node_modules: the engine's, so a handler
 * outside any project can use what the engine brings (the AWS SDK), as the Lambda bundle can.
 */
function fallbackPaths(): string[] {
  const own = join(PACKAGE_ROOT, 'node_modules');
  const parent = dirname(PACKAGE_ROOT);
  return parent.endsWith('node_modules') ? [own, parent] : [own];
}

/** The package imports that neither the handler's node_modules nor the engine's can resolve. */
function missingPackages(metafile: Metafile, file: string): Array<{ name: string; importer: string }> {
  const self = selfModules();
  const out = new Map<string, { name: string; importer: string }>();
  for (const [input, { imports }] of Object.entries(metafile.inputs)) {
    const importer = join(dirname(file), input);
    for (const i of imports) {
      // `<runtime>`: esbuild's own helpers, not an import of the handler's.
      if (!i.external || i.path.startsWith('<') || isBuiltin(i.path) || i.path in self || out.has(i.path)) continue;
      try {
        // Node's own resolver (jest replaces createRequire with its own, which ignores `paths`).
        ModuleClass._resolveFilename(i.path, { id: importer, filename: importer, paths: modulePaths(importer) });
      } catch {
        out.set(i.path, { name: packageName(i.path), importer });
      }
    }
  }
  return [...out.values()];
}

type InternalModule = NodeModule & {
  _compile(code: string, filename: string): void;
  paths: string[];
  require(id: string): unknown;
};
const ModuleClass = NodeModule as unknown as {
  new (id: string, parent?: NodeModule): InternalModule;
  _nodeModulePaths(dir: string): string[];
  _resolveFilename(request: string, parent: { id: string; filename: string; paths: string[] }): string;
};

/** Where the packages of `file` are looked up: its own node_modules hierarchy, then the engine's. */
function modulePaths(file: string): string[] {
  return [...ModuleClass._nodeModulePaths(dirname(file)), ...fallbackPaths()];
}

/**
 * Runs the compiled code as the module `file`, its packages resolved from its directory. Under jest
 * (a handler test loading its handler by path) jest's own require loads it instead, with the test's
 * transform, mocks and globals, as an `import` in the test would.
 */
function evaluate(file: string, code: string): unknown {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (process.env.JEST_WORKER_ID) return require(file) as unknown;
  // Stack traces of handler errors then point at the handler's own lines (the code has an inline map).
  process.setSourceMapsEnabled(true);
  const m = new ModuleClass(file);
  m.filename = file;
  m.paths = modulePaths(file);
  const self = selfModules();
  const plain = m.require.bind(m);
  m.require = (id: string) => (id in self ? self[id]!() : plain(id));
  m._compile(code, file);
  return m.exports;
}

/** `@scope/name/sub` -> `@scope/name`; `name/sub` -> `name`. */
function packageName(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? spec);
}

/** The nearest directory at or above the file with a package.json (where `npm install` belongs). */
function packageDirOf(file: string): string {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return dirname(file);
  }
}

function firstLine(text: string): string {
  return text.split('\n').find((l) => l.trim() !== '') ?? text;
}
