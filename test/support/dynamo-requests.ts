/** Counting the DynamoDB requests a test makes, with SDK middleware (request budgets of idle runs). */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Adds a middleware to `client` counting the commands it sends (once per command, before the SDK's
 * own retries, like a request budget is stated); returns the count so far.
 */
export function countRequests(client: DynamoDBClient): () => number {
  let requests = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      requests++;
      return next(args);
    },
    { step: 'initialize', name: 'testRequestCounter' },
  );
  return () => requests;
}
