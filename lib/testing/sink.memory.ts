/**
 * An in-memory sink table for handler tests: applies committed sink writes (put, update, delete)
 * to items, so a test can compare what the table would hold. Hand-written because no maintained
 * library evaluates DynamoDB update expressions in memory; it covers the common subset (SET with
 * `+`, `-` and `if_not_exists`, ADD on numbers and sets, REMOVE, top-level attributes) and refuses
 * anything else with a clear error. Conditions are not evaluated: the processor's own guarantees
 * (one commit per chunk) are what the kit exercises.
 */
import { ValidationError } from '../errors';
import type { SinkWrite } from '../ports/sink-write';

export type SinkItem = Record<string, unknown>;

type Names = Record<string, string> | undefined;
type Values = Record<string, unknown> | undefined;

/** The items the writes leave in a table keyed by `keyAttributes` (default: the first write's key attributes, else `pk`). */
export function applySinkWrites(writes: readonly SinkWrite[], keyAttributes?: string[]): SinkItem[] {
  const keys = keyAttributes ?? inferKey(writes);
  const items = new Map<string, SinkItem>();
  const id = (item: Record<string, unknown>) => JSON.stringify(keys.map((k) => item[k]));
  for (const w of writes) {
    if ('put' in w) items.set(id(w.put.item), structuredClone(w.put.item));
    else if ('delete' in w) items.delete(id(w.delete.key));
    else {
      const { key, expression, names, values } = w.update;
      const item = items.get(id(key)) ?? structuredClone(key);
      applyUpdate(item, expression, names, values);
      items.set(id(key), item);
    }
  }
  return [...items.values()];
}

function inferKey(writes: readonly SinkWrite[]): string[] {
  for (const w of writes) {
    if ('update' in w) return Object.keys(w.update.key);
    if ('delete' in w) return Object.keys(w.delete.key);
  }
  return ['pk'];
}

/** Splits `SET a = :x, b = :y ADD c :n REMOVE d` into its clauses. */
function clauses(expression: string): Array<{ action: string; body: string }> {
  const out: Array<{ action: string; body: string }> = [];
  const re = /\b(SET|ADD|REMOVE|DELETE)\b/gi;
  const marks = [...expression.matchAll(re)];
  marks.forEach((m, i) => {
    const end = i + 1 < marks.length ? (marks[i + 1] as RegExpMatchArray).index : expression.length;
    out.push({ action: (m[1] as string).toUpperCase(), body: expression.slice((m.index ?? 0) + m[0].length, end).trim() });
  });
  if (out.length === 0) throw unsupported(expression, 'no SET, ADD or REMOVE clause');
  return out;
}

/** Splits on commas outside parentheses. */
function items(body: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '(') depth++;
    else if (body[i] === ')') depth--;
    else if (body[i] === ',' && depth === 0) {
      out.push(body.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(body.slice(start).trim());
  return out.filter(Boolean);
}

function applyUpdate(item: SinkItem, expression: string, names: Names, values: Values): void {
  const name = (token: string): string => {
    const t = token.trim();
    if (t.startsWith('#')) {
      const n = names?.[t];
      if (n === undefined) throw unsupported(expression, `${t} is not in names`);
      return n;
    }
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(t)) throw unsupported(expression, `attribute path ${t} (only top-level attributes)`);
    return t;
  };
  const operand = (token: string): unknown => {
    const t = token.trim();
    if (t.startsWith(':')) {
      if (!values || !(t in values)) throw unsupported(expression, `${t} is not in values`);
      return values[t];
    }
    const fn = /^if_not_exists\s*\(([^,]+),(.+)\)$/i.exec(t);
    if (fn) {
      const current = item[name(fn[1] as string)];
      return current !== undefined ? current : operand(fn[2] as string);
    }
    return item[name(t)];
  };
  for (const { action, body } of clauses(expression)) {
    for (const part of items(body)) {
      if (action === 'SET') {
        const m = /^([^=]+)=(.+)$/.exec(part);
        if (!m) throw unsupported(expression, part);
        const arith = /^(.+?)\s([+-])\s(.+)$/.exec((m[2] as string).trim());
        item[name(m[1] as string)] = arith
          ? num(operand(arith[1] as string), expression) + (arith[2] === '+' ? 1 : -1) * num(operand(arith[3] as string), expression)
          : operand(m[2] as string);
      } else if (action === 'ADD') {
        const [path, value] = part.split(/\s+/);
        const target = name(path ?? '');
        const add = operand(value ?? '');
        const current = item[target];
        if (add instanceof Set) item[target] = new Set([...(current instanceof Set ? current : []), ...add]);
        else item[target] = (current === undefined ? 0 : num(current, expression)) + num(add, expression);
      } else if (action === 'REMOVE') {
        delete item[name(part)];
      } else {
        throw unsupported(expression, 'DELETE clauses');
      }
    }
  }
}

function num(v: unknown, expression: string): number {
  if (typeof v !== 'number') throw unsupported(expression, `arithmetic on ${JSON.stringify(v)}`);
  return v;
}

function unsupported(expression: string, what: string): ValidationError {
  return new ValidationError(
    `the in-memory sink cannot apply update expression ${JSON.stringify(expression)}: ${what}; compare sinkWrites instead`,
  );
}
