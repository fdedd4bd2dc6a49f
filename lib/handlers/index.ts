/**
 * The handler registry. A stream's `handler.module` names a built-in handler here, or the path of
 * a user module relative to the config file (`./handlers/click-counts.ts`, see ./modules.ts). The
 * processor bundle imports this file, and `sls package` bundles the user modules the stage's
 * streams config names, so every handler is bundled statically (no dynamic imports in Lambda).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { StreamConfig } from '../config/schema';
import { ValidationError } from '../errors';
import type { RecordsHandler } from '../processor/handler-api';
import { createAuditLog } from './audit-log';
import { handlerModuleFile, isHandlerPath, loadHandlerModule, loadModuleExports } from './modules';
import { triggerFunctionFromExports, triggerHandlerFor } from './trigger-function';
import { noop } from './noop';
import { runningTotals } from './running-totals';

export { isHandlerPath, loadHandlerModule } from './modules';

export type HandlerDeps = {
  dynamo: DynamoDBClient;
  env: NodeJS.ProcessEnv;
  /** Directory of the config file, which handler paths are relative to (default: the working directory). */
  configDir?: string;
};

export type HandlerFactory = (deps: HandlerDeps) => RecordsHandler;

export const HANDLERS: Record<string, HandlerFactory> = {
  'running-totals': () => runningTotals,
  'audit-log': ({ dynamo, env }) => {
    const tableName = env.AUDIT_LOG_TABLE;
    if (!tableName) throw new ValidationError('handler "audit-log" needs the AUDIT_LOG_TABLE environment variable');
    return createAuditLog({ tableName, client: dynamo });
  },
  noop: () => noop,
};

/** The handler for a stream (built-in or user module), checked against the mode the stream declares. */
export function resolveHandler(stream: StreamConfig, deps: HandlerDeps, registry = HANDLERS): RecordsHandler {
  const spec = stream.handler;
  if (!spec)
    throw new ValidationError(
      `stream ${stream.id} has no handler: set handler.module to one of ` +
        `${Object.keys(registry).join(', ')}, or to the path of your handler file`,
    );
  let handler: RecordsHandler;
  let name: string;
  if (spec.triggerFunction) {
    if (!isHandlerPath(spec.module))
      throw new ValidationError(`stream ${stream.id}: handler.triggerFunction needs handler.module to be the path of the function's file`);
    const { exports, where } = loadModuleExports(stream.id, spec.module, deps.configDir);
    return triggerHandlerFor(stream, triggerFunctionFromExports(exports, spec.triggerFunction.export, where), where, deps.env);
  }
  if (isHandlerPath(spec.module)) {
    handler = loadHandlerModule(stream.id, spec.module, deps.configDir);
    name = `module ${JSON.stringify(spec.module)} (${handlerModuleFile(spec.module, deps.configDir)})`;
  } else {
    const factory = registry[spec.module];
    if (!factory) {
      throw new ValidationError(
        `stream ${stream.id}: unknown handler.module "${spec.module}" (registered: ` +
          `${Object.keys(registry).join(', ')}; a handler file is named by a path such as "./handlers/${spec.module}.ts")`,
      );
    }
    handler = factory(deps);
    name = `"${spec.module}"`;
  }
  if (handler.mode !== spec.mode) {
    throw new ValidationError(`stream ${stream.id}: handler ${name} is ${handler.mode}, but handler.mode says ${spec.mode}`);
  }
  return handler;
}
