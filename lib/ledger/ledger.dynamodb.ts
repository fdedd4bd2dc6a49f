/**
 * Ledger adapter for DynamoDB (AWS SDK v3 document client). Planner writes go out as
 * TransactWriteItems of one fence ConditionCheck plus up to 99 actions, so a whole run costs about
 * `actions / 99` requests and a fenced-out planner can never write.
 */
import { UNREACHABLE_CODES, unreachableWhere } from '../socket-errors';
import { createHash } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  ResourceNotFoundException,
  TransactionCanceledException,
  TransactionConflictException,
  type CancellationReason,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { maySucceed, type LoopRenewal, type LoopTake, type PlannerLoopState } from '../ports/planner-loop';
import { recordSuccessorUpdate, releasePlannerLoopUpdate, renewPlannerLoopUpdate, splitLoop, takePlannerLoopUpdate } from './loop.dynamodb';
import { mapWithConcurrency } from '../concurrency';
import { AppError, ConfigurationError, ConflictError, MissingResourceError, StoreError, ThrottledError } from '../errors';
import { CommitTooLargeError, fitsOneCommit } from '../ports/commit-limits';
import { plannerFence } from '../ports/ledger-rules/fence';
import { meets } from '../ports/ledger-rules/item-step';
import { holdsLease, lostLeaseOutcome } from '../ports/ledger-rules/lease';
import { rewindDeadLetters, rewindRanges, rewindScanFrom } from '../ports/ledger-rules/rewind';
import { SinkConditionError } from '../ports/sink-write';
import type { LeaseOutcome, Ledger, PlannerLease, PlanWrite, ProcessorWriteOutcome, RewindOutcome, WriteOutcome } from '../ports/ledger';
import type { RangeState } from '../ports/ledger-state';
import { codec } from './items.dynamodb';
import { keys, openRangesQuery, prefixQuery, spanQuery } from './keys.dynamodb';
import { DYNAMODB_LIMITS } from './limits.dynamodb';
import { createDynamoOutbox } from './outbox.dynamodb';
import { createMarkedWriter } from './marked-writes.dynamodb';
import { backoffMs, CONFLICT_RETRIES } from './retry.dynamodb';
import { sinkAction } from './sink.dynamodb';
import {
  deleteRangeAction,
  fenceCheck,
  fencedChangeAction,
  planWriteActions,
  redriveAction,
  rewindPartitionAction,
  stepActions,
  stepUpdate,
  type TxAction,
} from './transactions.dynamodb';
import { acquirePlannerLeaseUpdate, markMetaOnceUpdate, releasePlannerLeaseUpdate, takeLeaseUpdate } from './updates.dynamodb';
import { beginBatchStep, commitChunkSteps, completeRangeSteps, failRangeStep, releaseRangeStep } from '../ports/ledger-rules/range-write';

const MAX_TX_ACTIONS = 100;

export type DynamoLedgerOptions = {
  client: DynamoDBClient;
  tableName: string;
  /** Backoff between retries of a transaction that hit a concurrent write (TransactionConflict). */
  sleep?: (ms: number) => Promise<void>;
  /** Planner transactions in flight at once (default 8). */
  concurrency?: number;
  /** Marked sink writes of one `applyMarkedSinkWrites` call in flight at once (default MARKED_WRITE_CONCURRENCY). */
  markedWriteConcurrency?: number;
};

/** Requests (reads, statement batches, single UpdateItems) one `applyMarkedSinkWrites` call keeps in flight. */
export const MARKED_WRITE_CONCURRENCY = 8;

const THROTTLE_NAMES = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded']);

