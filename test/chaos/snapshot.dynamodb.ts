/**
 * Loads one stream's ledger snapshot (META, partitions, every range kept: the live ones and the
 * archived history, data-loss entries, closed incarnations) through the DynamoDB ledger's own reads.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import type { RangeState } from '../../lib/ports/ledger-state';
import type { LedgerSnapshot } from './invariants';

/** Ranges kept once each: a range archived while its live copy was not yet removed (an archive repeated) counts as the live one. */
function keptOnce(live: RangeState[], archived: RangeState[]): RangeState[] {
  const id = (r: RangeState) => `${r.topic}/${r.partition}/${r.incarnation ?? 0}/${r.from}`;
  const liveIds = new Set(live.map(id));
  return [...archived.filter((r) => !liveIds.has(id(r))), ...live];
}

export async function readLedgerSnapshot(client: DynamoDBClient, tableName: string, stream: string): Promise<LedgerSnapshot> {
  const ledger = createDynamoLedger({ client, tableName });
  const [meta, { partitions, ranges }, history, dataLoss, closed] = await Promise.all([
    ledger.readMeta(stream),
    ledger.readPartitionsAndRanges(stream),
    ledger.readRangeHistory(stream),
    ledger.readDataLoss(stream),
    ledger.readClosedIncarnations(stream),
  ]);
  return { ...(meta ? { meta } : {}), partitions, ranges: keptOnce(ranges, history), dataLoss, ...(closed.length ? { closed } : {}) };
}
