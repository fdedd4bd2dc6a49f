/**
 * The ledger's outbox on DynamoDB: one `O#` item per delivery of a dead letter to a failure
 * destination not made yet. `commitChunk` puts them in the dead letter's own transaction
 * (the range-write rules' `put-delivery` steps), so a dead letter never lacks its pending deliveries; a delivery made
 * deletes its item (conditionally), a failed attempt is counted on it. The planner finds what is
 * pending with one Query of the stream's `O#` keys, which costs one read unit when there is none.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Ledger } from '../ports/ledger';
import type { PendingDelivery } from '../ports/ledger-state';
import { codec } from './items.dynamodb';
import { keys, prefixQuery } from './keys.dynamodb';
import type { TranslatingSend } from './errors.dynamodb';

/** Pages of `O#` items one due look-up reads at most (each up to 1 MB: thousands of pending deliveries). */
const MAX_DUE_PAGES = 3;

type OutboxOps = Pick<Ledger, 'readDeadLetter' | 'readPendingDeliveries' | 'completeDelivery' | 'postponeDelivery'>;
type Send = TranslatingSend<{ doc: DynamoDBDocumentClient }>;

/** The outbox methods of the DynamoDB ledger, sending through the ledger's `send` (its error translation). */
export function createDynamoOutbox(table: string, send: Send): OutboxOps {
  /** A conditional write whose failed condition is a value. */
  const conditional = async (
    what: string,
    fn: (clients: { doc: DynamoDBDocumentClient }) => Promise<unknown>,
  ): Promise<'applied' | 'condition-failed'> => {
    try {
      await send(what, fn);
      return 'applied';
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return 'condition-failed';
      throw err;
    }
  };
  return {
    async readDeadLetter(stream, ref) {
      const res = await send(`read dead letter ${ref.topic}/${ref.partition}/${ref.offset}`, ({ doc }) =>
        doc.send(new GetCommand({ TableName: table, Key: keys.deadLetter(stream, ref), ConsistentRead: true })),
      );
      return res.Item ? codec.deadLetterFromItem(res.Item) : undefined;
    },

    async readPendingDeliveries({ stream, dueAtMs, limit }) {
      const base = prefixQuery(table, stream, 'O#');
      const due =
        dueAtMs === undefined
          ? {}
          : {
              FilterExpression: 'nextAttemptAtMs <= :due',
              ExpressionAttributeValues: { ...base.ExpressionAttributeValues, ':due': dueAtMs },
            };
      const out: PendingDelivery[] = [];
      let start: Record<string, unknown> | undefined;
      // Bounded when filtering: deliveries backing off at the front must not make one run read them all.
      for (let page = 0; dueAtMs === undefined || page < MAX_DUE_PAGES; page++) {
        const res = await send(`read pending deliveries of ${stream}`, ({ doc }) =>
          doc.send(new QueryCommand({ ...base, ...due, ExclusiveStartKey: start })),
        );
        out.push(...(res.Items ?? []).map(codec.deliveryFromItem));
        start = res.LastEvaluatedKey;
        if (!start || (limit !== undefined && out.length >= limit)) break;
      }
      return limit === undefined ? out : out.slice(0, limit);
    },

    completeDelivery({ stream, ref, destination }) {
      return conditional(`complete delivery of ${ref.topic}/${ref.partition}/${ref.offset} to ${destination}`, ({ doc }) =>
        doc.send(
          new DeleteCommand({
            TableName: table,
            Key: keys.delivery(stream, { ...ref, destination }),
            ConditionExpression: 'attribute_exists(pk)',
          }),
        ),
      );
    },

    postponeDelivery({ stream, ref, destination, expectAttempts, nextAttemptAtMs, error }) {
      return conditional(`postpone delivery of ${ref.topic}/${ref.partition}/${ref.offset} to ${destination}`, ({ doc }) =>
        doc.send(
          new UpdateCommand({
            TableName: table,
            Key: keys.delivery(stream, { ...ref, destination }),
            UpdateExpression: 'SET attempts = :next, nextAttemptAtMs = :at, lastError = :error',
            ConditionExpression: 'attempts = :expect',
            ExpressionAttributeValues: { ':next': expectAttempts + 1, ':at': nextAttemptAtMs, ':error': error, ':expect': expectAttempts },
          }),
        ),
      );
    },
  };
}
