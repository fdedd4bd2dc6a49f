/**
 * Moving a stream's ledger from layout 1 (a `P#` item per partition holding all its state, an `R#`
 * item per range, the `open-ranges` index) to layout 2 (group items, static `P#` items, `H#`
 * history; docs/ledger-schema.md), in place, while the stream is stopped:
 *
 * 1. take the stream's planner lease under a migration token (the layout-2 take refuses a layout-1
 *    ledger), refusing while a processor holds a live range lease;
 * 2. per group, one transaction: each partition's entry set in its group item (its open ranges and
 *    its newest finished range) and its `P#` item replaced by its static part, so each partition
 *    moves whole or not at all;
 * 3. the other finished ranges put into the history, then every `R#` item deleted;
 * 4. the layout recorded on META and the lease released.
 *
 * Run again after an interruption, it finishes: partitions already moved (their `P#` names a group)
 * are left as they are, the history of their ranges is put again (readers take each range once).
 */
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { PreconditionError } from '../errors';
import { ofIncarnation } from '../ports/ledger-rules/incarnation';
import type { PartitionState, RangeState } from '../ports/ledger-state';
import { actionOf, ItemWriteBuilder } from './expression.dynamodb';
import { entryName, entryToStored, groupKey, LEDGER_LAYOUT } from './groups.dynamodb';
import { translatingClient } from './errors.dynamodb';
import { historyItems } from './history.dynamodb';
import { codec, type Item } from './items.dynamodb';
import { keys, prefixQuery } from './keys.dynamodb';
import { createStreamLocations } from './locations.dynamodb';
import { partitionStaticItem } from './steps.dynamodb';
import type { TxAction } from './transactions.dynamodb';

/** What a migration did. */
export type MigrationReport = {
  stream: string;
  /** `migrated`: moved now; `current`: already layout 2; `empty`: the stream has no ledger. */
  outcome: 'migrated' | 'current' | 'empty';
  partitions: number;
  /** Ranges carried into the partitions' live state (open ones, and each partition's newest finished one). */
  liveRanges: number;
  /** Finished ranges put into the history. */
  archivedRanges: number;
};

type Old = { meta?: Item; partitions: Item[]; ranges: RangeState[] };

/** The ledger migration of a table, on the caller's client. */
export function createDynamoLedgerMigration(opts: { client: DynamoDBClient; tableName: string }) {
  // Failures as StoreErrors naming the table; a lost condition stays the SDK's (takeMigrationLease reads it).
  const from = DynamoDBDocumentClient.from(opts.client, { marshallOptions: { removeUndefinedValues: true } });
  const doc = translatingClient(from, opts.tableName, 'migrate the ledger layout');
  return { migrate: (stream: string, nowMs: number) => migrateLedgerLayout(doc, opts.tableName, stream, nowMs) };
}

export type LedgerMigration = ReturnType<typeof createDynamoLedgerMigration>;

/** Migrates one stream's ledger in `table` (see the module comment). */
async function migrateLedgerLayout(doc: DynamoDBDocumentClient, table: string, stream: string, nowMs: number): Promise<MigrationReport> {
  const old = await readOld(doc, table, stream);
  const report: MigrationReport = { stream, outcome: 'migrated', partitions: old.partitions.length, liveRanges: 0, archivedRanges: 0 };
  if (!old.meta) return { ...report, outcome: 'empty' };
  if (old.meta.layout === LEDGER_LAYOUT) return { ...report, outcome: 'current' };
  const lease = await takeMigrationLease(doc, table, stream, old, nowMs);
  try {
    const { live, archive } = splitRanges(old);
    report.liveRanges = live.length;
    report.archivedRanges = archive.length;
    await moveEntries(doc, table, stream, old.partitions, live);
    for (const item of historyItems(stream, archive, nowMs, lease.epoch)) await doc.send(new PutCommand({ TableName: table, Item: item }));
    await deleteItems(
      doc,
      table,
      old.ranges.map((r) => keys.range(stream, r)),
    );
    await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: keys.meta(stream),
        UpdateExpression: 'SET layout = :layout, leaseExpiresAtMs = :zero',
        ConditionExpression: 'ownerToken = :me AND epoch = :epoch',
        ExpressionAttributeValues: { ':layout': LEDGER_LAYOUT, ':zero': 0, ':me': lease.ownerToken, ':epoch': lease.epoch },
      }),
    );
  } catch (err) {
    // Leave the lease to a rerun only as long as it lasts: released now, the rerun takes it again.
    await releaseLease(doc, table, stream, lease).catch(() => undefined);
    throw err;
  }
  return report;
}

async function readOld(doc: DynamoDBDocumentClient, table: string, stream: string): Promise<Old> {
  const all = async (prefix: string): Promise<Item[]> => {
    const out: Item[] = [];
    let start: Item | undefined;
    do {
      const page = await doc.send(new QueryCommand({ ...prefixQuery(table, stream, prefix), ExclusiveStartKey: start }));
      out.push(...((page.Items ?? []) as Item[]));
      start = page.LastEvaluatedKey as Item | undefined;
    } while (start);
    return out;
  };
  const [meta, partitions, ranges] = await Promise.all([all('META'), all('P#'), all('R#')]);
  return { meta: meta[0], partitions, ranges: ranges.map(codec.rangeFromItem) };
}

