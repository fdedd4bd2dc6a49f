/** Errors of failure destinations at the edge: anything an SDK or kafkajs throws becomes one DeliveryError line naming the destination. */
import { DeliveryError } from '../errors';
import { UNREACHABLE_CODES, unreachableWhere } from '../socket-errors';

type ErrorLike = {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
  $metadata?: unknown;
};

/**
 * `<destination>: <what went wrong>` in one line, keeping the original as `cause`: an endpoint that
 * does not answer is said so; a refusal (a missing queue, no permission) keeps the service's words.
 */
export function deliveryError(destination: string, err: unknown): DeliveryError {
  if (err instanceof DeliveryError) return err;
  const e = (typeof err === 'object' && err !== null ? err : {}) as ErrorLike;
  const message = (typeof e.message === 'string' ? e.message : String(err)).split('\n')[0] ?? '';
  const code = typeof e.code === 'string' ? e.code : /\b(E[A-Z]+)\b/.exec(message)?.[1];
  if (code && UNREACHABLE_CODES.has(code)) {
    return new DeliveryError(`${destination}: cannot reach ${unreachableWhere(e)} (${code}); the dead letter stays pending in the ledger`, {
      cause: err,
    });
  }
  const name = typeof e.name === 'string' && e.name !== 'Error' ? `${e.name}: ` : '';
  return new DeliveryError(`${destination}: ${name}${message}`, { cause: err });
}
