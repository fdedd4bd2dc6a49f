/**
 * The ledger's history of finished ranges on DynamoDB (layout 2): the ranges the planner archives
 * from its partitions' live state in one run are put, before that run's group writes, as `H#` items
 * of the stream (`H#<archived at, ms:13>#<epoch>#<n>`), their ranges by topic, a few numbers each, expiring after
 * RANGE_HISTORY_DAYS. A run that crashed between the two writes archives the same ranges again
 * later: readers take each range's identity once.
 */
import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { RANGE_HISTORY_DAYS } from '../ports/ledger';
import type { RangeState } from '../ports/ledger-state';
import { TTL_ATTRIBUTE, type Item } from './items.dynamodb';
import { keys } from './keys.dynamodb';
import { rangeIdentity } from '../ranges';

/** Bytes of ranges one history item holds at most (DynamoDB's item limit is 400 KB). */
const MAX_HISTORY_ITEM_BYTES = 300_000;

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/**
 * A range as a history entry, positional (every byte of a history item is billed when it is put):
 * `[partition, from, until, records, epoch, plannedAtMs, finishedAtMs, attempts, dispatches,
 * incarnation]`, under its topic.
 */
type Entry = [number, number, number, number, number, number, number, number, number, number];

function entryOf(r: RangeState): Entry {
  return [
    r.partition,
    r.from,
    r.until,
    r.records ?? 0,
    r.epoch,
    r.plannedAtMs,
    r.finishedAtMs ?? 0,
    r.attempts,
    r.dispatches,
    r.incarnation ?? 0,
  ];
}

/** The history items of the ranges one run archived (none when it archived none). */
export function historyItems(stream: string, ranges: readonly RangeState[], archivedAtMs: number, epoch: number): Item[] {
  const chunks: Array<Record<string, Entry[]>> = [];
  let size = 0;
  for (const r of ranges) {
    const e = entryOf(r);
    const bytes = JSON.stringify(e).length + r.topic.length;
    if (!chunks.length || size + bytes > MAX_HISTORY_ITEM_BYTES) {
      chunks.push({});
      size = 0;
    }
    (chunks.at(-1)![r.topic] ??= []).push(e);
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
    for (const [topic, entries] of Object.entries((item.rs ?? {}) as Record<string, Entry[]>)) {
      for (const [partition, from, until, records, epoch, plannedAtMs, finishedAtMs, attempts, dispatches, incarnation] of entries) {
        const id = rangeIdentity({ topic, partition, incarnation, from });
        if (seen.has(id)) continue;
        seen.add(id);
        out.push({
          stream,
          topic,
          partition,
          from,
          until,
          status: 'done',
          progress: until,
          records,
          epoch,
          plannedAtMs,
          finishedAtMs,
          attempts,
          dispatches,
          ...(incarnation ? { incarnation } : {}),
        });
      }
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
