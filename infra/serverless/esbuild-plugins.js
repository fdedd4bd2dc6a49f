'use strict';
/* global __dirname, process */
/**
 * esbuild plugins for serverless-esbuild (`custom.esbuild.plugins` in serverless.yml), called with
 * the serverless instance once variables are resolved.
 *
 * `user-handlers` bundles the user handler modules the stage's streams config names by path
 * (`custom.handlerModules`, resolved by infra/cfn/stack.js relative to the config file): it replaces
 * lib/handlers/bundled.ts, whose source is an empty registry, with a module that statically imports
 * each file, keyed by `handler.module` as written. The functions then take handlers from the bundle
 * and never load code at run time: lib/handlers/load-file.ts, which compiles handler files from disk
 * for local runs, is replaced by a stub, so neither it nor esbuild is in a bundle. A handler's imports
 * of `kafka-lambda-direct` resolve to the engine's own sources here, so the bundle holds one copy of
 * the engine whether the handler's project installed it or not. A file that cannot be resolved or
 * built fails the build with a message naming the stream and the file.
 *
 * `native-crc32c` packages the hardware CRC-32C that checks Kafka's record batches
 * (lib/kafka/protocol/crc32c-native.ts): @node-rs/crc32 picks a platform binding (a `.node` file) at
 * run time, which a bundle cannot inline. The plugin copies the binding for the functions'
 * architecture beside each bundle that checks CRCs, as `<bundle>.crc32c.<platform>.node` (so
 * serverless-esbuild zips it with that function only), and gives the loader that file's name
 * through esbuild's `define`. npm installs only the binding of the machine it runs on: packaging for
 * the other architecture finds none, says so in one line, and the bundle checks with WebAssembly.
 *
 * `task-root-source-maps` makes the source maps name files inside the function's task root: esbuild
 * writes each source relative to the bundle's build folder (`../../../lib/x.ts` from
 * `.esbuild/.build/functions/`), which, from the bundle's place in the zip, points above the task
 * root (`/lib/x.ts` on Lambda). Sources become relative to the engine's root (`lib/x.ts`; a file
 * outside it keeps its absolute path, without the leading `/`), under a `sourceRoot` that leads from
 * the bundle to the task root: stack frames read `/var/task/lib/x.ts`.
 */
