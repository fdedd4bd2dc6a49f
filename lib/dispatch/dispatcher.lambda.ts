/** Dispatcher adapter: AWS Lambda asynchronous Invoke of the processor function, one range per event. */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { mapWithConcurrency } from '../concurrency';
import type { Dispatcher, DispatchResult } from '../ports/dispatcher';
import type { RangePayload } from '../ranges';

export type LambdaDispatcherOptions = {
  client: LambdaClient;
  /** Name or ARN of the processor function. */
  functionName: string;
  /** Invocations in flight at once (the Invoke API is per event; this bounds sockets and throttling). */
  concurrency?: number;
};

/** Creates a dispatcher that sends each range as an `Event` invocation (Lambda queues and retries it). */
export function createLambdaDispatcher(opts: LambdaDispatcherOptions): Dispatcher {
  return {
    dispatch(ranges: RangePayload[]): Promise<DispatchResult[]> {
      return mapWithConcurrency(ranges, opts.concurrency ?? 16, async (range): Promise<DispatchResult> => {
        try {
          const res = await opts.client.send(
            new InvokeCommand({
              FunctionName: opts.functionName,
              InvocationType: 'Event',
              Payload: new TextEncoder().encode(JSON.stringify(range)),
            }),
          );
          return res.StatusCode === 202 ? { ok: true } : { ok: false, error: `Invoke returned status ${res.StatusCode}` };
        } catch (err) {
          return { ok: false, error: `${(err as Error).name}: ${(err as Error).message}` };
        }
      });
    },
  };
}
