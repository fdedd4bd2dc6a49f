/**
 * A DynamoDB update expression applied to an item image in memory, for the subset a batched marked
 * write can carry (see `statements.dynamodb.ts`): top-level attributes only, SET with values,
 * attributes, `if_not_exists`, `list_append` and integer `+`/`-`, ADD of an integer, REMOVE.
 *
 * Hand-written because no maintained library evaluates update expressions: the AWS SDK only sends
 * them. It never has to be complete: anything outside the subset, or any case where DynamoDB would
 * refuse the update, gives `undefined`, and the write goes out as a plain UpdateItem for DynamoDB to
 * apply (or refuse) itself. Numbers are added as integers only (BigInt), so no precision is lost.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

type Image = Record<string, AttributeValue>;

type Operand =
  | { kind: 'path'; name: string }
  | { kind: 'value'; ref: string }
  | { kind: 'if_not_exists'; name: string; fallback: Operand }
  | { kind: 'list_append'; a: Operand; b: Operand };
type SetValue = Operand | { kind: '+' | '-'; a: Operand; b: Operand };
type Action =
  { clause: 'SET'; name: string; value: SetValue } | { clause: 'ADD'; name: string; ref: string } | { clause: 'REMOVE'; name: string };

/** An update expression parsed into actions on top-level attributes, with the attributes it reads. */
export type ParsedUpdate = { actions: Action[]; reads: string[] };

/** What applying the update to an image changes: attributes set (their new values) and removed. */
export type UpdateResult = { set: Record<string, AttributeValue>; remove: string[] };

const TOKEN = /\s*(#[A-Za-z0-9_]+|:[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*|[=,()+-])/y;

function tokenize(expression: string): string[] | undefined {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < expression.length) {
    if (/^\s*$/.test(expression.slice(TOKEN.lastIndex))) break;
    const m = TOKEN.exec(expression);
    if (!m) return undefined;
    out.push(m[1] as string);
  }
  return out;
}

/**
 * Parses `expression` with its `#name` placeholders resolved, or `undefined` when it lies outside
 * the subset (nested paths, DELETE, functions other than the two, a placeholder not given).
 */
export function parseUpdate(expression: string, names: Record<string, string> = {}): ParsedUpdate | undefined {
  const tokens = tokenize(expression);
  if (!tokens) return undefined;
  let i = 0;
  const peek = () => tokens[i];
  const take = (want?: string): string | undefined => {
    const t = tokens[i];
    if (t === undefined || (want !== undefined && t.toUpperCase() !== want)) return undefined;
    i++;
    return t;
  };
  const name = (): string | undefined => {
    const t = take();
    if (t === undefined) return undefined;
    if (t.startsWith('#')) return names[t];
    return /^[A-Za-z][A-Za-z0-9_]*$/.test(t) && !CLAUSES.has(t.toUpperCase()) ? t : undefined;
  };
  const operand = (): Operand | undefined => {
    const t = peek();
    if (t === undefined) return undefined;
    if (t.startsWith(':')) return take() ? { kind: 'value', ref: t } : undefined;
    if (t === 'if_not_exists' || t === 'list_append') {
      take();
      if (!take('(')) return undefined;
      const first = t === 'if_not_exists' ? name() : operand();
      if (first === undefined || !take(',')) return undefined;
      const second = operand();
      if (!second || !take(')')) return undefined;
      return t === 'if_not_exists'
        ? { kind: 'if_not_exists', name: first as string, fallback: second }
        : { kind: 'list_append', a: first as Operand, b: second };
    }
    const n = name();
    return n === undefined ? undefined : { kind: 'path', name: n };
  };
  const actions: Action[] = [];
  const seenClauses = new Set<string>();
  while (i < tokens.length) {
    const clause = take()?.toUpperCase();
    if (clause !== 'SET' && clause !== 'ADD' && clause !== 'REMOVE') return undefined;
    if (seenClauses.has(clause)) return undefined;
    seenClauses.add(clause);
    do {
      const target = name();
      if (target === undefined) return undefined;
      if (clause === 'REMOVE') actions.push({ clause, name: target });
      else if (clause === 'ADD') {
        const ref = take();
        if (!ref?.startsWith(':')) return undefined;
        actions.push({ clause, name: target, ref });
      } else {
        if (!take('=')) return undefined;
        const a = operand();
        if (!a) return undefined;
        const op = peek();
        if (op === '+' || op === '-') {
          take();
          const b = operand();
          if (!b) return undefined;
          actions.push({ clause, name: target, value: { kind: op, a, b } });
        } else actions.push({ clause, name: target, value: a });
      }
    } while (take(','));
  }
  const targets = actions.map((a) => a.name);
  if (actions.length === 0 || new Set(targets).size !== targets.length) return undefined; // overlapping paths: DynamoDB refuses
  return { actions, reads: [...new Set(actions.flatMap(readsOf))] };
}

