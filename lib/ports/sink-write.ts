/**
 * Sink writes: what a processor commits to the exactly-once sink beside its progress, and the
 * applied-offset marks of folded batches.
 */
import { AppError } from '../errors';

/** An update of one sink item (in `table`, else the stream's sink table). */
export type SinkUpdate = {
  table?: string;
  key: Record<string, unknown>;
  /** A DynamoDB UpdateExpression, e.g. `ADD #total :n`. */
  expression: string;
  names?: Record<string, string>;
  values?: Record<string, unknown>;
  condition?: SinkCondition;
};

/** A write to the exactly-once sink, applied in the same transaction as the progress it belongs to. */
export type SinkWrite =
  | { put: { table?: string; item: Record<string, unknown>; condition?: SinkCondition } }
  | { update: SinkUpdate }
  | { delete: { table?: string; key: Record<string, unknown>; condition?: SinkCondition } };

export type SinkCondition = { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };

/** A sink write that `applyMarkedSinkWrites` takes: an update without a condition of its own (its mark is its condition). */
export function isMarkableWrite(w: SinkWrite): w is Extract<SinkWrite, { update: unknown }> {
  return 'update' in w && !w.update.condition;
}

/**
 * The applied-offset mark a folded batch leaves on every sink item it writes: the item has applied
 * the records of `stream`'s partition (this incarnation, after this many rewinds) below `until`. A
 * write carrying a mark is skipped when its item already holds the same mark at `until` or beyond,
 * so a batch written again (retry, duplicate, lease lost) never applies twice to an item.
 */
export type SinkMark = {
  stream: string;
  topic: string;
  partition: number;
  incarnation?: number;
  rewinds?: number;
  /** The batch's end offset (exclusive). */
  until: number;
};

/**
 * The attribute a sink item keeps its applied-offset mark in, one per stream, partition,
 * incarnation and rewind: `_applied:<stream>:<topic>:<partition>[#incarnation][@rewinds]`. Both
 * ledgers name marks by it, so an item's marks read the same whichever ledger wrote them.
 * Top-level (not a map) because DynamoDB cannot SET a path inside a map the item does not have yet.
 */
export function markAttribute(mark: SinkMark): string {
  const inc = mark.incarnation ? `#${mark.incarnation}` : '';
  const rew = mark.rewinds ? `@${mark.rewinds}` : '';
  return `_applied:${mark.stream}:${mark.topic}:${mark.partition}${inc}${rew}`;
}

/** What one `applyMarkedSinkWrites` call did: writes applied now, and writes whose item already had the mark. */
export type MarkedWritesOutcome = { applied: number; skipped: number };

/** A sink write's own condition failed: the handler asked for something the sink refuses; nothing was written. */
export class SinkConditionError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SINK_CONDITION', message, options);
  }
}
