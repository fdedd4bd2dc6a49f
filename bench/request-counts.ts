/**
 * DynamoDB requests counted by who sent them, for the cost model of a resident planner loop: one
 * process runs the planner and the processors on one client, so each request is attributed to the
 * role its caller runs under (an AsyncLocalStorage the bench enters around each handler call). Per
 * role: requests by operation, item writes (with their write units, settled against the stored
 * items like bench/write-units.ts does) and read units (from the items each read returned: 4 KB per
 * unit, half a unit when eventually consistent, as DynamoDB bills reads).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createWriteTally, itemSizeBytes, READ_UNIT_BYTES, writesOfRequest, type WriteTally } from './write-units';

export { READ_UNIT_BYTES };

export type RoleRequests = {
  /** Requests by operation (`GetItem`, `UpdateItem`, `Query`, ...), once per command (SDK retries not counted). */
  byOperation: Record<string, number>;
  /** Time from sending to the response, by operation: the sum and the longest (the emulator's queue shows here). */
  msByOperation: Record<string, { total: number; max: number }>;
  readUnits: number;
  writes: WriteTally & { add: ReturnType<typeof createWriteTally>['add'] };
};

/** Read units of one read that returned `items` (a Query's or a BatchGet's are summed, then rounded up per 4 KB). */
export function readUnitsFor(items: ReadonlyArray<Record<string, AttributeValue>>, consistent: boolean): number {
  const bytes = items.reduce((s, i) => s + itemSizeBytes(i), 0);
  const units = Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES));
  return consistent ? units : units / 2;
}

/** The items a read's output carries (GetItem's one, a Query's or a Scan's page, a BatchGetItem's responses). */
function itemsOf(output: Record<string, unknown> | undefined): Array<Record<string, AttributeValue>> {
  if (!output) return [];
  if (output.Item) return [output.Item as Record<string, AttributeValue>];
  if (Array.isArray(output.Items)) return output.Items as Array<Record<string, AttributeValue>>;
  const responses = output.Responses as Record<string, Array<Record<string, AttributeValue>>> | undefined;
  return responses && !Array.isArray(responses) ? Object.values(responses).flat() : [];
}

const READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem']);
const UTF8 = new TextDecoder();

export type RequestCounter = {
  /** Runs `fn` with every DynamoDB request it makes (and the calls it starts) counted under `role`. */
  as<T>(role: string, fn: () => T): T;
  /** The role the caller runs under, if any. */
  role(): string | undefined;
  /** What each role sent so far; requests made outside any role count under `other`. */
  roles(): Map<string, RoleRequests>;
};

/** Adds the counting middleware to `client`. */
export function countRequestsByRole(client: DynamoDBClient): RequestCounter {
  const current = new AsyncLocalStorage<string>();
  const roles = new Map<string, RoleRequests>();
  const roleOf = (name: string): RoleRequests => {
    let r = roles.get(name);
    if (!r) roles.set(name, (r = { byOperation: {}, msByOperation: {}, readUnits: 0, writes: createWriteTally() }));
    return r;
  };
  client.middlewareStack.add(
    (next) => async (args) => {
      const req = args.request as { headers?: Record<string, string>; body?: unknown };
      const operation = req.headers?.['x-amz-target']?.split('.')[1] ?? 'unknown';
      const text = typeof req.body === 'string' ? req.body : req.body instanceof Uint8Array ? UTF8.decode(req.body) : '{}';
      const body = JSON.parse(text || '{}') as Record<string, unknown>;
      const r = roleOf(current.getStore() ?? 'other');
      r.byOperation[operation] = (r.byOperation[operation] ?? 0) + 1;
      r.writes.add(writesOfRequest(operation, body));
      const t0 = Date.now();
      const out = await next(args);
      const ms = (r.msByOperation[operation] ??= { total: 0, max: 0 });
      ms.total += Date.now() - t0;
      ms.max = Math.max(ms.max, Date.now() - t0);
      if (READS.has(operation))
        r.readUnits += readUnitsFor(itemsOf(out.output as unknown as Record<string, unknown>), body.ConsistentRead === true);
      return out;
    },
    // After serialization (the body as sent), before the retry middleware: once per command.
    { step: 'build', name: 'benchRoleRequestCounter' },
  );
  return { as: (role, fn) => current.run(role, fn), role: () => current.getStore(), roles: () => roles };
}
