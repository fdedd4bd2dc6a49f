/**
 * The user handler contract. Records arrive in chunks, in offset order, each with the idempotency
 * key `topic/partition/offset` (`topic/partition/offset#n` in the n-th re-creation of the topic).
 *
 * - `dynamodb-exactly-once`, per chunk: `handle` returns the DynamoDB writes for the chunk and has no
 *   other side effects; the processor applies them with the progress advance in one transaction (I4),
 *   and may call `handle` again on a smaller part of the chunk to fit the transaction limits.
 * - `dynamodb-exactly-once`, folded (`fold`, built with `foldHandler`): the processor folds the
 *   records of a whole range (or of a large batch of it) per sink item and writes each item about once
 *   per batch; every write is guarded by the item's applied-offset mark for the partition, so each
 *   record still counts once (docs/architecture.md, "Folded exactly-once batches").
 * - `at-least-once`: `handle` performs its own side effects; progress is committed afterwards, on an
 *   interval (`processor.commitEveryRecords` / `commitEveryMs`), so a crash redelivers what was handled
 *   since the last commit (use the idempotency key to deduplicate).
 */
import { AppError } from '../errors';
import type { KafkaRecord } from '../ports/range-reader';
import type { SinkUpdate, SinkWrite } from '../ports/sink-write';

export type HandlerRecord = KafkaRecord & {
  /**
   * `topic/partition/offset`: stable across retries and redeliveries. A topic deleted and re-created
   * under its name restarts its offsets at 0, so records of its n-th re-creation (n > 0) carry
   * `topic/partition/offset#n`: a handler deduplicating by key never mistakes them for old ones.
   */
  idempotencyKey: string;
  /**
   * The record's value and key as the stream's `value` / `key` formats decode them (a schema
   * registry's Avro, Protobuf or JSON Schema, or plain JSON), beside the raw bytes in `value` / `key`.
   * Absent when the stream configures no format (or `raw`).
   */
  decoded?: DecodedRecord;
};

/**
 * The record's value and key as the stream's `value` / `key` settings decode them, each with the
 * registry schema it was written with (absent for plain JSON, and for a null value or key, which
 * stays null). Only the configured fields are present.
 */
export type DecodedRecord = { value?: unknown; key?: unknown; valueSchema?: SchemaRef; keySchema?: SchemaRef };

/** The registry schema a value was written with: its id as the record carries it, and what the registry says of it. */
export type SchemaRef = {
  registry: 'glue' | 'confluent';
  /** A Confluent schema id ("42") or a Glue schema version id (a UUID). */
  id: string;
  format: 'avro' | 'protobuf' | 'json-schema';
  /** Glue: the schema's name and this version's number. */
  name?: string;
  version?: number;
  /** Protobuf: the full name of the record's message type (`orders.v1.Order`). */
  message?: string;
};

/** The idempotency key of a record of partition incarnation `incarnation` (absent = 0). */
export function idempotencyKeyOf(topic: string, partition: number, offset: number, incarnation?: number): string {
  const { prefix, suffix } = idempotencyKeyParts(topic, partition, incarnation);
  return prefix + offset + suffix;
}

/**
 * The key's format, `topic/partition/offset[#incarnation]`, as what surrounds the offset for one
 * partition incarnation: `prefix + offset + suffix` (a chunk's records share them).
 */
export function idempotencyKeyParts(topic: string, partition: number, incarnation?: number): { prefix: string; suffix: string } {
  return { prefix: `${topic}/${partition}/`, suffix: incarnation ? `#${incarnation}` : '' };
}

export type HandlerContext = {
  stream: string;
  /** The stream's sink table (exactly-once mode). */
  sinkTable?: string;
  /** Aborted when the invocation is about to time out. */
  signal: AbortSignal;
  /** When the invocation must have returned (epoch ms, this container's clock); absent outside an invocation. */
  deadlineAtMs?: number;
  /**
   * The stream's `handler.secrets`, resolved by name (`ctx.secrets.API_TOKEN`); empty when it has
   * none. Read before the first record; a secret that cannot be read fails the range attempt, so a
   * handler never runs without one. Values are cached per container and re-read after a few
   * minutes, so a rotated secret arrives without a cold start. Never log them.
   */
  secrets: Readonly<Record<string, string>>;
};

