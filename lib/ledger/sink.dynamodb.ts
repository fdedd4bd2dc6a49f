/**
 * Sink writes on DynamoDB: a handler's write as a transaction action, and a folded batch's write
 * with its applied-offset mark.
 */
import { ValidationError } from '../errors';
import { markAttribute, type SinkMark, type SinkWrite } from '../ports/sink-write';
import type { TxAction } from './transactions.dynamodb';

/**
 * A folded batch's `update` with its mark: the handler's update expression plus `SET <mark> = until`,
 * conditional on the mark being absent or below `until` (the batch has not reached this item yet).
 */
export function markedSinkAction(w: SinkWrite, mark: SinkMark): TxAction {
  if (!('update' in w))
    throw new ValidationError('a folded batch writes updates only (a put or delete would drop the marks of other partitions)');
  if (w.update.condition) throw new ValidationError('a folded write carries no condition of its own (its mark is its condition)');
  if (!w.update.table) throw new ValidationError('sink write without a table: set handler.sinkTable or name the table in the write');
  const names = { ...w.update.names, '#kdMark': markAttribute(mark) };
  const values = { ...w.update.values, ':kdMark': mark.until };
  return {
    Update: {
      TableName: w.update.table,
      Key: w.update.key,
      UpdateExpression: withMarkSet(w.update.expression),
      ConditionExpression: 'attribute_not_exists(#kdMark) OR #kdMark < :kdMark',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * Adds `#kdMark = :kdMark` to the expression's SET clause (an update expression names each clause
 * once), or a SET clause when it has none. Bare attribute names cannot be the reserved word SET,
 * so the first whole word SET is the clause.
 */
function withMarkSet(expression: string): string {
  const set = /\bSET\b/i.exec(expression);
  if (!set) return `${expression} SET #kdMark = :kdMark`;
  const at = set.index + set[0].length;
  return `${expression.slice(0, at)} #kdMark = :kdMark,${expression.slice(at)}`;
}

/** A sink write as a transaction action (tables default to none: the processor names them). */
export function sinkAction(w: SinkWrite): TxAction {
  const cond = (c?: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> }) =>
    c ? { ConditionExpression: c.expression, ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.values } : {};
  const table = (t: string | undefined): string => {
    if (!t) throw new ValidationError('sink write without a table: set handler.sinkTable or name the table in the write');
    return t;
  };
  if ('put' in w) return { Put: { TableName: table(w.put.table), Item: w.put.item, ...cond(w.put.condition) } };
  if ('delete' in w) return { Delete: { TableName: table(w.delete.table), Key: w.delete.key, ...cond(w.delete.condition) } };
  const c = w.update.condition;
  return {
    Update: {
      TableName: table(w.update.table),
      Key: w.update.key,
      UpdateExpression: w.update.expression,
      ConditionExpression: c?.expression,
      ExpressionAttributeNames: w.update.names || c?.names ? { ...w.update.names, ...c?.names } : undefined,
      ExpressionAttributeValues: w.update.values || c?.values ? { ...w.update.values, ...c?.values } : undefined,
    },
  };
}
