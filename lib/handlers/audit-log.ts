/**
 * Example at-least-once handler: copies each record into an audit table (AUDIT_LOG_TABLE) keyed by
 * its idempotency key. A redelivered record finds its item already there (conditional put), so
 * redeliveries are harmless and counted rather than written twice.
 *
 * A failed put is either the record's fault or not, and the committer tells them apart by class: a
 * throttle that outlasted the SDK's retries, a DynamoDB 5xx, an endpoint never reached (or no region
 * to reach it by) and a missing table (the deployment's fault: every record would fail alike) leave as
 * the project's errors (`ThrottledError`, `StoreError`, `ConfigurationError`, `MissingResourceError`:
 * one line naming DynamoDB and the operation and table, or the setting to fix), which fail the range
 * for the planner to retry later instead of dead-lettering records that did nothing wrong. Any other
 * error (a `ValidationException` such as an item too large) is thrown as the SDK's own: the record is
 * retried and then dead-lettered.
 */
import { ConditionalCheckFailedException, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { MissingResourceError, ThrottledError } from '../errors';
import { dynamoSetupError, translateDynamoError } from '../ledger/errors.dynamodb';
import type { AtLeastOnceHandler, HandlerRecord } from '../processor/handler-api';

const WHAT = 'audit-log handler';

/** Creates the handler for a table; `client` is the processor's (DYNAMODB_ENDPOINT, else AWS: lib/handlers/index.ts). */
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
          if (!(err instanceof ConditionalCheckFailedException)) throw notTheRecords(err, opts.tableName) ?? err;
          duplicates++;
        }
      }
    },
  };
}

/**
 * The project's error for a failed put that is not the record's fault (see the file's comment), else
 * undefined. The class comes from the one translation edge, which tells throttles and missing tables
 * by the SDK's names; what it translates to `StoreError` is kept only for a server fault or an
 * endpoint never reached, since it also turns the record's own client errors into `StoreError`s.
 */
function notTheRecords(err: unknown, tableName: string): Error | undefined {
  const translated = translateDynamoError(err, WHAT, tableName, 'PutItem');
  if (translated instanceof ThrottledError || translated instanceof MissingResourceError) return translated;
  if (dynamoSetupError(err, WHAT) || isServerFault(err)) return translated;
  return undefined;
}

/**
 * DynamoDB's own 5xx. The SDK marks its modelled server errors (`InternalServerError`) `$fault:
 * 'server'`, but an error it does not model (a 503 from the front end) is marked `client` whatever
 * its status, so the status is read too.
 */
function isServerFault(err: unknown): boolean {
  const e = err as { $fault?: unknown; $metadata?: { httpStatusCode?: unknown } } | undefined;
  const status = e?.$metadata?.httpStatusCode;
  return e?.$fault === 'server' || (typeof status === 'number' && status >= 500);
}
