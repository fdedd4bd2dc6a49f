/**
 * The DynamoDB ledger's way of sending writes (layout 2): single UpdateItems and transactions with
 * their retries (a transaction refusing a concurrent write, throttling), and units of the ledger
 * rules sent through packed requests (requests.dynamodb.ts), request by request per item, side by
 * side across items.
 */
import { createHash } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
  TransactionConflictException,
  type CancellationReason,
} from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { mapWithConcurrency } from '../concurrency';
import { AppError, ConflictError, StoreError } from '../errors';
import { updateInput, type ItemWriteBuilder } from './expression.dynamodb';
import type { Item } from './items.dynamodb';
import { unitsOfItemWrite, unitsOfTransaction, type KeyPacer } from './key-pacing.dynamodb';
import { packRequests, sendRequest, wavesOf, type RequestTransport, type Unit, type UnitOutcome } from './requests.dynamodb';
import { CONFLICT_RETRIES, LEDGER_CONFLICT_RETRIES } from './retry.dynamodb';
import { clockWithSleep, retry } from '../retry';
import type { StepContext } from './steps.dynamodb';
import type { TxAction } from './transactions.dynamodb';
import type { TranslatingSend } from './errors.dynamodb';

type Send = TranslatingSend<{ doc: DynamoDBDocumentClient }>;

/** A single write's result: applied (with the item after it, when asked), or the image its condition failed on. */
export type OneResult = { ok: true; item?: Item } | { ok: false; image?: Item; retried: boolean };

