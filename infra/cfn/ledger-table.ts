/**
 * The ledger table as a stack resource, built from the definition the local stack and the tests
 * create (`lib/ledger/table.ts`): keys, billing and TTL come from there, so the deployed table and
 * the local one cannot drift; the stack adds what only AWS has (point-in-time recovery, the stage's
 * encryption, deletion settings, tags).
 */
import { TTL_ATTRIBUTE } from '../../lib/ledger/items.dynamodb';
import { ledgerTableDefinition } from '../../lib/ledger/table';
import type { CfnResources } from './cfn';
import { tableSse } from './encryption';
import { IDS } from './names';
import type { Settings } from './settings';

/** The `LedgerTable` resource and its name (Output `LedgerTableName`). */
export function ledgerTableResources(s: Settings): { Resources: CfnResources; Outputs: Record<string, unknown> } {
  const def = ledgerTableDefinition(s.names.ledgerTable);
  return {
    Resources: {
      [IDS.ledgerTable]: {
        Type: 'AWS::DynamoDB::Table',
        DeletionPolicy: s.tableDeletionPolicy,
        UpdateReplacePolicy: s.tableDeletionPolicy,
        Properties: {
          TableName: def.TableName,
          BillingMode: def.BillingMode,
          AttributeDefinitions: def.AttributeDefinitions,
          KeySchema: def.KeySchema,
          // The history of finished ranges and dead letters get `expiresAt` (epoch seconds) and are removed by TTL.
          TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
          PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          SSESpecification: tableSse(s),
          DeletionProtectionEnabled: s.tableDeletionProtection,
          Tags: [
            { Key: 'service', Value: s.service },
            { Key: 'stage', Value: s.stage },
          ],
        },
      },
    },
    Outputs: { LedgerTableName: { Value: { Ref: IDS.ledgerTable } } },
  };
}
