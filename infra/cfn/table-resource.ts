/**
 * A DynamoDB table of the stack from the definition the project creates locally: the keys and billing
 * come from that definition, and every table of the stack gets the same protection (point-in-time
 * recovery, the stage's encryption and deletion settings) and the stack's tags.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';
import type { CfnResource } from './cfn';
import { tableSse } from './encryption';
import type { Settings } from './settings';

/** The `AWS::DynamoDB::Table` resource of `def`, with `extra` properties (TTL) and `tags` beside the service's and stage's. */
export function tableResource(
  s: Settings,
  def: CreateTableCommandInput,
  o: { extra?: Record<string, unknown>; tags?: Array<{ Key: string; Value: string }> } = {},
): CfnResource {
  return {
    Type: 'AWS::DynamoDB::Table',
    DeletionPolicy: s.tableDeletionPolicy,
    UpdateReplacePolicy: s.tableDeletionPolicy,
    Properties: {
      TableName: def.TableName,
      BillingMode: def.BillingMode,
      AttributeDefinitions: def.AttributeDefinitions,
      KeySchema: def.KeySchema,
      ...o.extra,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: tableSse(s),
      DeletionProtectionEnabled: s.tableDeletionProtection,
      Tags: [{ Key: 'service', Value: s.service }, { Key: 'stage', Value: s.stage }, ...(o.tags ?? [])],
    },
  };
}
