/** Whole-table reads for tests that check a sink or an audit table after a run. */
import { ScanCommand, type DynamoDBClient, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

/** Every item of `table`, unmarshalled, read with consistent pages to the end. */
export async function scanItems(ddb: DynamoDBClient, table: string): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  let start: ScanCommandOutput['LastEvaluatedKey'];
  do {
    const page: ScanCommandOutput = await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
    for (const raw of page.Items ?? []) items.push(unmarshall(raw));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** A running-totals sink as `pk` -> its `total` and `count`, as stored (a missing attribute stays undefined). */
export async function scanTotals(ddb: DynamoDBClient, table: string): Promise<Map<string, { total: number; count: number }>> {
  const items = await scanItems(ddb, table);
  return new Map(items.map((i) => [i.pk as string, { total: i.total as number, count: i.count as number }]));
}
