/**
 * What `fold.write` may return for an item: one `update` of exactly that item (its key, in its
 * table) without a condition of its own, because the processor guards it with the item's
 * applied-offset mark. Shared by the processor (which refuses anything else) and the test kit (which
 * says so at the first such write, instead of after the range's attempts are used up).
 */
import type { SinkItemRef } from './handler-api';

const show = (v: unknown): string => (v === undefined ? 'undefined' : JSON.stringify(v));

/** What `write` (the value `fold.write` returned for `item`) gets wrong, in one sentence; undefined when it is right. */
export function foldWriteProblem(item: SinkItemRef, write: unknown, defaultTable?: string): string | undefined {
  const given = `the item ${show(item.key)}${item.table ? ` in table ${item.table}` : ''}`;
  if (typeof write !== 'object' || write === null || !('update' in write)) {
    const kind = typeof write === 'object' && write !== null ? Object.keys(write).join('/') || 'an empty object' : show(write);
    return `fold.write returned ${kind} for ${given}: it must return { update: { key, expression, names?, values? } }`;
  }
  const update = (write as { update: unknown }).update;
  if (typeof update !== 'object' || update === null) return `fold.write returned { update: ${show(update)} } for ${given}`;
  const u = update as { key?: unknown; table?: unknown; expression?: unknown; condition?: unknown };
  if (u.condition !== undefined) {
    return (
      `fold.write returned an update of ${given} with a condition (${show(u.condition)}): ` +
      `remove it, the processor guards each folded write with the item's applied-offset mark`
    );
  }
  if (typeof u.expression !== 'string' || u.expression.trim() === '') {
    return `fold.write returned an update of ${given} without an expression (e.g. "ADD clicks :n")`;
  }
  if (!sameKey(u.key, item.key)) {
    return (
      `fold.write returned an update of key ${show(u.key)}, but was given ${given}: ` +
      `update the key it was given (e.g. { update: { ...item, expression } })`
    );
  }
  const table = u.table ?? defaultTable;
  const itemTable = item.table ?? defaultTable;
  if (table !== itemTable) {
    const tableNote = item.table ? '' : ` (table ${show(itemTable)})`;
    return `fold.write returned an update in table ${show(table)}, but was given ${given}${tableNote}`;
  }
  return undefined;
}

/** Same attributes with the same values, whatever their order. */
function sameKey(a: unknown, b: Record<string, unknown>): boolean {
  if (typeof a !== 'object' || a === null || Array.isArray(a)) return false;
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return (
    ka.length === kb.length && ka.every((k, i) => k === kb[i] && JSON.stringify((a as Record<string, unknown>)[k]) === JSON.stringify(b[k]))
  );
}
