/**
 * Removing what one run of a project tool (a benchmark, the demo, a chaos scenario) created on the
 * local stack: the topics, DynamoDB tables and consumer groups it recorded, and nothing else, so a
 * user's own resources on a shared stack are never touched. A name that is not there (never created,
 * or removed already) is skipped, so a removal may follow a partial set-up or run twice.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { DeleteTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Admin } from 'kafkajs';
import { MissingResourceError, TimeoutError } from '../errors';
import { translatingClient } from '../ledger/errors.dynamodb';

/** What a run created: each name recorded before (or as) it is created. */
export type CreatedResources = { topics: string[]; tables: string[]; groups: string[] };

/** What a removal deleted (a name that was not there is not listed), how long it took, and what failed. */
export type Removal = CreatedResources & { ms: number; errors: string[] };

/** An empty record, to add names to as they are created. */
export function noResources(): CreatedResources {
  return { topics: [], tables: [], groups: [] };
}

/** Topics per DeleteTopics request: a few hundred names in one request outlast its timeout on a small broker. */
const TOPICS_PER_REQUEST = 100;
/** How long the broker may take over one DeleteTopics request: under kafkajs's 30 s request timeout. */
const DELETE_REQUEST_TIMEOUT_MS = 25_000;
/** Between looks at a deleted table (the SDK's waiter started at 1 s too; the emulator deletes at once). */
const TABLE_POLL_MS = 1000;

/**
 * Deletes the recorded topics, tables and consumer groups that exist and waits until they are gone;
 * a kind that fails does not stop the others (its error is in `errors`).
 */
export async function removeResources(
  created: CreatedResources,
  clients: { admin: Admin; dynamo: DynamoDBClient },
  opts: { timeoutMs?: number } = {},
): Promise<Removal> {
  const t0 = Date.now();
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const errors: string[] = [];
  const settle = async (p: Promise<string[]>): Promise<string[]> =>
    p.catch((err: unknown) => {
      errors.push((err as Error)?.message ?? String(err));
      return [];
    });
  const [topics, tables, groups] = await Promise.all([
    settle(deleteTopics(clients.admin, created.topics, timeoutMs)),
    settle(deleteTables(clients.dynamo, created.tables, timeoutMs)),
    settle(deleteGroups(clients.admin, created.groups)),
  ]);
  return { topics, tables, groups, ms: Date.now() - t0, errors };
}

/** Deletes those of `names` the broker lists, in batches, and waits until it lists none of them. */
async function deleteTopics(admin: Admin, names: readonly string[], timeoutMs: number): Promise<string[]> {
  if (names.length === 0) return [];
  // kafkajs retries a DeleteTopics naming a missing topic until it gives up: ask only for listed ones.
  const listedNow = new Set(await admin.listTopics());
  const existing = [...new Set(names)].filter((t) => listedNow.has(t));
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < existing.length; i += TOPICS_PER_REQUEST) {
    await admin.deleteTopics({ topics: existing.slice(i, i + TOPICS_PER_REQUEST), timeout: DELETE_REQUEST_TIMEOUT_MS });
  }
  for (;;) {
    const listed = new Set(await admin.listTopics());
    const left = existing.filter((t) => listed.has(t));
    if (left.length === 0) return existing;
    if (Date.now() > deadline) throw new TimeoutError(`${left.length} deleted topics still listed after ${timeoutMs} ms (${left[0]}, ...)`);
    await delay(200);
  }
}

/** Deletes those of `names` that exist and waits until DynamoDB no longer describes them. */
async function deleteTables(dynamo: DynamoDBClient, names: readonly string[], timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  const deleted = await Promise.all([...new Set(names)].map((name) => deleteTable(dynamo, name, timeoutMs, deadline)));
  return deleted.filter((n): n is string => n !== undefined);
}

/** Whether `request` found no such table (DynamoDB's answer for one deleted or never there). */
function noTable(request: Promise<unknown>): Promise<boolean> {
  return request.then(
    () => false,
    (err: unknown) => {
      if (err instanceof MissingResourceError) return true;
      throw err;
    },
  );
}

/**
 * Deletes table `name` and polls until DynamoDB no longer describes it (a deletion runs in the
 * background); undefined when it was not there. Polled here rather than by the SDK's waiter: it
 * retries any error until its time is up, then reports none of them.
 */
async function deleteTable(dynamo: DynamoDBClient, name: string, timeoutMs: number, deadline: number): Promise<string | undefined> {
  const client = translatingClient(dynamo, name, 'remove what a tool created');
  if (await noTable(client.send(new DeleteTableCommand({ TableName: name })))) return undefined;
  while (!(await noTable(client.send(new DescribeTableCommand({ TableName: name }))))) {
    if (Date.now() > deadline) throw new TimeoutError(`DynamoDB still describes table ${name} ${timeoutMs} ms after its deletion`);
    await delay(TABLE_POLL_MS);
  }
  return name;
}

/** Deletes those of `names` the broker lists as consumer groups. */
async function deleteGroups(admin: Admin, names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const listedNow = new Set((await admin.listGroups()).groups.map((g) => g.groupId));
  const existing = [...new Set(names)].filter((g) => listedNow.has(g));
  if (existing.length) await admin.deleteGroups(existing);
  return existing;
}

/** `deleted 2 topics (a, b) and 1 table (c) in 0.4 s`, and what could not be deleted. */
export function removalLine(r: Removal): string {
  const what = listed(r);
  const done = what ? `deleted ${what} in ${(r.ms / 1000).toFixed(1)} s` : 'nothing to delete';
  return r.errors.length ? `${done}; could not delete the rest: ${r.errors.join('; ')}` : done;
}

/** `2 topics (a, b) and 1 table (c)`: counts and the first few names of each kind ('' when none). */
export function listed(r: CreatedResources): string {
  const kinds: Array<[string, string[]]> = [
    ['topic', [...new Set(r.topics)]],
    ['table', [...new Set(r.tables)]],
    ['consumer group', [...new Set(r.groups)]],
  ];
  const parts = kinds
    .filter(([, names]) => names.length > 0)
    .map(([kind, names]) => {
      const shown = names.length > 3 ? `${names.slice(0, 2).join(', ')}, ... ${names.at(-1)}` : names.join(', ');
      return `${names.length} ${kind}${names.length === 1 ? '' : 's'} (${shown})`;
    });
  return parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}` : (parts[0] ?? '');
}