export function createWriter(o: { table: string; send: Send; sleep: (ms: number) => Promise<void>; concurrency: number; pacer: KeyPacer }) {
  const { table, send, pacer } = o;
  const clock = clockWithSleep(o.sleep);

  /** The item a failed condition was judged on: the image returned, or (an emulator without it) a consistent read. */
  const imageOf = async (err: ConditionalCheckFailedException, key: Record<string, unknown>): Promise<Item | undefined> => {
    if (err.Item) return unmarshall(err.Item);
    const res = await send('re-read an item after a failed condition', ({ doc }) =>
      doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true })),
    );
    return res.Item as Item | undefined;
  };

  /** An UpdateItem (or PutItem) of one builder, retried while a transaction on the item refuses it. */
  const sendOne = (what: string, b: ItemWriteBuilder, returnNew = false): Promise<OneResult> =>
    retry(
      async () => {
        await pacer.reserve(new Map([unitsOfItemWrite(b.key, b.putItem, false)]));
        try {
          if (b.putItem) {
            const cond = b.conditionExpression ? { ConditionExpression: b.conditionExpression, ...b.attributes() } : {};
            await send(what, ({ doc }) =>
              doc.send(new PutCommand({ TableName: table, Item: b.putItem, ...cond, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })),
            );
            return { ok: true };
          }
          const res = await send(what, ({ doc }) => doc.send(new UpdateCommand(updateInput(table, b, returnNew))));
          return { ok: true, ...(res.Attributes ? { item: res.Attributes as Item } : {}) };
        } catch (err) {
          if (!(err instanceof ConditionalCheckFailedException)) throw err;
          return { ok: false, image: await imageOf(err, b.key), retried: (err.$metadata?.attempts ?? 1) > 1 };
        }
      },
      LEDGER_CONFLICT_RETRIES,
      {
        // A transaction writing the same item refuses a plain write while it runs, and the SDK does
        // not retry that: retried here as a transaction's conflict would be.
        isRetriable: (err) => err instanceof AppError && err.cause instanceof TransactionConflictException,
        giveUp: (err) => new ConflictError(`${what}: kept conflicting (TransactionConflict)`, { cause: err }),
        clock,
      },
    );

  /**
   * A transaction, sent again after a backoff while it is cancelled for a concurrent write or
   * throttling; the cancellation reasons (images included) when a condition failed.
   */
  const sendTransaction = async (
    what: string,
    actions: TxAction[],
  ): Promise<{ ok: true } | { ok: false; reasons: CancellationReason[] }> => {
    // Same content, same token: an SDK retry of a transaction that did commit is a no-op (10 min).
    const token = createHash('sha256').update(JSON.stringify(actions)).digest('hex').slice(0, 36);
    const codesOf = (err: TransactionCanceledException) => (err.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
    return retry(
      async () => {
        await pacer.reserve(unitsOfTransaction(actions));
        try {
          await send(what, ({ doc }) => doc.send(new TransactWriteCommand({ TransactItems: actions, ClientRequestToken: token })));
          return { ok: true } as const;
        } catch (err) {
          if (!(err instanceof TransactionCanceledException)) throw err;
          const codes = codesOf(err);
          if (codes.includes('ConditionalCheckFailed')) return { ok: false, reasons: err.CancellationReasons ?? [] } as const;
          const conflicted = codes.some((c) => c === 'TransactionConflict' || c === 'ThrottlingError');
          if (!conflicted) throw new StoreError(`${what} cancelled: ${codes.join(',')}`, { cause: err });
          throw err; // cancelled for a concurrent write or throttling: sent again
        }
      },
      LEDGER_CONFLICT_RETRIES,
      {
        isRetriable: (err) => err instanceof TransactionCanceledException,
        giveUp: (err) =>
          new ConflictError(`${what}: kept conflicting (${codesOf(err as TransactionCanceledException).join(',')})`, { cause: err }),
        clock,
      },
    );
  };

  const transport = (extra: Pick<RequestTransport, 'fenceCheck' | 'fenceEpoch'> = {}): RequestTransport => ({
    table,
    sendOne: (what, b) => sendOne(what, b),
    sendTransaction,
    ...extra,
  });

  /**
   * Sends one request, then whatever of it holds again (re-packed), until every unit has its outcome.
   * Not a retry of the same call: each round sends only the units a lost condition left pending (their
   * outcome is a value), at once; the rounds are bounded like the conflict retries.
   */
  const settle = async (ctx: StepContext, t: RequestTransport, what: string, units: Unit[], groupLimit: number) => {
    const outcomes = new Map<number, UnitOutcome>();
    let pending = units;
    for (let round = 0; pending.length; round++) {
      const again: Unit[] = [];
      for (const req of packRequests(ctx, pending, groupLimit)) {
        const res = await sendRequest(ctx, t, what, req);
        for (const [i, o] of res.outcomes) outcomes.set(i, o);
        again.push(...res.again);
      }
      if (round >= CONFLICT_RETRIES) for (const u of again.splice(0)) outcomes.set(u.index, 'condition-failed');
      pending = again;
    }
    return outcomes;
  };

  /**
   * Applies units through packed requests: waves of requests that share no item run side by side;
   * a request's units whose conditions still hold after it failed are sent again before the next
   * wave. Once a fence refuses a request, nothing more is sent: the rest are `fenced`.
   */
  const applyUnits = async (
    ctx: StepContext,
    t: RequestTransport,
    what: string,
    units: readonly Unit[],
    groupLimit: number,
  ): Promise<Map<number, UnitOutcome>> => {
    const outcomes = new Map<number, UnitOutcome>();
    let fenced = false;
    for (const wave of wavesOf(packRequests(ctx, units, groupLimit))) {
      if (fenced) break;
      const results = await mapWithConcurrency(wave, o.concurrency, (req) => settle(ctx, t, what, req.units, groupLimit));
      for (const res of results) for (const [i, out] of res) outcomes.set(i, out);
      fenced = [...outcomes.values()].includes('fenced');
    }
    for (const u of units) if (!outcomes.has(u.index)) outcomes.set(u.index, 'fenced');
    return outcomes;
  };

  return { sendOne, sendTransaction, transport, applyUnits };
}

export type Writer = ReturnType<typeof createWriter>;
