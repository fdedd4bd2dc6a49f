/**
 * Reading a stream's partitions and ranges on DynamoDB (layout 2): the `P#` items (one Query page per
 * few thousand partitions), then the group items holding their entries (one Query per key of
 * GROUPS_PER_KEY groups), joined. Every read records where each partition's group is, so writes
 * find it without a look-up; a `P#` item without a group is a ledger of the earlier layout.
 */
import { BatchGetCommand, GetCommand, QueryCommand, type DynamoDBDocumentClient, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { PartitionState, RangeState } from '../ports/ledger-state';
import { groupKey, groupKeyIndexes, groupOfSortKey, groupPk, entryName, partitionOfEntry, rangesOfEntry } from './groups.dynamodb';
import { codec, type Item } from './items.dynamodb';
import { keys, prefixQuery } from './keys.dynamodb';
import { createStreamLocations, LedgerLayoutError, type StreamLocations } from './locations.dynamodb';
import type { TranslatingSend } from './errors.dynamodb';

type Send = TranslatingSend<{ doc: DynamoDBDocumentClient }>;

/** Keys in one BatchGetItem (DynamoDB's limit). */
const KEYS_PER_BATCH_GET = 100;

/** The partition and its ranges as their items hold them. */
export type PartitionRead = { partition: PartitionState; ranges: RangeState[]; group: number };

export function createLedgerReads(table: string, send: Send) {
  const streams = new Map<string, StreamLocations>();
  const locationsOf = (stream: string): StreamLocations => {
    let l = streams.get(stream);
    if (!l) streams.set(stream, (l = createStreamLocations()));
    return l;
  };

  const queryAll = async (what: string, input: QueryCommandInput): Promise<Item[]> => {
    const items: Item[] = [];
    let start: Item | undefined;
    do {
      const page = await send(what, ({ doc }) => doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start })));
      items.push(...((page.Items ?? []) as Item[]));
      start = page.LastEvaluatedKey as Item | undefined;
    } while (start);
    return items;
  };

  /** A `P#` item's group, recorded; a ledger of the earlier layout has none. */
  const groupOfStatic = (stream: string, item: Item): number => {
    if (typeof item.g !== 'number') throw new LedgerLayoutError(stream);
    locationsOf(stream).record(item.topic as string, item.partition as number, item.g);
    return item.g;
  };

  /** The partitions of statics `items` joined with their entries in `groups` (ordinal -> item). */
  const join = (stream: string, statics: Item[], groups: Map<number, Item>): PartitionRead[] =>
    statics.flatMap((item) => {
      const group = groupOfStatic(stream, item);
      const staticState = codec.partitionFromItem(item) as Partial<PartitionState> & { g?: number };
      delete staticState.g;
      const entry = groups.get(group)?.[entryName(item.topic as string, item.partition as number)] as Item | undefined;
      if (!entry) return [];
      const partition = { ...partitionOfEntry(staticState, entry), shard: String(group) };
      return [{ partition, ranges: rangesOfEntry(entry, partition, String(group)), group }];
    });

  return {
    locationsOf,
    queryAll,

    /** Every partition of the stream with its live ranges (strongly consistent). */
    async readAll(stream: string): Promise<PartitionRead[]> {
      const statics = await queryAll(`read partitions of ${stream}`, prefixQuery(table, stream, 'P#'));
      if (!statics.length) return [];
      const last = Math.max(...statics.map((s) => groupOfStatic(stream, s)));
      const pages = await Promise.all(
        groupKeyIndexes(last).map((k) =>
          queryAll(`read groups of ${stream}`, {
            TableName: table,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :g)',
            ExpressionAttributeValues: { ':pk': groupPk(stream, k), ':g': 'G#' },
            ConsistentRead: true,
          }),
        ),
      );
      const groups = new Map(pages.flat().map((g) => [groupOfSortKey(g.sk as string), g]));
      return join(stream, statics, groups);
    },

    /**
     * The partitions `refs` with their ranges (strongly consistent), reading the `P#` items of those
     * whose group is not known yet first; partitions the ledger does not have are left out.
     */
    async readSome(stream: string, refs: ReadonlyArray<{ topic: string; partition: number; shard?: string }>): Promise<PartitionRead[]> {
      const l = locationsOf(stream);
      for (const r of refs)
        if (r.shard !== undefined && l.groupOf(r.topic, r.partition) === undefined) l.record(r.topic, r.partition, Number(r.shard));
      const statics = await batchGet(
        stream,
        refs.map((r) => keys.partition(stream, r.topic, r.partition)),
      );
      const groupIds = [...new Set(statics.map((s) => groupOfStatic(stream, s)))];
      const groups = await batchGet(
        stream,
        groupIds.map((g) => groupKey(stream, g)),
      );
      return join(stream, statics, new Map(groups.map((g) => [groupOfSortKey(g.sk as string), g])));
    },

    /** The group item of a partition, or undefined (partition unknown, group item missing). */
    async readGroup(stream: string, group: number): Promise<Item | undefined> {
      const res = await send(`read group ${group} of ${stream}`, ({ doc }) =>
        doc.send(new GetCommand({ TableName: table, Key: groupKey(stream, group), ConsistentRead: true })),
      );
      return res.Item as Item | undefined;
    },

    /** Where the partitions `refs` are, reading the `P#` items of those not known yet (unknown ones stay unknown). */
    async locate(stream: string, refs: ReadonlyArray<{ topic: string; partition: number; shard?: string }>): Promise<StreamLocations> {
      const l = locationsOf(stream);
      const missing = refs.filter((r) => {
        if (r.shard !== undefined && l.groupOf(r.topic, r.partition) === undefined) l.record(r.topic, r.partition, Number(r.shard));
        return l.groupOf(r.topic, r.partition) === undefined;
      });
      if (missing.length)
        for (const s of await batchGet(
          stream,
          missing.map((r) => keys.partition(stream, r.topic, r.partition)),
        ))
          groupOfStatic(stream, s);
      return l;
    },

    /** Records where every partition of the stream is (before assigning groups to new ones). */
    async locateAll(stream: string): Promise<StreamLocations> {
      for (const s of await queryAll(`read partitions of ${stream}`, prefixQuery(table, stream, 'P#'))) groupOfStatic(stream, s);
      return locationsOf(stream);
    },
  };

  /** Items by key (strongly consistent), in any order; keys with no item are left out. */
  async function batchGet(stream: string, keyList: Array<{ pk: string; sk: string }>): Promise<Item[]> {
    const unique = [...new Map(keyList.map((k) => [`${k.pk}|${k.sk}`, k])).values()];
    const out: Item[] = [];
    for (let i = 0; i < unique.length; i += KEYS_PER_BATCH_GET) {
      let pending: Array<Record<string, unknown>> = unique.slice(i, i + KEYS_PER_BATCH_GET);
      while (pending.length) {
        const res = await send(`read items of ${stream}`, ({ doc }) =>
          doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } })),
        );
        out.push(...((res.Responses?.[table] ?? []) as Item[]));
        pending = (res.UnprocessedKeys?.[table]?.Keys ?? []) as Array<Record<string, unknown>>;
      }
    }
    return out;
  }
}

export type LedgerReads = ReturnType<typeof createLedgerReads>;