/** The sink item a record contributes to: its key (and table, when not the stream's sink table). */
export type SinkItemRef = { key: Record<string, unknown>; table?: string };

/**
 * The one write a fold makes per item: an `update` of that item (its key, in its table), without a
 * condition of its own, because the processor guards it with the item's applied-offset mark.
 * `{ update: { ...item, expression: 'ADD clicks :n', values: { ':n': n } } }` is the usual shape.
 */
export type FoldWrite = { update: Omit<SinkUpdate, 'condition'> & { condition?: never } };

/**
 * A per-item fold (Spark's `reduceByKey`, Flink's `AggregateFunction`): `map` turns one record into
 * its contribution to one sink item (or `undefined`: the record changes nothing), `combine` merges
 * two contributions to the same item, `write` turns an item's combined contribution into the one
 * `update` that applies it. All three are pure and deterministic: a replay after a crash must
 * compute the same contributions from the same records.
 */
export type ItemFold<V> = {
  /** Throw to reject the record (it is retried, then dead-lettered or stops the partition). */
  map(record: HandlerRecord, ctx: HandlerContext): ({ value: V } & SinkItemRef) | undefined;
  combine(a: V, b: V): V;
  /** An `update` of `item.key` (in `item.table`) without a condition of its own. */
  write(item: SinkItemRef, value: V): FoldWrite;
};

export type ExactlyOnceHandler = {
  mode: 'dynamodb-exactly-once';
  handle(records: HandlerRecord[], ctx: HandlerContext): SinkWrite[] | Promise<SinkWrite[]>;
  /** Present on folded handlers (`foldHandler`): the processor then folds whole batches per item. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the value type is the handler's own
  fold?: ItemFold<any>;
};

/**
 * A folded handler as a module may export it, without `handle` (derived when the module is loaded):
 * `export default { mode: 'dynamodb-exactly-once', fold: { map, combine, write } } satisfies FoldingHandler<V>`.
 */
export type FoldingHandler<V> = { mode: 'dynamodb-exactly-once'; fold: ItemFold<V> };

export type AtLeastOnceHandler = {
  mode: 'at-least-once';
  /** Throw `PartialBatchError` when the first records of `records` were handled and a later one failed. */
  handle(records: HandlerRecord[], ctx: HandlerContext): void | Promise<void>;
};

/**
 * Thrown by an at-least-once handler that handled the first `handled` records of its batch (at least
 * one) and failed on the next: those count as handled, and the processor calls the handler again
 * from the failed record, as Lambda's trigger retries from a partial batch response's failed record.
 * A failure of the first record is an ordinary error (retried, then isolated and dead-lettered).
 */
export class PartialBatchError extends AppError {
  constructor(
    readonly handled: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('PARTIAL_BATCH', message, options);
  }
}

export type RecordsHandler = ExactlyOnceHandler | AtLeastOnceHandler;

/** Identity of a sink item within one batch: its table and key. */
export function sinkItemId(item: SinkItemRef): string {
  return `${item.table ?? ''}|${JSON.stringify(item.key)}`;
}

/**
 * An exactly-once handler from a per-item fold. Its `handle` (used for chunk-by-chunk commits,
 * record isolation and dead-letter re-drives) folds the records it is given the same way.
 */
export function foldHandler<V>(fold: ItemFold<V>): ExactlyOnceHandler & { fold: ItemFold<V> } {
  return {
    mode: 'dynamodb-exactly-once',
    fold,
    handle(records, ctx) {
      const items = new Map<string, SinkItemRef & { value: V }>();
      for (const r of records) {
        const c = fold.map(r, ctx);
        if (!c) continue;
        const id = sinkItemId(c);
        const seen = items.get(id);
        items.set(id, seen ? { ...seen, value: fold.combine(seen.value, c.value) } : c);
      }
      return [...items.values()].map((it) => fold.write({ key: it.key, table: it.table }, it.value));
    },
  };
}
