/**
 * Which path the emulator served each request by: its answers taken without moto's request stack
 * carry `x-emulator-path: direct` (infra/local/dynamodb/patches/common.py), others carry none.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

type WithHeaders = { headers?: Record<string, string> };

/** Records the `x-emulator-path` header of each answer the client gets, refusals included, in order. */
export function recordEmulatorPaths(client: DynamoDBClient): Array<string | undefined> {
  const paths: Array<string | undefined> = [];
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        const out = await next(args);
        paths.push((out.response as WithHeaders).headers?.['x-emulator-path']);
        return out;
      } catch (err) {
        paths.push((err as { $response?: WithHeaders }).$response?.headers?.['x-emulator-path']);
        throw err;
      }
    },
    { step: 'deserialize', name: 'emulatorPath' },
  );
  return paths;
}
