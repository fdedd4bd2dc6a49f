/**
 * Dispatcher adapter: AWS Lambda asynchronous Invoke of the processor function, one invocation (one
 * range, or several small ones) per event.
 */
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { mapWithConcurrency } from '../concurrency';
import { invocationPayload, invocationsOf, type Dispatcher, type DispatchResult } from '../ports/dispatcher';
import type { RangePayload } from '../ranges';

export type LambdaDispatcherOptions = {
  client: LambdaClient;
  /** Name or ARN of the processor function. */
  functionName: string;
  /** Invocations in flight at once (the Invoke API is per event; this bounds sockets and throttling). */
  concurrency?: number;
};

/** Creates a dispatcher that sends each invocation as an `Event` invocation (Lambda queues and retries it). */
export function createLambdaDispatcher(opts: LambdaDispatcherOptions): Dispatcher {
  return {
    async dispatch(ranges: RangePayload[], dispatchOpts): Promise<DispatchResult[]> {
      const invocations = invocationsOf(ranges.length, dispatchOpts);
      const results = await mapWithConcurrency(invocations, opts.concurrency ?? 16, async (indexes): Promise<DispatchResult> => {
        try {
          const payload = invocationPayload(indexes.map((i) => ranges[i] as RangePayload));
          const res = await opts.client.send(
            new InvokeCommand({
              FunctionName: opts.functionName,
              InvocationType: 'Event',
              Payload: new TextEncoder().encode(JSON.stringify(payload)),
            }),
          );
          return res.StatusCode === 202 ? { ok: true } : { ok: false, error: `Invoke returned status ${res.StatusCode}` };
        } catch (err) {
          return { ok: false, error: `${(err as Error).name}: ${(err as Error).message}` };
        }
      });
      const out = new Array<DispatchResult>(ranges.length);
      invocations.forEach((indexes, k) => indexes.forEach((i) => (out[i] = results[k] as DispatchResult)));
      return out;
    },
  };
}
