/**
 * Where the planner's invocations go when the stack has a function of its own for continuous
 * streams' resident segments (the `segments` function, docs/deploy.md): a continuous stream's
 * invocations to it, every other stream's to the processor. The stack names it to the planner in
 * `SEGMENT_FUNCTION_NAME` only when the config has a continuous stream; without it every invocation
 * goes to the processor, as before (the processor runs segments too).
 */
import { isContinuous } from '../config/continuous';
import type { DeploymentConfig } from '../config/schema';
import { invocationsOf, type DispatchOptions, type Dispatcher, type DispatchResult } from '../ports/dispatcher';
import type { RangePayload } from '../ranges';

/** The planner's variable naming the function that runs continuous streams' segments (set by the stack). */
export const SEGMENT_FUNCTION_NAME_ENV = 'SEGMENT_FUNCTION_NAME';

/**
 * A dispatcher sending each invocation to `segments` when its stream is one of `streams` (by the
 * stream of its first range: an invocation carries ranges of one stream), else to `processor`.
 * Each side gets its ranges and invocations re-indexed; the results come back in input order.
 */
export function routeStreams(processor: Dispatcher, segments: { streams: ReadonlySet<string>; dispatcher: Dispatcher }): Dispatcher {
  return {
    async dispatch(ranges: RangePayload[], opts?: DispatchOptions): Promise<DispatchResult[]> {
      const invocations = invocationsOf(ranges.length, opts);
      const toSegments = (indexes: number[]) => segments.streams.has((ranges[indexes[0] as number] as RangePayload).stream);
      const sides = [
        { dispatcher: processor, invocations: invocations.filter((inv) => inv.length > 0 && !toSegments(inv)) },
        { dispatcher: segments.dispatcher, invocations: invocations.filter((inv) => inv.length > 0 && toSegments(inv)) },
      ];
      const out = new Array<DispatchResult>(ranges.length);
      await Promise.all(
        sides.map(async ({ dispatcher, invocations: own }) => {
          if (own.length === 0) return;
          const indexes = own.flat();
          let next = 0;
          const local = own.map((inv) => inv.map(() => next++));
          const results = await dispatcher.dispatch(
            indexes.map((i) => ranges[i] as RangePayload),
            { invocations: local },
          );
          indexes.forEach((i, k) => (out[i] = results[k] as DispatchResult));
        }),
      );
      return out;
    },
  };
}

/**
 * The planner's dispatcher on Lambda: the processor's (`PROCESSOR_FUNCTION_NAME`), with the
 * continuous streams of the config routed to the segments function when the stack names one.
 * `create` makes the dispatcher of one function (an async Lambda Invoke of it).
 */
export function plannerDispatcher(
  env: NodeJS.ProcessEnv,
  config: Pick<DeploymentConfig, 'streams'>,
  functions: { processor: string; create: (functionName: string) => Dispatcher },
): Dispatcher {
  const processor = functions.create(functions.processor);
  const segmentFunction = env[SEGMENT_FUNCTION_NAME_ENV]?.trim();
  const continuous = new Set(config.streams.filter(isContinuous).map((s) => s.id));
  if (!segmentFunction || continuous.size === 0) return processor;
  return routeStreams(processor, { streams: continuous, dispatcher: functions.create(segmentFunction) });
}

/** Whether the planner's continuous streams run on a function of their own (not on the processor, nor under its concurrency). */
export function segmentsApart(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env[SEGMENT_FUNCTION_NAME_ENV]?.trim());
}
