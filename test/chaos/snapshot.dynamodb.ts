/**
 * Loads one stream's ledger snapshot (META, partitions, every range, data-loss entries, closed
 * incarnations) by Query on `pk = S#<stream>`.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { codec } from '../../lib/ledger/items.dynamodb';
import { keys } from '../../lib/ledger/keys.dynamodb';
import type { LedgerSnapshot } from './invariants';

export async function readLedgerSnapshot(client: DynamoDBClient, tableName: string, stream: string): Promise<LedgerSnapshot> {
  const doc = DynamoDBDocumentClient.from(client);
  const snap: LedgerSnapshot = { partitions: [], ranges: [], dataLoss: [] };
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.pk(stream) },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) {
      const sk = String(item.sk);
      if (sk === 'META') snap.meta = codec.metaFromItem(item);
      else if (sk.startsWith('P#')) snap.partitions.push(codec.partitionFromItem(item));
      else if (sk.startsWith('R#')) snap.ranges.push(codec.rangeFromItem(item));
      else if (sk.startsWith('L#')) snap.dataLoss.push(codec.lossFromItem(item));
      else if (sk.startsWith('I#')) (snap.closed ??= []).push(codec.closedFromItem(item));
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return snap;
}
