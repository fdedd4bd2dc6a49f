/**
 * User handler modules: a stream's `handler.module` that is a path (`./handlers/click-counts.ts`)
 * names a file relative to the config file, whose default export (or export `handler`) is the
 * handler. Checked when loaded, with messages naming the stream and the file.
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ValidationError } from '../errors';
import { foldHandler, type ItemFold, type RecordsHandler } from '../processor/handler-api';
import { BUNDLED_HANDLER_MODULES } from './bundled';
import { loadHandlerFile } from './load-file';

const HANDLER_MODES = ['dynamodb-exactly-once', 'at-least-once'] as const;

/** Whether `handler.module` names a file (relative or absolute path) rather than a built-in handler. */
export function isHandlerPath(module: string): boolean {
  return module.startsWith('./') || module.startsWith('../') || isAbsolute(module) || /\.[cm]?[jt]s$/.test(module);
}

/** The file a handler path names: relative paths are taken from the config file's directory. */
export function handlerModuleFile(module: string, configDir: string | undefined): string {
  return resolve(configDir ?? process.cwd(), module);
}

/** How a stream's handler module is named in messages: the module as written and the file it resolves to. */
function describe(streamId: string, module: string, file: string): string {
  return `stream ${streamId}: handler.module ${JSON.stringify(module)} (${file})`;
}

/**
 * The handler a user module exports, checked: a module bundled into this Lambda package is taken
 * from the bundle (never loaded at run time); otherwise the file is loaded from disk.
 */
export function loadHandlerModule(
  streamId: string,
  module: string,
  configDir: string | undefined,
  bundle = BUNDLED_HANDLER_MODULES,
): RecordsHandler {
  const { exports, where } = loadModuleExports(streamId, module, configDir, bundle);
  return handlerFromExports(exports, where);
}

/**
 * A user module's exports, and how messages name it: from the bundle when this Lambda package has
 * one (never loaded at run time), else loaded from disk. Throws a ValidationError naming the stream
 * and the file when it is missing or cannot be built or loaded.
 */
export function loadModuleExports(
  streamId: string,
  module: string,
  configDir: string | undefined,
  bundle = BUNDLED_HANDLER_MODULES,
): { exports: unknown; where: string } {
  const file = handlerModuleFile(module, configDir);
  const where = describe(streamId, module, file);
  if (bundle.bundled) {
    if (!(module in bundle.modules))
      throw new ValidationError(`${where}: not in this package (package the functions with this streams config)`);
    return { exports: bundle.modules[module], where };
  }
  if (!existsSync(file)) throw new ValidationError(`${where}: no such file`);
  if (statSync(file).isDirectory()) throw new ValidationError(`${where}: is a directory, not a file`);
  // Synchronous, as the built-in handlers are: handler resolution stays synchronous everywhere.
  const loaded = loadHandlerFile(file);
  if ('problem' in loaded) {
    const { kind, message, cause } = loaded.problem;
    const what = kind === 'build' ? `cannot be built (${message})` : kind === 'evaluation' ? `cannot be loaded (${message})` : message;
    throw new ValidationError(`${where}: ${what}`, { cause });
  }
  return { exports: loaded.exports, where };
}

/** The handler among a module's exports (default export, else `handler`), checked for shape. */
export function handlerFromExports(exports: unknown, where: string): RecordsHandler {
  const ns = isObject(exports) ? exports : {};
  const candidate = ns.default ?? ns.handler;
  if (candidate === undefined) {
    throw new ValidationError(`${where}: no handler export (export default { mode, handle }, or export const handler = { mode, handle })`);
  }
  if (!isObject(candidate)) throw new ValidationError(`${where}: the exported handler is ${typeof candidate}, not an object`);
  const mode = candidate.mode;
  if (typeof mode !== 'string' || !(HANDLER_MODES as readonly string[]).includes(mode)) {
    throw new ValidationError(`${where}: the handler's mode is ${JSON.stringify(mode)}; it must be one of ${HANDLER_MODES.join(', ')}`);
  }
  // `fold` is the richer exactly-once form beside `handle`; either makes a handler.
  if (typeof candidate.handle !== 'function' && !isObject(candidate.fold)) {
    throw new ValidationError(`${where}: the handler has neither a handle(records, ctx) function nor a fold`);
  }
  if (candidate.fold !== undefined) return foldingHandler(candidate, where);
  return candidate as RecordsHandler;
}

/** A handler with a `fold`: checked, and given the `handle` derived from it when it has none. */
function foldingHandler(candidate: Record<string, unknown>, where: string): RecordsHandler {
  const fold = candidate.fold;
  if (candidate.mode !== 'dynamodb-exactly-once')
    throw new ValidationError(`${where}: a fold handler's mode must be dynamodb-exactly-once`);
  const missing = ['map', 'combine', 'write'].filter((f) => !isObject(fold) || typeof fold[f] !== 'function');
  if (missing.length > 0) throw new ValidationError(`${where}: the handler's fold has no ${missing.join(', ')} function`);
  if (typeof candidate.handle === 'function') return candidate as RecordsHandler;
  return foldHandler(fold as ItemFold<unknown>);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return (typeof v === 'object' || typeof v === 'function') && v !== null;
}
