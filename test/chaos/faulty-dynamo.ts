/** dynamodb-faults: a DynamoDB client that fails some requests on purpose, and counts what that did. */
import { DynamoDBClient, InternalServerError, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';

/**
 * A DynamoDB client whose requests fail, before they are sent, with the given probability.
 * `counter.injected` counts the failures made; `counter.met` the requests that met one (the SDK
 * retried them, or they failed), seen from outside the SDK's retry, so a fault that never reaches
 * the caller's requests does not count.
 */
export function faultyDynamo(
  endpoint: string,
  rng: () => number,
  fraction: number,
  counter: { injected: number; met: number },
): DynamoDBClient {
  // Two SDK attempts: most injected failures are absorbed by the SDK's retry, a few reach our own
  // retries (failed range -> re-dispatch, failed planner run -> next run).
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 2,
  });
  client.middlewareStack.add(
    (next) => async (args) => {
      if (rng() < fraction) {
        counter.injected++;
        const throttle = rng() < 0.5;
        throw throttle
          ? new ProvisionedThroughputExceededException({ message: 'chaos: throttled', $metadata: { httpStatusCode: 400 } })
          : Object.assign(new InternalServerError({ message: 'chaos: internal server error', $metadata: { httpStatusCode: 500 } }), {
              $fault: 'server' as const,
            });
      }
      return next(args);
    },
    // Inside the SDK's retry middleware (finalizeRequest), so its own retries see these failures.
    { step: 'deserialize', name: 'chaosFaults', priority: 'low' },
  );
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        const out = await next(args);
        if (((out.output as { $metadata?: { attempts?: number } }).$metadata?.attempts ?? 1) > 1) counter.met++;
        return out;
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('chaos: ')) counter.met++;
        throw err;
      }
    },
    // Outside the retry: what the caller's request went through.
    { step: 'initialize', name: 'chaosFaultsMet', priority: 'high' },
  );
  return client;
}
