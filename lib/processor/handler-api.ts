/**
 * The user handler contract. Records arrive in chunks, in offset order, each with the idempotency
 * key `topic/partition/offset` (`topic/partition/offset#n` in the n-th re-creation of the topic).
 *
 * - `dynamodb-exactly-once`: `handle` returns the DynamoDB writes for the chunk and has no other side
 *   effects; the processor applies them with the progress advance in one transaction (I4), and may
 *   call `handle` again on a smaller part of the chunk to fit the transaction limits.
 * - `at-least-once`: `handle` performs its own side effects; progress is committed afterwards, so a
 *   crash in between redelivers the chunk (use the idempotency key to deduplicate).
 */
import type { KafkaRecord } from '../ports/range-reader';
import type { SinkWrite } from '../ports/ledger';

export type HandlerRecord = KafkaRecord & {
  /**
   * `topic/partition/offset`: stable across retries and redeliveries. A topic deleted and re-created
   * under its name restarts its offsets at 0, so records of its n-th re-creation (n > 0) carry
   * `topic/partition/offset#n`: a handler deduplicating by key never mistakes them for old ones.
   */
  idempotencyKey: string;
};

/** The idempotency key of a record of partition incarnation `incarnation` (absent = 0). */
export function idempotencyKeyOf(topic: string, partition: number, offset: number, incarnation?: number): string {
  return incarnation ? `${topic}/${partition}/${offset}#${incarnation}` : `${topic}/${partition}/${offset}`;
}

export type HandlerContext = {
  stream: string;
  /** The stream's sink table (exactly-once mode). */
  sinkTable?: string;
  /** Aborted when the invocation is about to time out. */
  signal: AbortSignal;
};

export type ExactlyOnceHandler = {
  mode: 'dynamodb-exactly-once';
  handle(records: HandlerRecord[], ctx: HandlerContext): SinkWrite[] | Promise<SinkWrite[]>;
};

export type AtLeastOnceHandler = {
  mode: 'at-least-once';
  handle(records: HandlerRecord[], ctx: HandlerContext): void | Promise<void>;
};

export type RecordsHandler = ExactlyOnceHandler | AtLeastOnceHandler;
