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
import { OPEN_RANGES_INDEX } from './keys.dynamodb';
import { dynamoSetupError } from './ledger.dynamodb';

/** Key schema, the sparse open-ranges GSI and on-demand billing. */
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
      { AttributeName: 'openPk', AttributeType: 'S' },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: OPEN_RANGES_INDEX,
        KeySchema: [
          { AttributeName: 'openPk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'ALL' },
      },
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