const CLAUSES = new Set(['SET', 'ADD', 'REMOVE', 'DELETE']);

function readsOf(a: Action): string[] {
  if (a.clause === 'ADD') return [a.name];
  if (a.clause === 'REMOVE') return [];
  const of = (o: SetValue): string[] => {
    switch (o.kind) {
      case 'path':
        return [o.name];
      case 'value':
        return [];
      case 'if_not_exists':
        return [o.name, ...of(o.fallback)];
      default:
        return [...of(o.a), ...of(o.b)];
    }
  };
  return of(a.value);
}

const INTEGER = /^-?(0|[1-9][0-9]{0,37})$/;

function integerOf(v: AttributeValue | undefined): bigint | undefined {
  return v?.N !== undefined && INTEGER.test(v.N) ? BigInt(v.N) : undefined;
}

/** A sum within DynamoDB's 38 digits, else undefined (DynamoDB would refuse it). */
function numberValue(n: bigint): AttributeValue | undefined {
  const s = n.toString();
  return INTEGER.test(s) ? { N: s } : undefined;
}

/**
 * The update applied to `image` (undefined: the item does not exist) as DynamoDB would apply it,
 * with every operand read from the image before the update; `undefined` when DynamoDB could
 * refuse it or the result needs arithmetic beyond integers.
 */
export function applyUpdate(
  parsed: ParsedUpdate,
  values: Record<string, AttributeValue>,
  image: Image | undefined,
): UpdateResult | undefined {
  const item = image ?? {};
  const operand = (o: Operand): AttributeValue | undefined => {
    switch (o.kind) {
      case 'path':
        return item[o.name];
      case 'value':
        return values[o.ref];
      case 'if_not_exists':
        return item[o.name] ?? operand(o.fallback);
      case 'list_append': {
        const a = operand(o.a);
        const b = operand(o.b);
        return a?.L && b?.L ? { L: [...a.L, ...b.L] } : undefined;
      }
    }
  };
  const set: Record<string, AttributeValue> = {};
  const remove: string[] = [];
  for (const a of parsed.actions) {
    if (a.clause === 'REMOVE') {
      remove.push(a.name);
      continue;
    }
    let v: AttributeValue | undefined;
    if (a.clause === 'ADD') {
      const add = integerOf(values[a.ref]);
      const current = item[a.name];
      const base = current === undefined ? 0n : integerOf(current);
      v = add === undefined || base === undefined ? undefined : numberValue(base + add);
    } else if (a.value.kind === '+' || a.value.kind === '-') {
      const x = integerOf(operand(a.value.a));
      const y = integerOf(operand(a.value.b));
      v = x === undefined || y === undefined ? undefined : numberValue(a.value.kind === '+' ? x + y : x - y);
    } else v = operand(a.value as Operand);
    if (v === undefined) return undefined;
    set[a.name] = v;
  }
  return { set, remove };
}
