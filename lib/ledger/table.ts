/**
 * The ledger table's definition: the local stack and the tests create it, and the stack's
 * `LedgerTable` resource is built from it (infra/cfn/ledger-table.ts).
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { translateDynamoError } from './errors.dynamodb';
import { TTL_ATTRIBUTE } from './items.dynamodb';

/** Key schema and on-demand billing (no index: the planner reads its partitions' group items by key). */
export function ledgerTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
    ],
  };
}

/** Creates the ledger table if missing (local stack and tests; on AWS the stack owns it). */
export async function ensureLedgerTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: tableName }));
    return;
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException))
      throw translateDynamoError(err, `ledger table ${tableName}`, tableName, 'DescribeTable');
  }
  try {
    await client.send(new CreateTableCommand(ledgerTableDefinition(tableName)));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw translateDynamoError(err, `ledger table ${tableName}`, tableName, 'CreateTable');
  }
  await client
    .send(new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true } }))
    .catch((err: unknown) => {
      throw translateDynamoError(err, `ledger table ${tableName}`, tableName, 'UpdateTimeToLive');
    });
}