const MIGRATION_LEASE_MS = 10 * 60_000;

/** Takes the planner lease of a layout-1 stream (free or expired), refusing while a processor holds a live range lease. */
async function takeMigrationLease(doc: DynamoDBDocumentClient, table: string, stream: string, old: Old, nowMs: number) {
  const held = old.ranges.find((r) => r.status === 'leased' && (r.leaseExpiresAtMs ?? 0) >= nowMs);
  if (held) {
    throw new PreconditionError(
      `stream ${stream}: range ${held.topic}/${held.partition} [${held.from}, ${held.until}) is leased until ` +
        `${new Date(held.leaseExpiresAtMs ?? 0).toISOString()}; stop the planner, let its processors finish, then migrate`,
    );
  }
  const ownerToken = `migration:${nowMs}`;
  try {
    const res = await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: keys.meta(stream),
        UpdateExpression: 'SET epoch = if_not_exists(epoch, :zero) + :one, ownerToken = :me, leaseExpiresAtMs = :until',
        ConditionExpression: 'attribute_not_exists(layout) AND (leaseExpiresAtMs < :now OR attribute_not_exists(leaseExpiresAtMs))',
        ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':me': ownerToken, ':until': nowMs + MIGRATION_LEASE_MS, ':now': nowMs },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return { ownerToken, epoch: Number(res.Attributes?.epoch) };
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
    throw new PreconditionError(
      `stream ${stream}: a planner holds its lease (or it was migrated meanwhile); stop the planner and run again`,
    );
  }
}

async function releaseLease(doc: DynamoDBDocumentClient, table: string, stream: string, lease: { ownerToken: string; epoch: number }) {
  await doc.send(
    new UpdateCommand({
      TableName: table,
      Key: keys.meta(stream),
      UpdateExpression: 'SET leaseExpiresAtMs = :zero',
      ConditionExpression: 'ownerToken = :me AND epoch = :epoch',
      ExpressionAttributeValues: { ':zero': 0, ':me': lease.ownerToken, ':epoch': lease.epoch },
    }),
  );
}

/** Each partition's live ranges (open, and its newest finished one), and the finished ranges the history takes. */
function splitRanges(old: Old): { live: RangeState[]; archive: RangeState[] } {
  const newest = new Map<string, RangeState>();
  const owner = (r: RangeState) => `${r.topic}/${r.partition}/${r.incarnation ?? 0}`;
  for (const r of old.ranges) {
    if (r.status !== 'done') continue;
    const seen = newest.get(owner(r));
    if (!seen || r.from > seen.from) newest.set(owner(r), r);
  }
  const keep = new Set(newest.values());
  return {
    live: old.ranges.filter((r) => r.status !== 'done' || keep.has(r)),
    archive: old.ranges.filter((r) => r.status === 'done' && !keep.has(r)),
  };
}

/**
 * Moves the partitions not moved yet, a group per transaction: their entries set in the group item
 * (each only if absent), their `P#` items replaced by their static part naming the group.
 */
async function moveEntries(
  doc: DynamoDBDocumentClient,
  table: string,
  stream: string,
  partitions: Item[],
  live: RangeState[],
): Promise<void> {
  const locations = createStreamLocations();
  for (const p of partitions) if (typeof p.g === 'number') locations.record(p.topic as string, p.partition as number, p.g);
  const pending = partitions.filter((p) => typeof p.g !== 'number').map((p) => codec.partitionFromItem(p) as PartitionState);
  locations.assign(pending);
  const byGroup = new Map<number, PartitionState[]>();
  for (const p of pending) {
    const g = locations.groupOf(p.topic, p.partition) as number;
    byGroup.set(g, [...(byGroup.get(g) ?? []), p]);
  }
  for (const [g, members] of byGroup) {
    const group = new ItemWriteBuilder(groupKey(stream, g));
    const actions: TxAction[] = [];
    for (const p of members) {
      const e = entryName(p.topic, p.partition);
      const mine = live.filter((r) => ofIncarnation(p, r));
      group.require(`attribute_not_exists(${group.path([e])})`).set([e], entryToStored(p, mine));
      actions.push({ Put: { TableName: table, Item: partitionStaticItem(stream, p, g) } });
    }
    await doc.send(new TransactWriteCommand({ TransactItems: [actionOf(table, group) as TxAction, ...actions] }));
  }
}

/** Deletes items by key, 25 to a request (BatchWriteItem), unprocessed ones sent again. */
async function deleteItems(doc: DynamoDBDocumentClient, table: string, keyList: Array<{ pk: string; sk: string }>): Promise<void> {
  for (let i = 0; i < keyList.length; i += 25) {
    let requests: Array<{ DeleteRequest: { Key: Record<string, unknown> } }> = keyList
      .slice(i, i + 25)
      .map((Key) => ({ DeleteRequest: { Key } }));
    while (requests.length) {
      const res = await doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
      requests = (res.UnprocessedItems?.[table] ?? []) as typeof requests;
    }
  }
}
