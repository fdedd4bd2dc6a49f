/** The tables a local run of a deployment config needs: the ledger and the declared sink tables, created if missing. */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DeploymentConfig } from '../config/schema';
import { sinkTablesOf } from '../config/sink-tables';
import { ensureLedgerTable } from '../ledger/table';
import { assertSinkTableExists, declaredSinkTableExists, ensureSinkTable } from '../sink/table.dynamodb';

/**
 * Checks that the sink tables named without a key exist and that the declared ones that exist have
 * the declared key, then creates the ledger table and the declared sink tables that are missing:
 * a config that fails a check creates nothing. Returns the sink tables it created.
 */
export async function ensureConfigTables(dynamo: DynamoDBClient, config: DeploymentConfig): Promise<string[]> {
  const { declared, referenced } = sinkTablesOf(config);
  for (const [name, { streams }] of referenced) await assertSinkTableExists(dynamo, name, streams);
  for (const [name, { key }] of declared) await declaredSinkTableExists(dynamo, name, key);
  await ensureLedgerTable(dynamo, config.ledgerTable);
  const created: string[] = [];
  for (const [name, { key }] of declared) if (await ensureSinkTable(dynamo, name, key)) created.push(name);
  return created;
}
