/**
 * The ledger's history of finished ranges on DynamoDB (layout 2): the ranges the planner archives
 * from its partitions' live state in one run are put, before that run's group writes, as `H#` items
 * of the stream (`H#<archived at, ms:13>#<epoch>#<n>`), a list of ranges each, expiring after
 * RANGE_HISTORY_DAYS. A run that crashed between the two writes archives the same ranges again
 * later: readers take each range's identity once.
 */
import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { RANGE_HISTORY_DAYS } from '../ports/ledger';
import type { RangeState } from '../ports/ledger-state';
import { rangeToStored, rangesOfEntry, RANGES_FIELD } from './groups.dynamodb';
import { TTL_ATTRIBUTE, type Item } from './items.dynamodb';
import { keys } from './keys.dynamodb';

/** Bytes of ranges one history item holds at most (DynamoDB's item limit is 400 KB). */
const MAX_HISTORY_ITEM_BYTES = 300_000;

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** A range as a history entry: its stored fields, and its identity under names no range field has. */
function entryOf(r: RangeState): Item {
  return {
    ...rangeToStored(r as RangeState & Item),
    _t: r.topic,
    _n: r.partition,
    ...(r.incarnation ? { _i: r.incarnation } : {}),
    _f: r.from,
  };
}

/** The history items of the ranges one run archived (none when it archived none). */
export function historyItems(stream: string, ranges: readonly RangeState[], archivedAtMs: number, epoch: number): Item[] {
  const chunks: Item[][] = [];
  let size = 0;
  for (const r of ranges) {
    const e = entryOf(r);
    const bytes = JSON.stringify(e).length;
    if (!chunks.length || size + bytes > MAX_HISTORY_ITEM_BYTES) {
      chunks.push([]);
      size = 0;
    }
    chunks.at(-1)!.push(e);
    size += bytes;
  }
  return chunks.map((rs, n) => ({
    pk: keys.pk(stream),
    sk: `H#${pad(archivedAtMs, 13)}#${pad(epoch, 12)}#${n}`,
    type: 'range-history',
    rs,
    [TTL_ATTRIBUTE]: Math.floor(archivedAtMs / 1000) + RANGE_HISTORY_DAYS * 24 * 3600,
  }));
}

/** The ranges of history items, in the order they were archived, each identity once. */
export function rangesOfHistory(stream: string, items: readonly Item[]): RangeState[] {
  const seen = new Set<string>();
  const out: RangeState[] = [];
  for (const item of items) {
    for (const e of (item.rs ?? []) as Item[]) {
      const partition = { stream, topic: e._t as string, partition: e._n as number, ...(e._i ? { incarnation: e._i as number } : {}) };
      const [range] = rangesOfEntry({ [RANGES_FIELD]: { [String(e._f)]: e } }, partition as never);
      const id = `${range!.topic}/${range!.partition}/${range!.incarnation ?? 0}/${range!.from}`;
      if (seen.has(id)) continue;
      seen.add(id);
      out.push(range!);
    }
  }
  return out;
}

/** A strongly consistent query of the stream's history items archived at or after `sinceMs`. */
export function historyQuery(table: string, stream: string, sinceMs = 0): QueryCommandInput {
  return {
    TableName: table,
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
    ExpressionAttributeValues: { ':pk': keys.pk(stream), ':lo': `H#${pad(sinceMs, 13)}`, ':hi': 'H#~' },
    ConsistentRead: true,
  };
}
