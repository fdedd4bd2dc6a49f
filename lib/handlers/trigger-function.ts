/**
 * A function written for Lambda's Kafka trigger, run unchanged as an at-least-once handler
 * (docs/configuration.md, "Functions from Lambda's Kafka trigger"): each chunk of a range is cut into
 * events as the trigger cuts batches (its BatchSize in records, 6 MB of payload), and the function is
 * called with each event as the trigger builds it (trigger-event.ts) and a Lambda-like context.
 *
 * Its answers, as the trigger reads them: returning (or a partial batch response listing no failure)
 * handles the event; a thrown error fails it, and the processor retries it, then isolates the failing
 * record and dead-letters it as for any handler; a partial batch response counts the records before
 * its earliest failed one as handled and the function is called again from that one.
 */
import type { Context } from 'aws-lambda';
import type { StreamConfig, TriggerFunctionConfig } from '../config/schema';
import { ValidationError } from '../errors';
import { PartialBatchError, type AtLeastOnceHandler, type HandlerContext, type HandlerRecord } from '../processor/handler-api';
import { batchItemFailureIndex, TRIGGER_MAX_PAYLOAD_BYTES, triggerBatches, triggerEvent, type TriggerEventSource } from './trigger-event';

/** A trigger function: async (the usual form), or with a callback (Node.js runtimes up to 22 still call one). */
export type TriggerFunction = (event: unknown, context: Context, callback?: (err?: unknown, result?: unknown) => void) => unknown;

/** The trigger function a module exports under `name`, checked; `where` names the stream and the file. */
export function triggerFunctionFromExports(exports: unknown, name: string, where: string): TriggerFunction {
  const ns = (typeof exports === 'object' || typeof exports === 'function') && exports !== null ? (exports as Record<string, unknown>) : {};
  const fn = ns[name];
  if (typeof fn === 'function') return fn as TriggerFunction;
  const functions = Object.keys(ns).filter((k) => typeof ns[k] === 'function');
  throw new ValidationError(
    `${where}: no function exported as ${JSON.stringify(name)} (handler.triggerFunction.export)` +
      (fn === undefined ? '' : `: it is ${typeof fn}`) +
      (functions.length ? `; the module exports these functions: ${functions.join(', ')}` : ''),
  );
}

/** The event's source fields for a stream: its cluster's brokers, and the MSK cluster's ARN for an MSK event. */
export function triggerEventSource(stream: StreamConfig, t: TriggerFunctionConfig): TriggerEventSource {
  const bootstrapServers = stream.kafka.brokers.join(',');
  return t.eventSource === 'aws:kafka'
    ? { eventSource: 'aws:kafka', eventSourceArn: t.eventSourceArn as string, bootstrapServers }
    : { eventSource: 'SelfManagedKafka', bootstrapServers };
}

/**
 * The handler a stream's `handler.triggerFunction` makes of `fn` (found in its module, or given by
 * the test kit): the event's source from the stream, its batch size. `where` names the function in errors.
 */
export function triggerHandlerFor(stream: StreamConfig, fn: TriggerFunction, where: string, env?: NodeJS.ProcessEnv): AtLeastOnceHandler {
  const t = stream.handler?.triggerFunction;
  if (!t) throw new ValidationError(`stream ${stream.id}: its handler has no triggerFunction settings`);
  return triggerFunctionHandler(fn, { where, source: triggerEventSource(stream, t), batchSize: t.batchSize, ...(env && { env }) });
}

/** The handler that calls `fn` as the trigger would (see the module comment). */
export function triggerFunctionHandler(
  fn: TriggerFunction,
  o: { where: string; source: TriggerEventSource; batchSize: number; env?: NodeJS.ProcessEnv },
): AtLeastOnceHandler {
  const env = o.env ?? process.env;
  return {
    mode: 'at-least-once',
    async handle(records, ctx) {
      let handled = 0;
      for (const batch of triggerBatches(records, o.batchSize, TRIGGER_MAX_PAYLOAD_BYTES, o.source)) {
        const failedAt = await callWithBatch(fn, batch, { ...o, env, ctx, handled });
        if (failedAt === undefined) {
          handled += batch.length;
          continue;
        }
        const failed = batch[failedAt] as HandlerRecord;
        const reason = `${o.where} reported ${failed.idempotencyKey} failed (batchItemFailures)`;
        // The earliest failed record first in the chunk is that record's failure: retried, isolated, dead-lettered.
        if (handled + failedAt === 0) throw new Error(reason);
        throw new PartialBatchError(handled + failedAt, reason);
      }
    },
  };
}

/**
 * One event: calls the function and reads its answer. Returns the index of the earliest failed record
 * its partial batch response names, undefined when it handled the whole batch. A throw after earlier
 * events of the chunk were handled is a partial batch of the chunk (those count).
 */
async function callWithBatch(
  fn: TriggerFunction,
  batch: HandlerRecord[],
  o: { where: string; source: TriggerEventSource; env: NodeJS.ProcessEnv; ctx: HandlerContext; handled: number },
): Promise<number | undefined> {
  const first = batch[0] as HandlerRecord;
  const context = lambdaContext(o.ctx, `${first.topic}-${first.partition}-${first.offset}`, o.env);
  let answer: unknown;
  try {
    answer = await invoke(fn, triggerEvent(batch, o.source), context);
  } catch (err) {
    if (o.handled === 0) throw err;
    throw new PartialBatchError(o.handled, `${o.where} failed on the event from ${first.idempotencyKey}`, { cause: err });
  }
  return batchItemFailureIndex(answer, batch, o.where);
}

/** Calls the function, awaiting its promise or its callback, whichever answers first (as Lambda's runtime does). */
function invoke(fn: TriggerFunction, event: unknown, context: Context): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const callback = (err?: unknown, result?: unknown) => (err ? reject(err) : resolve(result));
    try {
      const out = fn(event, context, callback) as { then?: unknown } | undefined;
      // An async function answers by its promise; one declaring a callback answers through it.
      if (out && typeof out.then === 'function') (out as Promise<unknown>).then(resolve, reject);
      else if (fn.length < 3) resolve(out);
    } catch (err) {
      reject(err);
    }
  });
}

/**
 * The Lambda context the function gets: this processor's function name, memory, log group and
 * stream as Lambda sets them in its environment, the time left before the processor's deadline, and
 * a request id naming the event's first record. The processor's own ARN and account are not known
 * to a handler: `invokedFunctionArn` is built from the region and the name with account 000000000000.
 */
export function lambdaContext(ctx: HandlerContext, requestId: string, env: NodeJS.ProcessEnv): Context {
  const name = env.AWS_LAMBDA_FUNCTION_NAME ?? 'kafka-direct-processor';
  const region = env.AWS_REGION ?? 'us-east-1';
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: name,
    functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION ?? '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${name}`,
    memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '1024',
    awsRequestId: requestId,
    logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME ?? `/aws/lambda/${name}`,
    logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME ?? 'local',
    getRemainingTimeInMillis: () => (ctx.deadlineAtMs === undefined ? 900_000 : Math.max(0, ctx.deadlineAtMs - Date.now())),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
