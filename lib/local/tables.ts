/** The tables a local run of a deployment config needs: the ledger and the declared sink tables, created if missing. */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DeploymentConfig } from '../config/schema';
import { sinkTablesOf } from '../config/sink-tables';
import { ensureLedgerTable } from '../ledger/table';
import { assertSinkTableExists, ensureSinkTable } from '../sink/table.dynamodb';

/**
 * Creates the ledger table and every declared sink table that is missing, and checks that the sink
 * tables named without a key exist. Returns the sink tables it created.
 */
export async function ensureConfigTables(dynamo: DynamoDBClient, config: DeploymentConfig): Promise<string[]> {
  const { declared, referenced } = sinkTablesOf(config);
  await ensureLedgerTable(dynamo, config.ledgerTable);
  const created: string[] = [];
  for (const [name, { key }] of declared) if (await ensureSinkTable(dynamo, name, key)) created.push(name);
  for (const [name, { streams }] of referenced) await assertSinkTableExists(dynamo, name, streams);
  return created;
}
