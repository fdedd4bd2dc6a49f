/**
 * The ledger table as a stack resource, built from the definition the local stack and the tests
 * create (`lib/ledger/table.ts`): keys, billing and TTL come from there, so the deployed table and
 * the local one cannot drift; the stack adds what only AWS has (point-in-time recovery, the stage's
 * encryption, deletion settings, tags).
 */
import { TTL_ATTRIBUTE } from '../../lib/ledger/items.dynamodb';
import { ledgerTableDefinition } from '../../lib/ledger/table';
import type { CfnResources } from './cfn';
import { tableResource } from './table-resource';
import { IDS } from './names';
import type { Settings } from './settings';

/** The `LedgerTable` resource and its name (Output `LedgerTableName`). */
export function ledgerTableResources(s: Settings): { Resources: CfnResources; Outputs: Record<string, unknown> } {
  const def = ledgerTableDefinition(s.names.ledgerTable);
  return {
    Resources: {
      // The history of finished ranges and dead letters get `expiresAt` (epoch seconds) and are removed by TTL.
      [IDS.ledgerTable]: tableResource(s, def, { extra: { TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true } } }),
    },
    Outputs: { LedgerTableName: { Value: { Ref: IDS.ledgerTable } } },
  };
}
