/**
 * The ledger table's definition, used by local set-up and tests. `infra/cfn/resources.yml` repeats it
 * for CloudFormation; test/deploy/package.test.ts keeps the two equal (keys, attributes, index, TTL).
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
import { dynamoSetupError } from './ledger.dynamodb';

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
    if (!(err instanceof ResourceNotFoundException)) throw dynamoSetupError(err, `ledger table ${tableName}`) ?? err;
  }
  try {
    await client.send(new CreateTableCommand(ledgerTableDefinition(tableName)));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw err;
  }
  await client.send(
    new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true } }),
  );
}