/** Translates an SDK error into the project's error classes (the edge of the adapter). */
export function translateDynamoError(err: unknown, what: string, tableName: string): Error {
  if (err instanceof ResourceNotFoundException) {
    return new MissingResourceError(`${what}: DynamoDB table ${tableName} does not exist`, { cause: err });
  }
  const reach = dynamoSetupError(err, what);
  if (reach) return reach;
  const name = (err as { name?: string })?.name ?? '';
  if (THROTTLE_NAMES.has(name)) return new ThrottledError(`${what}: DynamoDB throttled after retries (${name})`, { cause: err });
  return new StoreError(`${what}: ${name || 'error'}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
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

type ItemKey = string;
const itemKeyOf = (a: TxAction): ItemKey => {
  const k = (a.Put?.Item ?? a.Update?.Key ?? a.Delete?.Key ?? a.ConditionCheck?.Key) as { pk: string; sk: string };
  return `${k.pk}|${k.sk}`;
};

/**
 * Groups writes into transactions of at most 99 actions beside the fence, each touching an item
 * once. A write goes into the first transaction with room that comes after every transaction
 * touching one of its items, so writes of one item keep their order while writes of other items
 * fill the same transactions: the ranges of a split partition (consecutive writes on one cursor)
 * spread over as many transactions as they have pieces, not one transaction per range.
 */
function batchWrites(table: string, stream: string, writes: PlanWrite[]): Batch[] {
  const batches: Array<{ writes: Batch; size: number }> = [];
  /** Per item, the index of the last transaction touching it. */
  const lastOf = new Map<ItemKey, number>();
  writes.forEach((w, index) => {
    const actions = planWriteActions(table, stream, w);
    const itemKeys = actions.map(itemKeyOf);
    let at = Math.max(-1, ...itemKeys.map((k) => lastOf.get(k) ?? -1)) + 1;
    while (at < batches.length && (batches[at] as { size: number }).size + actions.length > MAX_TX_ACTIONS - 1) at++;
    if (at === batches.length) batches.push({ writes: [], size: 0 });
    const b = batches[at] as (typeof batches)[number];
    b.writes.push({ index, actions });
    b.size += actions.length;
    for (const k of itemKeys) lastOf.set(k, at);
  });
  return batches.map((b) => b.writes);
}

type Batch = Array<{ index: number; actions: TxAction[] }>;

/** How one caller of the transaction retry loop builds its transaction and judges a cancellation. */
type TxRetryPolicy<T> = {
  /** The transaction to send now; undefined when nothing is left to send. */
  items: () => TxAction[] | undefined;
  /** The result once the transaction committed (or nothing was left). */
  applied: () => T;
  /** A cancellation: finish with a value, or retry at once or after a backoff (or throw). */
  cancelled: (
    reasons: CancellationReason[],
    attempt: number,
    err: TransactionCanceledException,
  ) => { done: T } | { retry: 'backoff' | 'now' };
};

/** Splits batches into waves whose transactions share no item. */
function waves(batches: Batch[]): Batch[][] {
  const out: Batch[][] = [];
  let current: Batch[] = [];
  let touched = new Set<ItemKey>();
  for (const b of batches) {
    const itemKeys = b.flatMap((w) => w.actions.map(itemKeyOf));
    if (itemKeys.some((k) => touched.has(k))) {
      out.push(current);
      current = [];
      touched = new Set();
    }
    current.push(b);
    itemKeys.forEach((k) => touched.add(k));
  }
  if (current.length) out.push(current);
  return out;
}

/** Creates the DynamoDB ledger; the client is the caller's (endpoint, credentials, retries). */
export function createDynamoLedger(opts: DynamoLedgerOptions): Ledger {
  const table = opts.tableName;
  const doc = DynamoDBDocumentClient.from(opts.client, { marshallOptions: { removeUndefinedValues: true } });
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  const send = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException || err instanceof TransactionCanceledException) throw err;
      throw translateDynamoError(err, what, table);
    }
  };
  const markedWriter = createMarkedWriter({
    client: opts.client,
    doc,
    send,
    sleep,
    concurrency: opts.markedWriteConcurrency ?? MARKED_WRITE_CONCURRENCY,
  });

  const queryAll = async (what: string, input: QueryCommandInput): Promise<Record<string, unknown>[]> => {
    const items: Record<string, unknown>[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await send(what, () => doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start })));
      items.push(...((page.Items ?? []) as Record<string, unknown>[]));
      start = page.LastEvaluatedKey as Record<string, unknown> | undefined;
    } while (start);
    return items;
  };

  /** Items of the stream whose sort key lies in `[lo, hi]` (strongly consistent). */
  const querySpan = (stream: string, span: { lo: string; hi: string }) =>
    queryAll(`read ${span.lo}.. of ${stream}`, spanQuery(table, stream, span));

  const queryPrefix = (stream: string, prefix: string) => queryAll(`read ${prefix} items of ${stream}`, prefixQuery(table, stream, prefix));

  /**
   * The one transaction retry loop: sends `tx.items()` (until it has none left) and lets the caller
   * judge each cancellation: finish with a value, retry at once, or retry after a jittered backoff.
   */
  const transactLoop = async <T>(what: string, tx: TxRetryPolicy<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      const items = tx.items();
      if (!items) return tx.applied();
      // Same content, same token: an SDK retry of a transaction that did commit is a no-op (10 min).
      const token = createHash('sha256').update(JSON.stringify(items)).digest('hex').slice(0, 36);
      try {
        await send(what, () => doc.send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: token })));
        return tx.applied();
      } catch (err) {
        if (!(err instanceof TransactionCanceledException)) throw err;
        const step = tx.cancelled(err.CancellationReasons ?? [], attempt, err);
        if ('done' in step) return step.done;
        if (step.retry === 'backoff') await sleep(backoffMs(attempt));
      }
    }
  };

  /**
   * Sends one transaction, retrying whenever it was cancelled for another reason than a failed
   * condition (a concurrent write, throttling); returns the cancellation codes when a condition failed.
   */
  const transact = (what: string, items: TxAction[]): Promise<{ ok: true } | { ok: false; codes: string[] }> =>
    transactLoop<{ ok: true } | { ok: false; codes: string[] }>(what, {
      items: () => items,
      applied: () => ({ ok: true }),
      cancelled: (reasons, attempt, err) => {
        const codes = reasons.map((r) => r.Code ?? 'None');
        if (codes.includes('ConditionalCheckFailed')) return { done: { ok: false, codes } };
        if (attempt >= CONFLICT_RETRIES) throw new ConflictError(`${what}: kept conflicting (${codes.join(',')})`, { cause: err });
        return { retry: 'backoff' };
      },
    });

  /** Sets a one-time timestamp on the stream's META item, fenced by the planner epoch. */
  const markMetaOnce = async (
    input: Parameters<Ledger['markStreamStarted']>[0],
    attribute: 'startedAtMs' | 'finishedAtMs',
  ): Promise<WriteOutcome> => {
    const { stream, epoch, ownerToken } = input;
    try {
      await send(`set ${attribute} of ${stream}`, () => doc.send(new UpdateCommand(markMetaOnceUpdate(table, input, attribute))));
      return 'applied';
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // The META item the condition failed on: still ours means the mark was set already.
      const mine = err.Item !== undefined && meets(unmarshall(err.Item), plannerFence(epoch, ownerToken));
      return mine ? 'condition-failed' : 'fenced';
    }
  };

  /** A conditional UpdateItem whose failed condition means the lease is gone. */
  const updateHoldingLease = async (
    what: string,
    input: ConstructorParameters<typeof UpdateCommand>[0],
    landed: (old: RangeState) => boolean = () => false,
  ): Promise<ProcessorWriteOutcome> => {
    for (let attempt = 0; ; attempt++) {
      try {
        await send(what, () => doc.send(new UpdateCommand(input)));
        return 'applied';
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException) {
          // When the SDK sent the request more than once, an attempt whose answer was lost may have
          // applied it: the item the condition failed on (ALL_OLD) then shows this write, no lost lease.
          const retried = (err.$metadata?.attempts ?? 1) > 1;
          const old = retried && err.Item ? codec.rangeFromItem(unmarshall(err.Item)) : undefined;
          return old && landed(old) ? 'applied' : 'lease-lost';
        }
        // A transaction writing the same item (a planner's dispatch mark) refuses a plain write while
        // it runs, and the SDK does not retry that: retried here as a transaction's conflict would be.
        if (!(err instanceof AppError && err.cause instanceof TransactionConflictException)) throw err;
        if (attempt >= CONFLICT_RETRIES) throw new ConflictError(`${what}: kept conflicting (TransactionConflict)`, { cause: err });
        await sleep(backoffMs(attempt));
      }
    }
  };

  /**
   * Sends one planner transaction (the fence first, then the batch's writes) and returns each write's
   * outcome: all `fenced` when the fence failed, `condition-failed` for writes whose own condition
   * failed; the others are sent again, after a backoff when a concurrent write or throttling cancelled them.
   */
  const sendBatch = async (stream: string, epoch: number, ownerToken: string, batch: Batch): Promise<Map<number, WriteOutcome>> => {
    const out = new Map<number, WriteOutcome>();
    let pending = batch;
    const what = `plan transaction for ${stream}`;
    return transactLoop<Map<number, WriteOutcome>>(what, {
      items: () => (pending.length > 0 ? [fenceCheck(table, stream, epoch, ownerToken), ...pending.flatMap((b) => b.actions)] : undefined),
      applied: () => {
        pending.forEach((b) => out.set(b.index, 'applied'));
        return out;
      },
      cancelled: (reasons, attempt, err) => {
        if (reasons[0]?.Code === 'ConditionalCheckFailed') {
          pending.forEach((b) => out.set(b.index, 'fenced'));
          return { done: out };
        }
        let pos = 1;
        const retry: Batch = [];
        for (const b of pending) {
          const codes = b.actions.map((_, i) => reasons[pos + i]?.Code ?? 'None');
          pos += b.actions.length;
          if (codes.includes('ConditionalCheckFailed')) out.set(b.index, 'condition-failed');
          else retry.push(b);
        }
        const conflicted = reasons.some((r) => r.Code === 'TransactionConflict' || r.Code === 'ThrottlingError');
        if (conflicted && attempt >= CONFLICT_RETRIES) {
          throw new ConflictError(`${what} kept conflicting after ${attempt + 1} tries`, { cause: err });
        }
        if (!conflicted && retry.length === pending.length) {
          // Cancelled for a reason that is neither a condition nor a conflict: do not loop.
          throw new StoreError(`${what} cancelled: ${reasons.map((r) => r.Code).join(',')}`, { cause: err });
        }
        pending = retry;
        return { retry: conflicted ? 'backoff' : 'now' };
      },
    });
  };

  /** Records `ownerToken` as the successor of `holder`'s loop; the loop as it is after (or as found, when the holder changed). */
  const recordSuccessor = async (stream: string, holder: string, ownerToken: string): Promise<PlannerLoopState> => {
    try {
      const res = await send(`wait for planner loop of ${stream}`, () =>
        doc.send(new UpdateCommand(recordSuccessorUpdate(table, { stream, holder, ownerToken }))),
      );
      return splitLoop(res.Attributes ?? {}).loop ?? {};
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      return splitLoop(err.Item ? unmarshall(err.Item) : {}).loop ?? {};
    }
  };

  return {
    ...createDynamoOutbox(doc, table, send),
    limits: DYNAMODB_LIMITS,

    async readMeta(stream) {
      const res = await send(`read meta of ${stream}`, () =>
        doc.send(new GetCommand({ TableName: table, Key: keys.meta(stream), ConsistentRead: true })),
      );
      return res.Item ? codec.metaFromItem(res.Item) : undefined;
    },

    async acquirePlannerLease(input): Promise<PlannerLease> {
      try {
        const res = await send(`acquire planner lease of ${input.stream}`, () =>
          doc.send(new UpdateCommand(acquirePlannerLeaseUpdate(table, input))),
        );
        const meta = codec.metaFromItem(res.Attributes ?? {});
        return { acquired: true, epoch: meta.epoch, meta };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        const old = (err.Item ?? {}) as { ownerToken?: { S?: string }; leaseExpiresAtMs?: { N?: string } };
        return {
          acquired: false,
          holder: old.ownerToken?.S ?? 'unknown',
          leaseExpiresAtMs: Number(old.leaseExpiresAtMs?.N ?? 0),
        };
      }
    },

    markStreamStarted: (input) => markMetaOnce(input, 'startedAtMs'),

    async takePlannerLoop(input): Promise<LoopTake> {
      try {
        const res = await send(`take planner loop of ${input.stream}`, () =>
          doc.send(new UpdateCommand(takePlannerLoopUpdate(table, input))),
        );
        return { taken: true, previous: splitLoop(res.Attributes ?? {}).loop ?? {} };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        const holder = splitLoop(err.Item ? unmarshall(err.Item) : {}).loop ?? {};
        if (!input.asSuccessor || holder.ownerToken === undefined || !maySucceed(holder, input.ownerToken)) return { taken: false, holder };
        return { taken: false, holder: await recordSuccessor(input.stream, holder.ownerToken, input.ownerToken) };
      }
    },

    async renewPlannerLoop(input): Promise<LoopRenewal> {
      try {
        const res = await send(`renew planner loop of ${input.stream}`, () =>
          doc.send(new UpdateCommand(renewPlannerLoopUpdate(table, input))),
        );
        const successor = splitLoop(res.Attributes ?? {}).loop?.successor;
        return successor !== undefined ? { held: true, successor } : { held: true };
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException) return { held: false };
        throw err;
      }
    },

    async releasePlannerLoop(input) {
      try {
        await send(`release planner loop of ${input.stream}`, () => doc.send(new UpdateCommand(releasePlannerLoopUpdate(table, input))));
        return 'applied';
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException) return 'condition-failed';
        throw err;
      }
    },

    async releasePlannerLease(input) {
      try {
        await send(`release planner lease of ${input.stream}`, () => doc.send(new UpdateCommand(releasePlannerLeaseUpdate(table, input))));
        return 'applied';
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException) return 'fenced';
        throw err;
      }
    },

    async readPartitions(stream) {
      return (await queryPrefix(stream, 'P#')).map(codec.partitionFromItem);
    },

    async readOpenRanges(stream) {
      const items = await queryAll(`read open ranges of ${stream}`, openRangesQuery(table, stream));
      // The index is eventually consistent: a range done a moment ago may still be listed.
      return items.map(codec.rangeFromItem).filter((r) => r.status !== 'done');
    },

    async readRange(stream, r) {
      const res = await send(`read range ${r.topic}/${r.partition}/${r.from}`, () =>
        doc.send(new GetCommand({ TableName: table, Key: keys.range(stream, r), ConsistentRead: true })),
      );
      return res.Item ? codec.rangeFromItem(res.Item) : undefined;
    },

    async readDataLoss(stream) {
      return (await queryPrefix(stream, 'L#')).map(codec.lossFromItem);
    },

    async readClosedIncarnations(stream) {
      return (await queryPrefix(stream, 'I#')).map(codec.closedFromItem);
    },

    async readPartition(stream, topic, partition) {
      const res = await send(`read partition ${topic}/${partition}`, () =>
        doc.send(new GetCommand({ TableName: table, Key: keys.partition(stream, topic, partition), ConsistentRead: true })),
      );
      return res.Item ? codec.partitionFromItem(res.Item) : undefined;
    },

    async takeRangeLease({
      stream,
      topic,
      partition,
      from,
      incarnation,
      until,
      leaseToken,
      nowMs,
      leaseMs,
      maxAttempts,
    }): Promise<LeaseOutcome> {
      const key = keys.range(stream, { topic, partition, from, incarnation });
      try {
        const res = await send(`take lease of ${topic}/${partition}/${from}`, () =>
          doc.send(new UpdateCommand(takeLeaseUpdate(table, key, { until, leaseToken, nowMs, leaseMs, maxAttempts }))),
        );
        return { kind: 'taken', range: codec.rangeFromItem(res.Attributes ?? {}) };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        // The image the condition failed on (one round trip); an emulator without it gets a re-read.
        let old = err.Item ? unmarshall(err.Item) : undefined;
        if (!old) {
          const res = await send('re-read range after a lost lease race', () =>
            doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true })),
          );
          old = res.Item;
        }
        return lostLeaseOutcome(old ? codec.rangeFromItem(old) : undefined, { until, nowMs, maxAttempts });
      }
    },

    async commitChunk(input) {
      const { range, expectProgress, to, sinkWrites = [] } = input;
      if (!fitsOneCommit(sinkWrites, DYNAMODB_LIMITS)) throw new CommitTooLargeError(sinkWrites.length, DYNAMODB_LIMITS);
      const [progress, ...created] = commitChunkSteps(input);
      const what = `commit ${range.topic}/${range.partition} ${expectProgress}->${to}`;
      // Progress alone (at-least-once commits, chunks without writes): one item is atomic on its own,
      // and a conditional UpdateItem costs one write unit where a transaction costs two.
      if (created.length === 0 && sinkWrites.length === 0) {
        // Unlike a transaction (its request token), a plain UpdateItem retried by the SDK after it
        // applied fails its `progress = expect` condition: recognised here by the item it failed on.
        const landed = (old: RangeState) => holdsLease(old, range.leaseToken) && old.progress === to && old.pendingUntil === undefined;
        return updateHoldingLease(what, stepUpdate(table, range.stream, progress), landed);
      }
      const items: TxAction[] = [
        { Update: stepUpdate(table, range.stream, progress) },
        ...sinkWrites.map(sinkAction),
        ...stepActions(table, range.stream, created),
      ];
      const res = await transact(what, items);
      if (res.ok) return 'applied';
      if (res.codes[0] === 'ConditionalCheckFailed') return 'lease-lost';
      const failed = res.codes.map((c, i) => (c === 'ConditionalCheckFailed' ? i : -1)).filter((i) => i > 0);
      throw new SinkConditionError(
        `a sink write's condition failed (actions ${failed.join(', ')} of ` +
          `the chunk ${expectProgress}->${to}); nothing of the chunk was applied`,
      );
    },

    async beginBatch(input) {
      const { range, expectProgress, until } = input;
      return updateHoldingLease(
        `begin batch ${range.topic}/${range.partition} ${expectProgress}->${until}`,
        stepUpdate(table, range.stream, beginBatchStep(input)),
      );
    },

    async applyMarkedSinkWrites({ mark, writes }) {
      if (writes.length > DYNAMODB_LIMITS.maxMarkedWrites) throw new CommitTooLargeError(writes.length, DYNAMODB_LIMITS);
      return markedWriter.apply(`write ${writes.length} sink items of ${mark.topic}/${mark.partition} up to ${mark.until}`, mark, writes);
    },

    async completeRange(input) {
      const { range, advancePartition } = input;
      const what = `complete ${range.topic}/${range.partition}/${range.from}`;
      let res = await transact(what, stepActions(table, range.stream, completeRangeSteps(input, advancePartition)));
      if (!res.ok && res.codes[0] !== 'ConditionalCheckFailed' && advancePartition) {
        // Committed offset is not at this range's start (split ranges finishing out of order): finish
        // the range alone; the planner advances the committed offset over the finished prefix.
        res = await transact(what, stepActions(table, range.stream, completeRangeSteps(input, false)));
      }
      return res.ok ? 'applied' : 'lease-lost';
    },

    async failRange(input) {
      const { range } = input;
      return updateHoldingLease(
        `fail ${range.topic}/${range.partition}/${range.from}`,
        stepUpdate(table, range.stream, failRangeStep(input)),
      );
    },

    async releaseRange(input) {
      const { range } = input;
      return updateHoldingLease(
        `release ${range.topic}/${range.partition}/${range.from}`,
        stepUpdate(table, range.stream, releaseRangeStep(input)),
      );
    },

    async listDeadLetters(stream) {
      return (await queryPrefix(stream, 'D#')).map(codec.deadLetterFromItem);
    },

    async rewindPartitions({ stream, epoch, ownerToken, partitions, change }): Promise<RewindOutcome> {
      // 0. Fenced out already: say so before anything else (the transactions check it again).
      const metaRes = await send(`read meta of ${stream}`, () =>
        doc.send(new GetCommand({ TableName: table, Key: keys.meta(stream), ConsistentRead: true })),
      );
      const meta = metaRes.Item ? codec.metaFromItem(metaRes.Item) : undefined;
      if (!meta || meta.epoch !== epoch || meta.ownerToken !== ownerToken) return { outcome: 'fenced' };
      // 1. What lies at or after each cursor: the rewind rules say what blocks and what goes.
      const perPartition: TxAction[][] = [];
      const cleanup: TxAction[] = [];
      let abandoned = 0;
      let removedRanges = 0;
      let removedDeadLetters = 0;
      for (const p of partitions) {
        const span = keys.partitionSpan('R', p.topic, p.partition, rewindScanFrom(p), p.incarnation);
        const plan = rewindRanges(p, (await querySpan(stream, span)).map(codec.rangeFromItem));
        if (plan.blocked) return { outcome: 'condition-failed', reason: plan.reason };
        abandoned += plan.abandonParked.length;
        perPartition.push([
          rewindPartitionAction(table, stream, p),
          ...plan.abandonParked.map((r) => deleteRangeAction(table, stream, r, 'parked')),
        ]);
        removedRanges += plan.removeDone.length;
        for (const r of plan.removeDone) cleanup.push(deleteRangeAction(table, stream, r, 'done'));
        const stored = await querySpan(stream, keys.partitionSpan('D', p.topic, p.partition, p.to, p.incarnation));
        const dead = rewindDeadLetters(p, stored.map(codec.deadLetterFromItem));
        removedDeadLetters += dead.length;
        for (const d of dead) cleanup.push({ Delete: { TableName: table, Key: keys.deadLetter(stream, d) } });
      }

      // 2. Cursors, parked ranges and the change record: one transaction when it fits (the usual case);
      //    the META update carries the fence, and comes last when several transactions are needed.
      const groups: TxAction[][] = [];
      let current: TxAction[] = [];
      for (const actions of perPartition) {
        if (current.length + actions.length > MAX_TX_ACTIONS - 1) {
          groups.push(current);
          current = [];
        }
        current.push(...actions);
      }
      groups.push(current);
      for (let i = 0; i < groups.length; i++) {
        const last = i === groups.length - 1;
        const head = last ? fencedChangeAction(table, stream, epoch, ownerToken, change) : fenceCheck(table, stream, epoch, ownerToken);
        const res = await transact(`rewind ${stream}`, [head, ...(groups[i] as TxAction[])]);
        if (!res.ok) {
          if (res.codes[0] === 'ConditionalCheckFailed') return { outcome: 'fenced' };
          return { outcome: 'condition-failed', reason: 'a partition or parked range changed since it was read' };
        }
      }

      // 3. History cleanup, fenced too; an interrupted rewind is completed by running it again.
      for (let i = 0; i < cleanup.length; i += MAX_TX_ACTIONS - 1) {
        const res = await transact(`rewind ${stream} (cleanup)`, [
          fenceCheck(table, stream, epoch, ownerToken),
          ...cleanup.slice(i, i + MAX_TX_ACTIONS - 1),
        ]);
        if (!res.ok && res.codes[0] === 'ConditionalCheckFailed') return { outcome: 'fenced' };
        // A done range deleted by someone else meanwhile is what we wanted anyway.
      }
      return { outcome: 'applied', removedRanges, abandonedParkedRanges: abandoned, removedDeadLetters };
    },

    async recordChange({ stream, epoch, ownerToken, change }) {
      const res = await transact(`record change on ${stream}`, [fencedChangeAction(table, stream, epoch, ownerToken, change)]);
      return res.ok ? 'applied' : 'fenced';
    },

    markStreamFinished: (input) => markMetaOnce(input, 'finishedAtMs'),

    async redriveDeadLetter({ stream, topic, partition, offset, incarnation, nowMs, sinkWrites = [] }) {
      const items = [redriveAction(table, stream, { topic, partition, offset, incarnation }, nowMs), ...sinkWrites.map(sinkAction)];
      const res = await transact(`re-drive dead letter ${topic}/${partition}/${offset}`, items);
      if (res.ok) return 'applied';
      if (res.codes[0] === 'ConditionalCheckFailed') return 'condition-failed';
      throw new SinkConditionError(`a sink write's condition failed while re-driving ${topic}/${partition}/${offset}; nothing was applied`);
    },

    async applyPlan({ stream, epoch, ownerToken, writes }) {
      const outcomes: WriteOutcome[] = new Array<WriteOutcome>(writes.length).fill('fenced');
      // Transactions of one wave touch distinct items, so they may run at once; a later wave
      // touches an item of an earlier one and waits for it (order per item is kept).
      for (const wave of waves(batchWrites(table, stream, writes))) {
        const results = await mapWithConcurrency(wave, opts.concurrency ?? 8, (batch) => sendBatch(stream, epoch, ownerToken, batch));
        let fenced = false;
        for (const res of results) {
          for (const [i, o] of res) {
            outcomes[i] = o;
            if (o === 'fenced') fenced = true;
          }
        }
        if (fenced) break; // the rest stay 'fenced'
      }
      return outcomes;
    },
  };
}
