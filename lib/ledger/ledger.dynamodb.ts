/**
 * Ledger adapter for DynamoDB (AWS SDK v3 document client), layout 2 (docs/ledger-schema.md): the
 * stream's META item and `P#` items under its own key, the changing state of its partitions and
 * their ranges in group items spread over keys of their own, finished ranges archived into `H#`
 * history items. The ledger rules' steps are compiled onto that layout (steps.dynamodb.ts) and sent
 * in as few requests as their items allow (requests.dynamodb.ts, writer.dynamodb.ts).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { translatingSend } from './errors.dynamodb';
import { CommitTooLargeError } from '../ports/commit-limits';
import { SinkConditionError } from '../ports/sink-write';
import type { Ledger } from '../ports/ledger';
import { sameIncarnation } from '../ports/ledger-rules/incarnation';
import { codec } from './items.dynamodb';
import { prefixQuery } from './keys.dynamodb';
import { DYNAMODB_LIMITS } from './limits.dynamodb';
import { createDynamoOutbox } from './outbox.dynamodb';
import { createMarkedWriter } from './marked-writes.dynamodb';
import { sinkAction } from './sink.dynamodb';
import { redriveAction } from './transactions.dynamodb';
import { createLedgerReads } from './reads.dynamodb';
import { createKeyPacer } from './key-pacing.dynamodb';
import { createWriter } from './writer.dynamodb';
import { createMetaMethods } from './meta.dynamodb';
import { createRangeWrites } from './range-writes.dynamodb';
import { createPlanWrites } from './plan.dynamodb';
import { historyQuery, rangesOfHistory } from './history.dynamodb';

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

/** Creates the DynamoDB ledger; the client is the caller's (endpoint, credentials, retries). */
export function createDynamoLedger(opts: DynamoLedgerOptions): Ledger {
  const table = opts.tableName;
  const doc = DynamoDBDocumentClient.from(opts.client, { marshallOptions: { removeUndefinedValues: true } });
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  // Every request goes out through `send` and fails naming what the ledger was doing (`read meta of
  // s1`); a lost condition passes as it is, the caller's value (writer.dynamodb.ts reads it).
  const send = translatingSend({ client: opts.client, doc }, table);
  const markedWriter = createMarkedWriter({
    send,
    sleep,
    concurrency: opts.markedWriteConcurrency ?? MARKED_WRITE_CONCURRENCY,
  });
  const reads = createLedgerReads(table, send);
  const pacer = createKeyPacer({ sleep });
  const writer = createWriter({ table, send, sleep, concurrency: opts.concurrency ?? 8, pacer });
  const queryPrefix = (stream: string, prefix: string) =>
    reads.queryAll(`read ${prefix} items of ${stream}`, prefixQuery(table, stream, prefix));

  return {
    ...createDynamoOutbox(table, send),
    ...createMetaMethods(table, send, writer),
    ...createRangeWrites(table, reads, writer),
    ...createPlanWrites(table, send, reads, writer, pacer),
    limits: DYNAMODB_LIMITS,

    async readPartitions(stream) {
      return (await reads.readAll(stream)).map((r) => r.partition);
    },
    async readPartitionsAndRanges(stream) {
      const all = await reads.readAll(stream);
      return { partitions: all.map((r) => r.partition), ranges: all.flatMap((r) => r.ranges) };
    },
    async readRanges(stream) {
      return (await reads.readAll(stream)).flatMap((r) => r.ranges);
    },
    async readOpenRanges(stream) {
      return (await reads.readAll(stream)).flatMap((r) => r.ranges.filter((x) => x.status !== 'done'));
    },
    async readRangeHistory(stream, o = {}) {
      return rangesOfHistory(stream, await reads.queryAll(`read range history of ${stream}`, historyQuery(table, stream, o.sinceMs)));
    },
    async readRange(stream, r) {
      const [read] = await reads.readSome(stream, [r]);
      return read?.ranges.find((x) => x.from === r.from && sameIncarnation(x, r));
    },
    async readPartition(stream, topic, partition) {
      return (await reads.readSome(stream, [{ topic, partition }]))[0]?.partition;
    },
    async readDataLoss(stream) {
      return (await queryPrefix(stream, 'L#')).map(codec.lossFromItem);
    },
    async readClosedIncarnations(stream) {
      return (await queryPrefix(stream, 'I#')).map(codec.closedFromItem);
    },
    async listDeadLetters(stream) {
      return (await queryPrefix(stream, 'D#')).map(codec.deadLetterFromItem);
    },

    async applyMarkedSinkWrites({ mark, writes }) {
      if (writes.length > DYNAMODB_LIMITS.maxMarkedWrites) throw new CommitTooLargeError(writes.length, DYNAMODB_LIMITS);
      return markedWriter.apply(`write ${writes.length} sink items of ${mark.topic}/${mark.partition} up to ${mark.until}`, mark, writes);
    },

    async redriveDeadLetter({ stream, topic, partition, offset, incarnation, nowMs, sinkWrites = [] }) {
      const items = [redriveAction(table, stream, { topic, partition, offset, incarnation }, nowMs), ...sinkWrites.map(sinkAction)];
      const res = await writer.sendTransaction(`re-drive dead letter ${topic}/${partition}/${offset}`, items);
      if (res.ok) return 'applied';
      if (res.reasons[0]?.Code === 'ConditionalCheckFailed') return 'condition-failed';
      throw new SinkConditionError(`a sink write's condition failed while re-driving ${topic}/${partition}/${offset}; nothing was applied`);
    },
  };
}
