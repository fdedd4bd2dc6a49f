/**
 * Lets this process `require` middy, as the Lambda bundles and jest (jest.config.js) already can:
 * middy 7 is ESM-only and its package exports have no `require` condition, so Node cannot resolve
 * `@middy/core` from CommonJS, though Node 22 can load that ES module once given its file. Imported
 * first by the entry points that run the Lambda handlers in this process through tsx (the planner
 * loop's kill test, `bench:latency -- --deployed`); nothing else needs it.
 */
import { existsSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { join } from 'node:path';

type Resolve = (request: string, parent: unknown, ...rest: unknown[]) => string;
const mod = Module as unknown as { _resolveFilename: Resolve };
const original = mod._resolveFilename;

mod._resolveFilename = function resolveMiddy(request, parent, ...rest) {
  const name = /^@middy\/([a-z-]+)$/.exec(request)?.[1];
  if (name) {
    const from = (parent as { filename?: string } | undefined)?.filename ?? __filename;
    const dirs = createRequire(from).resolve.paths(request) ?? [];
    const file = dirs.map((d) => join(d, '@middy', name, 'index.js')).find(existsSync);
    if (file) return file;
  }
  return original.call(this, request, parent, ...rest);
};
