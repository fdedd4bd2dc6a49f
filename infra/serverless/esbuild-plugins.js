'use strict';
/* global __dirname */
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
 */
const { existsSync } = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const REGISTRY = path.join(ROOT, 'lib', 'handlers', 'bundled.ts');
const FILE_LOADER = path.join(ROOT, 'lib', 'handlers', 'load-file.ts');
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

module.exports = (serverless) => {
  const custom = serverless.service.custom || {};
  const modules = Array.isArray(custom.handlerModules) ? custom.handlerModules : [];
  return [userHandlers(modules)];
};
