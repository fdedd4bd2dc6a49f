/**
 * The handler registry. A stream's `handler.module` names an entry here; the processor bundle
 * imports this file, so every handler is bundled statically (no dynamic imports in Lambda).
 * Add your own handlers to `HANDLERS`.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { StreamConfig } from '../config/schema';
import { ValidationError } from '../errors';
import type { RecordsHandler } from '../processor/handler-api';
import { createAuditLog } from './audit-log';
import { noop } from './noop';
import { runningTotals } from './running-totals';

export type HandlerFactory = (deps: { dynamo: DynamoDBClient; env: NodeJS.ProcessEnv }) => RecordsHandler;

export const HANDLERS: Record<string, HandlerFactory> = {
  'running-totals': () => runningTotals,
  noop: () => noop,
  'audit-log': ({ dynamo, env }) => {
    const tableName = env.AUDIT_LOG_TABLE;
    if (!tableName) throw new ValidationError('handler "audit-log" needs the AUDIT_LOG_TABLE environment variable');
    return createAuditLog({ tableName, client: dynamo });
  },
};

/** The handler for a stream, checked against the mode the stream declares. */
export function resolveHandler(
  stream: StreamConfig,
  deps: { dynamo: DynamoDBClient; env: NodeJS.ProcessEnv },
  registry = HANDLERS,
): RecordsHandler {
  const spec = stream.handler;
  if (!spec)
    throw new ValidationError(`stream ${stream.id} has no handler: set handler.module to one of ${Object.keys(registry).join(', ')}`);
  const factory = registry[spec.module];
  if (!factory) {
    throw new ValidationError(
      `stream ${stream.id}: unknown handler.module "${spec.module}" (registered: ${Object.keys(registry).join(', ')})`,
    );
  }
  const handler = factory(deps);
  if (handler.mode !== spec.mode) {
    throw new ValidationError(`stream ${stream.id}: handler "${spec.module}" is ${handler.mode}, but handler.mode says ${spec.mode}`);
  }
  return handler;
}
