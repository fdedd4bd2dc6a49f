/**
 * The edge where DynamoDB's SDK errors become the project's (lib/errors.ts), as Kafka's become
 * `KafkaError`s at theirs: callers branch on the class (missing table, throttled, unreachable, other)
 * and read one line naming the service, the operation and the table, with the SDK's error as `cause`.
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

/**
 * Translates an SDK error into the project's error classes, in one line: `<what>: DynamoDB
 * [<operation> on] table <table> ...`. An `AppError` (already translated) is returned as it is.
 */
export function translateDynamoError(err: unknown, what: string, tableName: string, operation?: string): Error {
  if (err instanceof ResourceNotFoundException) {
    return new MissingResourceError(`${what}: DynamoDB table ${tableName} does not exist`, { cause: err });
  }
  const reach = dynamoSetupError(err, what);
  if (reach) return reach;
  const name = (err as { name?: string })?.name ?? '';
  const op = operation ?? (err !== null && typeof err === 'object' ? failedOperations.get(err) : undefined);
  const where = `DynamoDB ${op ? `${op} on ` : ''}table ${tableName}`;
  if (THROTTLE_NAMES.has(name)) {
    return new ThrottledError(`${what}: ${where} throttled after the SDK's retries${attemptsText(err)} (${name})`, { cause: err });
  }
  const message = String((err as Error)?.message ?? err).split('\n')[0];
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

/** The operation each failed request of a `namingOperations` client was, by its error (read by `translateDynamoError`). */
const failedOperations = new WeakMap<object, string>();

type Sender = { send(command: never, ...rest: never[]): Promise<unknown> };

/**
 * `client` (an SDK or document client) whose `send` calls `onError` with each failure and the
 * request's command. The caller's client is not changed: a document client shares its middleware
 * stack with the client it wraps, so nothing is added there.
 */
function withSend<C extends Sender>(client: C, onError: (err: unknown, command: unknown) => unknown): C {
  const wrapped = Object.create(client) as C;
  const send = client.send.bind(client) as (command: unknown, ...rest: unknown[]) => Promise<unknown>;
  Object.defineProperty(wrapped, 'send', {
    value: (command: unknown, ...rest: unknown[]) =>
      send(command, ...rest).catch((err: unknown) => {
        throw onError(err, command);
      }),
  });
  return wrapped;
}

/**
 * `client` remembering the operation of each failed request, so the `translateDynamoError` of a
 * caller that knows only what it was doing (`read meta of s1`) names the operation too.
 */
export function namingOperations<C extends Sender>(client: C): C {
  return withSend(client, (err, command) => {
    const op = operationOf(command);
    if (op && err !== null && typeof err === 'object') failedOperations.set(err, op);
    return err;
  });
}

/** `client` whose `send` translates failures at this edge (naming `what`, the operation and the table); lost conditions pass unchanged. */
export function translatingClient<C extends Sender>(client: C, tableName: string, what: string): C {
  return withSend(client, (err, command) =>
    isConditionOutcome(err) ? err : translateDynamoError(err, what, tableName, operationOf(command)),
  );
}
