/**
 * The ledger's DynamoDB condition and update expressions: the conditions several writes share, and
 * the compilation of the ledger rules' requirements and changes (ports/ledger-rules/item-step.ts)
 * into expressions, so a rule decided once is what the conditional write checks and writes.
 */
import type { ItemChange, Requirement } from '../ports/ledger-rules/item-step';
import type { Item } from './items.dynamodb';

/** The condition of every item that is written once: its key is not taken. */
export const ABSENT = 'attribute_not_exists(pk)';

/** An expression with its attribute names and values (placeholders are local to one expression kind). */
export type CompiledExpression = { expression: string; names: Record<string, string>; values: Item };

/** The placeholder of a field's name (fields are plain identifiers). */
const nameOf = (field: string): string => `#${field}`;

/** One requirement as a condition, its value(s) under placeholders starting with `at`. */
function requirementExpression(r: Requirement, at: string): { expression: string; values: Item } {
  const f = nameOf(r.field);
  if ('is' in r) {
    if (r.is === undefined) return { expression: `attribute_not_exists(${f})`, values: {} };
    const expression = r.absentIs !== undefined && r.is === r.absentIs ? `(attribute_not_exists(${f}) OR ${f} = ${at})` : `${f} = ${at}`;
    return { expression, values: { [at]: r.is } };
  }
  if ('isNot' in r) {
    const values = Object.fromEntries(r.isNot.map((v, i) => [`${at}x${i}`, v]));
    return { expression: `NOT ${f} IN (${Object.keys(values).join(', ')})`, values };
  }
  return 'atLeast' in r
    ? { expression: `${f} >= ${at}`, values: { [at]: r.atLeast } }
    : { expression: `${f} <= ${at}`, values: { [at]: r.atMost } };
}

/** A step's requirements as one condition on an item that must exist (a missing item meets none). */
export function requirementsCondition(when: readonly Requirement[]): CompiledExpression {
  const parts = when.map((r, i) => ({ r, ...requirementExpression(r, `:w${i}`) }));
  return {
    expression: ['attribute_exists(pk)', ...parts.map((p) => p.expression)].join(' AND '),
    names: Object.fromEntries(when.map((r) => [nameOf(r.field), r.field])),
    values: Object.assign({}, ...parts.map((p) => p.values)) as Item,
  };
}

/** A step's change as an update expression: SET (numbers added to from 0 when absent), then REMOVE. */
export function changeUpdate(change: ItemChange): CompiledExpression {
  const set = Object.entries(change.set ?? {}).filter(([, v]) => v !== undefined);
  const add = Object.entries(change.add ?? {});
  const remove = change.remove ?? [];
  const assignments = [
    ...set.map(([field], i) => `${nameOf(field)} = :c${i}`),
    ...add.map(([field], i) => `${nameOf(field)} = if_not_exists(${nameOf(field)}, :zero) + :a${i}`),
  ];
  const clauses = [
    ...(assignments.length ? [`SET ${assignments.join(', ')}`] : []),
    ...(remove.length ? [`REMOVE ${remove.map(nameOf).join(', ')}`] : []),
  ];
  return {
    expression: clauses.join(' '),
    names: Object.fromEntries([...set.map(([f]) => f), ...add.map(([f]) => f), ...remove].map((f) => [nameOf(f), f])),
    values: {
      ...Object.fromEntries(set.map(([, v], i) => [`:c${i}`, v])),
      ...Object.fromEntries(add.map(([, n], i) => [`:a${i}`, n])),
      ...(add.length ? { ':zero': 0 } : {}),
    },
  };
}
