/**
 * A DynamoDB client whose requests never leave the process: a middleware answers each before the
 * SDK's own retries and before any socket, by its command, with an output or an error thrown as the
 * SDK would throw it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** What `answer` gets: the command's name without `Command` (`DeleteTable`) and its input. */
export type ScriptedRequest = { operation: string; input: Record<string, unknown> };

/** A client answering every request with `answer(request)`: an `Error` is thrown, anything else is the output. */
export function scriptedDynamo(answer: (request: ScriptedRequest) => unknown): DynamoDBClient {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const operation = String(context.commandName ?? '').replace(/Command$/, '');
      const out = answer({ operation, input: args.input as Record<string, unknown> });
      if (out instanceof Error) throw out;
      return { output: { $metadata: {}, ...(out as object) } as never, response: {} };
    },
    { step: 'initialize', name: 'scriptedAnswer' },
  );
  return client;
}
