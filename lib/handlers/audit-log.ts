/**
 * Example at-least-once handler: copies each record into an audit table (AUDIT_LOG_TABLE) keyed by
 * its idempotency key. A redelivered record finds its item already there (conditional put), so
 * redeliveries are harmless and counted rather than written twice.
 */
import { ConditionalCheckFailedException, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { AtLeastOnceHandler, HandlerRecord } from '../processor/handler-api';

/** Creates the handler for a table; `client` defaults to one for DYNAMODB_ENDPOINT or AWS. */
export function createAuditLog(opts: { tableName: string; client: DynamoDBClient }): AtLeastOnceHandler & { duplicates(): number } {
  let duplicates = 0;
  return {
    mode: 'at-least-once',
    duplicates: () => duplicates,
    async handle(records: HandlerRecord[]) {
      for (const r of records) {
        try {
          await opts.client.send(
            new PutItemCommand({
              TableName: opts.tableName,
              Item: {
                pk: { S: r.idempotencyKey },
                timestampMs: { N: String(r.timestampMs) },
                ...(r.value ? { value: { B: r.value } } : {}),
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            }),
          );
        } catch (err) {
          if (!(err instanceof ConditionalCheckFailedException)) throw err;
          duplicates++;
        }
      }
    },
  };
}
