/**
 * A marked sink write as one PartiQL statement of a BatchExecuteStatement: up to 25 conditional
 * writes per request, each billed as a plain write (one unit per KB), where a transaction bills two.
 *
 * PartiQL's UPDATE cannot create an item and has neither ADD nor `if_not_exists`, so the statement
 * is planned from an image of the item read just before: an INSERT of the item the update would
 * create when it does not exist (fails with DuplicateItem if it appeared since), else an UPDATE
 * that sets the new values, guarded by the values it read (and the mark). The statement therefore
 * applies exactly what the UpdateItem would have, or fails and changes nothing; the caller then
 * sends the plain UpdateItem.
 */
import type { AttributeValue, BatchStatementRequest } from '@aws-sdk/client-dynamodb';
import { applyUpdate, type ParsedUpdate } from './update-expression.dynamodb';

type Image = Record<string, AttributeValue>;

/** One marked write, ready to plan: its update parsed, key and values in DynamoDB's own form. */
export type MarkedWriteInput = {
  table: string;
  key: Image;
  parsed: ParsedUpdate;
  values: Record<string, AttributeValue>;
  /** The mark's attribute name and the batch's end offset it records. */
  markName: string;
  until: number;
};

/** What to send for a write: nothing (the item has the mark), a statement, or the plain UpdateItem. */
export type StatementPlan = { kind: 'skip' } | { kind: 'statement'; request: BatchStatementRequest } | { kind: 'single' };

/** A name a statement can quote as it is: no quotes, no control characters. */
const isSafeName = (name: string): boolean => name.length > 0 && [...name].every((c) => c !== '"' && c !== "'" && c >= ' ');
const quoted = (name: string): string => `"${name}"`;
const CONDITION_TYPES = ['S', 'N', 'BOOL'] as const;

/** The statement that applies `w` to the item as `image` shows it (undefined: no such item). */
export function planMarkedStatement(w: MarkedWriteInput, image: Image | undefined): StatementPlan {
  const names = [w.table, w.markName, ...Object.keys(w.key), ...w.parsed.actions.map((a) => a.name), ...w.parsed.reads];
  if (!names.every(isSafeName)) return { kind: 'single' };
  if (w.parsed.actions.some((a) => a.name in w.key || a.name === w.markName)) return { kind: 'single' }; // DynamoDB refuses
  const mark = image?.[w.markName];
  if (mark?.N !== undefined && Number(mark.N) >= w.until) return { kind: 'skip' };
  if (image && mark !== undefined && mark.N === undefined) return { kind: 'single' };
  const result = applyUpdate(w.parsed, w.values, image);
  if (!result) return { kind: 'single' };
  const until: AttributeValue = { N: String(w.until) };
  if (!image) return { kind: 'statement', request: insertStatement(w, { ...result.set, ...w.key, [w.markName]: until }) };

  const parameters: AttributeValue[] = [];
  const sets = Object.entries({ ...result.set, [w.markName]: until }).map(([name, value]) => {
    parameters.push(value);
    return `SET ${quoted(name)} = ?`;
  });
  const removes = result.remove.map((name) => `REMOVE ${quoted(name)}`);
  const conditions = Object.entries(w.key).map(([name, value]) => {
    parameters.push(value);
    return `${quoted(name)} = ?`;
  });
  for (const name of w.parsed.reads) {
    if (name in w.key) continue;
    const seen = image[name];
    if (seen === undefined) conditions.push(`${quoted(name)} IS MISSING`);
    else if (CONDITION_TYPES.some((t) => seen[t] !== undefined)) {
      conditions.push(`${quoted(name)} = ?`);
      parameters.push(seen);
    } else return { kind: 'single' }; // equality on lists, maps and sets is left to UpdateItem
  }
  if (mark === undefined) conditions.push(`${quoted(w.markName)} IS MISSING`);
  else {
    conditions.push(`${quoted(w.markName)} < ?`);
    parameters.push(until);
  }
  const statement = `UPDATE ${quoted(w.table)} ${[...sets, ...removes].join(' ')} WHERE ${conditions.join(' AND ')}`;
  return { kind: 'statement', request: { Statement: statement, Parameters: parameters } };
}

function insertStatement(w: MarkedWriteInput, item: Image): BatchStatementRequest {
  const entries = Object.entries(item);
  const tuple = entries.map(([name]) => `'${name}' : ?`).join(', ');
  return { Statement: `INSERT INTO ${quoted(w.table)} VALUE {${tuple}}`, Parameters: entries.map(([, v]) => v) };
}
