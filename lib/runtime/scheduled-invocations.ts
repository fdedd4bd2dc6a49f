/**
 * Invoking a Lambda handler in this process the way its EventBridge schedule does: one invocation
 * per schedule period, each with a Lambda context whose remaining time counts down from the
 * function's timeout, overlapping when an invocation outlives its period. For the planner loop's
 * tests and `bench:latency -- --deployed`.
 */
import type { Context } from 'aws-lambda';

/** A Lambda context whose `getRemainingTimeInMillis` counts down from `timeoutMs` from now. */
export function lambdaContext(requestId: string, timeoutMs: number, functionName = 'planner'): Context {
  const deadlineMs = Date.now() + timeoutMs;
  return {
    awsRequestId: requestId,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: requestId,
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** One scheduled invocation as it ran. */
export type ScheduledInvocation<T> = { index: number; startedAtMs: number; endedAtMs: number; result?: T; error?: unknown };

export type ScheduleOptions<T> = {
  /** The handler, called as Lambda calls it. */
  invoke: (event: unknown, context: Context) => Promise<T>;
  /** What the schedule sends. */
  event: unknown;
  periodMs: number;
  /** The function's timeout: each context's remaining time starts there. */
  timeoutMs: number;
  invocations: number;
  /** Hears each invocation as it ends. */
  onEnd?: (i: ScheduledInvocation<T>) => void;
};

/** Starts `invocations` invocations, one per period from now, and resolves when all have ended. */
export async function runSchedule<T>(o: ScheduleOptions<T>): Promise<Array<ScheduledInvocation<T>>> {
  const t0 = Date.now();
  const one = async (index: number): Promise<ScheduledInvocation<T>> => {
    const wait = t0 + index * o.periodMs - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const startedAtMs = Date.now();
    const done = (r: Partial<ScheduledInvocation<T>>): ScheduledInvocation<T> => {
      const ran = { index, startedAtMs, endedAtMs: Date.now(), ...r };
      o.onEnd?.(ran);
      return ran;
    };
    try {
      return done({ result: await o.invoke(o.event, lambdaContext(`schedule-${t0}-${index}`, o.timeoutMs)) });
    } catch (error) {
      return done({ error });
    }
  };
  return Promise.all(Array.from({ length: o.invocations }, (_, i) => one(i)));
}
