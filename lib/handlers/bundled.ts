/**
 * The user handler modules of a Lambda bundle. In the source tree this registry is empty and
 * handler files named by path are loaded from disk (the local runtime, the CLI, tests); when
 * `sls package` bundles the functions, the project's esbuild plugin
 * (`infra/serverless/esbuild-plugins.js`) replaces this file with one that statically imports
 * every module the stage's streams config names, keyed by `handler.module` as written, and sets
 * `bundled`, so the deployed processor never loads code at run time.
 */
export const BUNDLED_HANDLER_MODULES: { bundled: boolean; modules: Record<string, unknown> } = { bundled: false, modules: {} };