const { copyFileSync, existsSync, readFileSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const REGISTRY = path.join(ROOT, 'lib', 'handlers', 'bundled.ts');
const FILE_LOADER = path.join(ROOT, 'lib', 'handlers', 'load-file.ts');
const NATIVE_CRC_LOADER = path.join(ROOT, 'lib', 'kafka', 'protocol', 'crc32c-native.ts');
/** Lambda's architectures and the @node-rs/crc32 platform of each (Lambda's runtimes use glibc). */
const CRC_PLATFORMS = { arm64: 'linux-arm64-gnu', x86_64: 'linux-x64-gnu' };
const ENGINE_ENTRIES = { 'kafka-lambda-direct': 'lib/index.ts', 'kafka-lambda-direct/testing': 'lib/testing/index.ts' };

/** The registry module's source: one static import per user module. */
function registrySource(modules) {
  const imports = modules.map((m, i) => `import * as handlerModule${i} from ${JSON.stringify(m.file)};`);
  const entries = modules.map((m, i) => `  ${JSON.stringify(m.module)}: handlerModule${i},`);
  return `${imports.join('\n')}\nexport const BUNDLED_HANDLER_MODULES = { bundled: true, modules: {\n${entries.join('\n')}\n} };\n`;
}

function userHandlers(modules) {
  const byFile = new Map(modules.map((m) => [path.resolve(m.file), m]));
  const name = (m) => `stream ${m.stream}: handler.module ${JSON.stringify(m.module)} (${m.file})`;
  return {
    name: 'user-handlers',
    setup(build) {
      // A handler file outside the repository imports the project's dependencies from here.
      build.initialOptions.nodePaths = [...(build.initialOptions.nodePaths || []), path.join(ROOT, 'node_modules')];
      build.onResolve({ filter: /^kafka-lambda-direct(\/testing)?$/ }, (args) => ({ path: path.join(ROOT, ENGINE_ENTRIES[args.path]) }));
      build.onLoad({ filter: /[\\/]lib[\\/]handlers[\\/]load-file\.ts$/ }, (args) => {
        if (path.resolve(args.path) !== FILE_LOADER) return undefined;
        const contents =
          `export function loadHandlerFile(file: string): never {\n` +
          `  throw new Error('handler files are bundled; this package cannot load ' + file);\n` +
          `}\n`;
        return { contents, loader: 'ts', resolveDir: path.dirname(FILE_LOADER) };
      });
      build.onLoad({ filter: /[\\/]lib[\\/]handlers[\\/]bundled\.ts$/ }, (args) => {
        if (path.resolve(args.path) !== REGISTRY) return undefined;
        const missing = modules.filter((m) => !existsSync(m.file));
        if (missing.length) return { errors: missing.map((m) => ({ text: `${name(m)}: no such file, cannot bundle it` })) };
        return { contents: registrySource(modules), loader: 'ts', resolveDir: path.dirname(REGISTRY) };
      });
      // esbuild names the file of a syntax or resolution error; say which stream's handler it is.
      build.onEnd((result) => {
        for (const error of result.errors) {
          const file = error.location && path.resolve(ROOT, error.location.file);
          const m = file && byFile.get(file);
          if (m) error.text = `${name(m)}: cannot be bundled: ${error.text}`;
        }
      });
    },
  };
}

/** The installed binding of @node-rs/crc32 for `platform`, or why there is none. */
function crcBinding(platform) {
  const name = `@node-rs/crc32-${platform}`;
  let version = '';
  try {
    version = JSON.parse(readFileSync(require.resolve('@node-rs/crc32/package.json', { paths: [ROOT] }), 'utf8')).version;
    const file = path.join(path.dirname(require.resolve(`${name}/package.json`, { paths: [ROOT] })), `crc32.${platform}.node`);
    if (existsSync(file)) return { file };
  } catch {
    // Not installed: npm skips the bindings of other platforms.
  }
  const add = `npm install --no-save --force ${name}${version ? `@${version}` : ''}`;
  return { why: `${name} is not installed on this ${process.platform}-${process.arch} machine (\`${add}\` adds it)` };
}

/** The `native-crc32c` plugin for Lambda's `architecture` (also used by bench/processor.ts). */
function nativeCrc32c(architecture, warn) {
  const platform = CRC_PLATFORMS[architecture] || CRC_PLATFORMS.x86_64;
  const binding = crcBinding(platform);
  let warned = false;
  return {
    name: 'native-crc32c',
    setup(build) {
      const entry = [].concat(build.initialOptions.entryPoints || [])[0];
      const bundle = entry ? path.basename(String(entry), path.extname(String(entry))) : 'bundle';
      const fileName = `${bundle}.crc32c.${platform}.node`;
      let loaded = false;
      // lib/kafka/protocol/crc32c-native.ts reads these: the file beside the bundle, or why there is none.
      build.initialOptions.define = {
        ...build.initialOptions.define,
        KAFKA_DIRECT_CRC32C_BINDING: JSON.stringify(binding.file ? fileName : ''),
        KAFKA_DIRECT_CRC32C_MISSING: JSON.stringify(binding.why || ''),
      };
      build.onLoad({ filter: /[\\/]lib[\\/]kafka[\\/]protocol[\\/]crc32c-native\.ts$/ }, (args) => {
        if (path.resolve(args.path) !== NATIVE_CRC_LOADER) return undefined;
        loaded = true;
        if (binding.why && !warned) {
          warned = true;
          warn(
            `CRC-32C: the ${architecture} bundles check record batches with WebAssembly, not the CPU's CRC instructions: ${binding.why}`,
          );
        }
        return undefined; // loaded as it is; only the bundles that hold it get the binding
      });
      build.onEnd((result) => {
        const { outdir, outfile } = build.initialOptions;
        const dir = outdir || (outfile && path.dirname(outfile));
        if (loaded && binding.file && result.errors.length === 0 && dir) copyFileSync(binding.file, path.join(dir, fileName));
      });
    },
  };
}

/** Rewrites the source map of each bundle the build wrote (see the file's comment). */
function taskRootSourceMaps() {
  return {
    name: 'task-root-source-maps',
    setup(build) {
      build.onEnd((result) => {
        const { outdir, outfile, entryPoints } = build.initialOptions;
        const dir = outdir || (outfile && path.dirname(outfile));
        if (result.errors.length > 0 || !dir) return;
        for (const entry of [].concat(entryPoints || []).map(String)) {
          // The bundle's place in the zip is the entry's place in the service: functions/x.ts -> functions/x.js.
          const inZip = path.relative(ROOT, path.resolve(ROOT, entry)).replace(/\.[cm]?[jt]s$/, '.js');
          const mapFile = outfile ? `${outfile}.map` : path.join(dir, `${inZip}.map`);
          const alt = path.join(dir, `${path.basename(inZip)}.map`);
          const file = existsSync(mapFile) ? mapFile : alt;
          if (existsSync(file)) rewriteSourceMap(file, path.dirname(inZip));
          const bundle = file.replace(/\.map$/, '');
          if (existsSync(bundle)) splitEntry(bundle);
        }
      });
    },
  };
}

/**
 * Lambda's Node.js runtime loads a handler with `import()`, and Node scans a CommonJS file it imports
 * for the names it exports: over a whole bundle that scan costs about 80 ms of every cold start. The
 * bundle moves to `<name>.bundle.js` and `<name>.js` becomes a two-line entry with no names to scan
 * (the runtime takes the handler from its default export, which is the bundle's exports).
 */
function splitEntry(bundleFile) {
  const { renameSync } = require('node:fs');
  if (existsSync(bundleFile.replace(/\.js$/, '.bundle.js'))) return;
  const base = path.basename(bundleFile, '.js');
  const moved = path.join(path.dirname(bundleFile), `${base}.bundle.js`);
  const code = readFileSync(bundleFile, 'utf8').replace(
    new RegExp(`//# sourceMappingURL=${base}\\.js\\.map\\s*$`),
    `//# sourceMappingURL=${base}.bundle.js.map\n`,
  );
  writeFileSync(moved, code);
  if (existsSync(`${bundleFile}.map`)) renameSync(`${bundleFile}.map`, `${moved}.map`);
  writeFileSync(
    bundleFile,
    [
      "'use strict';",
      `// The function's code is ${base}.bundle.js (see infra/serverless/esbuild-plugins.js).`,
      `const bundle = require('./${base}.bundle.js');`,
      'module.exports = bundle;',
      '',
    ].join('\n'),
  );
}

function rewriteSourceMap(mapFile, dirInZip) {
  const map = JSON.parse(readFileSync(mapFile, 'utf8'));
  if (map.x_taskRoot) return;
  const from = path.dirname(mapFile);
  map.sources = map.sources.map((s) => {
    const abs = path.resolve(from, map.sourceRoot || '', s);
    const rel = path.relative(ROOT, abs);
    return (rel.startsWith('..') || path.isAbsolute(rel) ? path.relative(path.parse(abs).root, abs) : rel).split(path.sep).join('/');
  });
  const depth = dirInZip === '.' || dirInZip === '' ? 0 : dirInZip.split(path.sep).length;
  map.sourceRoot = '../'.repeat(depth);
  map.x_taskRoot = true;
  writeFileSync(mapFile, JSON.stringify(map));
}

module.exports = (serverless) => {
  const custom = serverless.service.custom || {};
  const modules = Array.isArray(custom.handlerModules) ? custom.handlerModules : [];
  const architecture = serverless.service.provider.architecture || 'x86_64';
  const warn = (line) => (serverless.cli && serverless.cli.log ? serverless.cli.log(line) : process.stderr.write(`${line}\n`));
  return [userHandlers(modules), nativeCrc32c(architecture, warn), taskRootSourceMaps()];
};
module.exports.nativeCrc32c = nativeCrc32c;
