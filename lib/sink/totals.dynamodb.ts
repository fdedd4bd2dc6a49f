/**
 * A running-totals sink table (lib/handlers/running-totals.ts) read back as per-key totals, so a run
 * can check it against what was produced: the demo's and the benchmarks' final check.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { scanSinkItems } from './table.dynamodb';

/** Per-key `total` and `count`, as the running-totals handler keeps them. */
export type KeyTotals = Record<string, { total: number; count: number }>;

/** Per-key `total` and `count` of a running-totals sink table (a missing attribute reads as 0). */
export async function scanTotals(client: DynamoDBClient, table: string): Promise<KeyTotals> {
  const out: KeyTotals = {};
  for (const item of (await scanSinkItems(client, table, Infinity)) as Array<{ pk: string; total?: number; count?: number }>) {
    out[item.pk] = { total: Number(item.total ?? 0), count: Number(item.count ?? 0) };
  }
  return out;
}
