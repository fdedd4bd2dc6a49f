/**
 * The edge where DynamoDB's SDK errors become the project's (lib/errors.ts), as Kafka's become
 * `KafkaError`s at theirs: callers branch on the class (missing table, throttled, unreachable, other)
 * and read one line naming the service, the operation and the table (or the endpoint, for a request on
 * none), with the SDK's error as `cause`. Clients translate through `translatingClient`, the one wrapper.
 * The SDK's own retries run first (the client's `maxAttempts`); what reaches here outlasted them.
 * A lost condition is not translated: it is an outcome the caller reads as a value (I2), and code
 * that tells a lost condition by the SDK's class or name (`ConditionalCheckFailedException`,
 * `TransactionCanceledException` and its cancellation reasons) keeps seeing the SDK's error.
 */
import { ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { AppError, ConfigurationError, MissingResourceError, StoreError, ThrottledError } from '../errors';
import { UNREACHABLE_CODES, unreachableWhere } from '../socket-errors';

const THROTTLE_NAMES = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded']);

/** SDK errors that report a condition the request named as not met: outcomes, passed on untranslated. */
const CONDITION_NAMES = new Set(['ConditionalCheckFailedException', 'TransactionCanceledException']);

/** Whether `err` is DynamoDB saying a condition was not met (the caller's value, never a failure to translate). */
export function isConditionOutcome(err: unknown): boolean {
  return CONDITION_NAMES.has((err as { name?: string } | undefined)?.name ?? '');
}

/** ` (4 attempts)`: how many the SDK made before giving up, when it retried. */
function attemptsText(err: unknown): string {
  const attempts = (err as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts;
  return attempts && attempts > 1 ? ` (${attempts} attempts)` : '';
}

/** What a request addressed: a table by name, or (a request on none, such as ListTables) the endpoint it went to. */
export type DynamoTarget = string | { endpoint: string };

/** `DynamoDB Update on table t` or `DynamoDB ListTables at http://...`: where a failure happened. */
function whereText(target: DynamoTarget, operation: string | undefined): string {
  if (typeof target !== 'string') return `DynamoDB ${operation ?? 'request'} at ${target.endpoint}`;
  return `DynamoDB ${operation ? `${operation} on ` : ''}table ${target}`;
}

/**
 * Translates an SDK error into the project's error classes, in one line: `<what>: DynamoDB
 * [<operation> on] table <table> ...` (or `... <operation> at <endpoint> ...`). An `AppError`
 * (already translated) is returned as it is.
 */
export function translateDynamoError(err: unknown, what: string, target: DynamoTarget, operation?: string): Error {
  const name = (err as { name?: string })?.name ?? '';
  const message = String((err as Error)?.message ?? err).split('\n')[0];
  const where = whereText(target, operation);
  if (err instanceof ResourceNotFoundException) {
    const missing = typeof target === 'string' ? `DynamoDB table ${target} does not exist` : `${where} failed: ${name}: ${message}`;
    return new MissingResourceError(`${what}: ${missing}`, { cause: err });
  }
  const reach = dynamoSetupError(err, what);
  if (reach) return reach;
  if (THROTTLE_NAMES.has(name)) {
    return new ThrottledError(`${what}: ${where} throttled after the SDK's retries${attemptsText(err)} (${name})`, { cause: err });
  }
  return new StoreError(`${what}: ${where} failed${attemptsText(err)}: ${name || 'error'}: ${message}`, { cause: err });
}

/**
 * A one-line error naming the setting to fix when `err` says DynamoDB was never reached: no region
 * (the SDK's "Region is missing") or a refused/unresolvable endpoint. Undefined for anything else.
 */
export function dynamoSetupError(err: unknown, what: string): AppError | undefined {
  if (err instanceof AppError) return err;
  const e = (err ?? {}) as { message?: unknown; code?: unknown; address?: unknown; port?: unknown; hostname?: unknown };
  if (e.message === 'Region is missing') {
    return new ConfigurationError(`${what}: DynamoDB has no AWS region: set AWS_REGION (or DYNAMODB_ENDPOINT for the local stack)`, {
      cause: err,
    });
  }
  const hint = '[DYNAMODB_ENDPOINT, else the AWS_REGION endpoint]';
  if (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) {
    return new StoreError(`${what}: cannot reach DynamoDB at ${unreachableWhere(e)} (${e.code}) ${hint}`, { cause: err });
  }
  // The SDK's retry layer turns a socket error it does not recognise as an Error (one from another
  // realm, e.g. a VM context) into a message-only wrapper: the code and address survive in the text.
  const m = typeof e.message === 'string' ? /\b(E[A-Z_]+) (\S+)$/.exec(e.message) : null;
  if (m && UNREACHABLE_CODES.has(m[1] as string)) {
    return new StoreError(`${what}: cannot reach DynamoDB at ${m[2]} (${m[1]}) ${hint}`, { cause: err });
  }
  return undefined;
}

/**
 * A DynamoDB request's operation as its command's class names it: `UpdateCommand` -> `Update`. The
 * SDK is not minified where it runs (the Lambda runtime's own; bundles keep names: serverless.yml).
 */
function operationOf(command: unknown): string | undefined {
  const name = (command as { constructor?: { name?: string } } | undefined)?.constructor?.name;
  return name && name !== 'Object' ? name.replace(/Command$/, '') : undefined;
}

type Sender = { send(command: never, ...rest: never[]): Promise<unknown> };

/**
 * `client` (an SDK or document client) whose `send` translates failures at this edge, naming `what`,
 * the request's operation and `target`; lost conditions pass unchanged. The caller's client is not
 * changed: a document client shares its middleware stack with the client it wraps, so nothing is
 * added there. A wrapper is a prototype link, cheap enough to make per request (`translatingSend`).
 */
export function translatingClient<C extends Sender>(client: C, target: DynamoTarget, what: string): C {
  const wrapped = Object.create(client) as C;
  const send = client.send.bind(client) as (command: unknown, ...rest: unknown[]) => Promise<unknown>;
  Object.defineProperty(wrapped, 'send', {
    value: (command: unknown, ...rest: unknown[]) =>
      send(command, ...rest).catch((err: unknown) => {
        throw isConditionOutcome(err) ? err : translateDynamoError(err, what, target, operationOf(command));
      }),
  });
  return wrapped;
}

/** Runs `fn` on clients whose failures name `what` (each of `clients` through `translatingClient`). */
export type TranslatingSend<Cs> = <T>(what: string, fn: (clients: Cs) => Promise<T>) => Promise<T>;

/** A `TranslatingSend` over `clients`, all addressing `target`: one wrapper per client and request. */
export function translatingSend<Cs extends Record<string, Sender>>(clients: Cs, target: DynamoTarget): TranslatingSend<Cs> {
  return (what, fn) => {
    const named = Object.fromEntries(Object.entries(clients).map(([k, c]) => [k, translatingClient(c, target, what)]));
    return fn(named as Cs);
  };
}
