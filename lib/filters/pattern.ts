/**
 * Record filter patterns: the syntax of a Lambda event source mapping's `FilterCriteria` for Kafka,
 * which is the part of EventBridge's event patterns that Lambda accepts. A pattern is checked and
 * compiled once, when the config loads; what it refuses is named with its path in the pattern.
 *
 * Hand-written: no maintained npm package implements EventBridge's matching (aws/event-ruler is
 * Java), and Lambda accepts a subset of it that a general implementation would not refuse.
 */

/** Lambda's default quota of filters per event source mapping. */
export const MAX_FILTERS = 5;
/** Lambda's limit on one filter's `Pattern` string. */
export const MAX_PATTERN_CHARS = 4096;
/** The record fields a pattern may look into (Lambda's Kafka filters accept `value` only). */
export const FILTER_FIELDS = ['value', 'key', 'headers'] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];

/** Numbers EventBridge compares numerically: -5e9..5e9, to 6 digits after the point. */
const NUMERIC_LIMIT = 5e9;

/** A filter pattern as written in the config: a JSON object. */
export type FilterPattern = Readonly<Record<string, unknown>>;

/** One thing wrong with a pattern: where in it (keys and list indexes) and what. */
export type FilterProblem = { path: Array<string | number>; message: string };

/** One test of a leaf value (an element of a pattern's list). */
export type Rule =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'literal'; value: boolean | null }
  | { kind: 'prefix' | 'suffix' | 'equals-ignore-case'; value: string; ignoreCase: boolean }
  | { kind: 'anything-but-strings'; values: ReadonlySet<string> }
  | { kind: 'anything-but-numbers'; values: readonly number[] }
  | { kind: 'numeric'; lower?: Bound; upper?: Bound }
  | { kind: 'exists'; exists: boolean };
/** One end of a numeric range, as a comparable number (see `comparableNumber`). */
export type Bound = { at: number; open: boolean };

/** A compiled object of a pattern: every field must match, and one of the `$or` alternatives if any. */
export type ObjectNode = { kind: 'object'; fields: ReadonlyArray<readonly [string, PatternNode]>; or?: readonly ObjectNode[] };
/** A compiled list of a pattern: the value matches if any rule does. */
export type LeafNode = { kind: 'leaf'; rules: readonly Rule[] };
export type PatternNode = ObjectNode | LeafNode;

/** A pattern ready to match, with the record fields it looks into. */
export type CompiledPattern = { root: ObjectNode; fields: ReadonlySet<FilterField> };

/** Operators EventBridge has and Lambda's filters refuse, with why (the message names them). */
const REFUSED_OPERATORS: Readonly<Record<string, string>> = {
  wildcard: 'Lambda event filtering does not support wildcard matching (EventBridge rules only)',
  cidr: 'Lambda event filtering does not support IP address matching (EventBridge rules only)',
};
const OPERATORS = ['prefix', 'suffix', 'equals-ignore-case', 'anything-but', 'numeric', 'exists'] as const;

/**
 * EventBridge's comparable form of a number (aws/event-ruler's ComparableNumber): numbers within
 * +-5e9 are compared to 6 digits after the point; others are not comparable (undefined).
 */
export function comparableNumber(n: number): number | undefined {
  if (!Number.isFinite(n) || n < -NUMERIC_LIMIT || n > NUMERIC_LIMIT) return undefined;
  return Math.trunc(1e6 * (NUMERIC_LIMIT + n));
}

/** Checks and compiles one pattern; `problems` lists everything wrong with it (empty when it compiled). */
export function compilePattern(pattern: unknown): { compiled?: CompiledPattern; problems: FilterProblem[] } {
  const problems: FilterProblem[] = [];
  if (!isObject(pattern)) {
    problems.push({ path: [], message: `a pattern is a JSON object such as {"value": {"type": ["order"]}}, got ${describe(pattern)}` });
    return { problems };
  }
  const length = JSON.stringify(pattern).length;
  if (length > MAX_PATTERN_CHARS) {
    problems.push({ path: [], message: `is ${length} characters as JSON, more than Lambda's ${MAX_PATTERN_CHARS} per pattern` });
  }
  const fields = new Set<FilterField>();
  checkTopLevel(pattern, [], problems, fields);
  const root = compileObject(pattern, [], problems);
  return problems.length === 0 ? { compiled: { root, fields }, problems } : { problems };
}

/** Only `value`, `key` and `headers` (also inside a top-level `$or`); `headers` is an object of names. */
function checkTopLevel(
  pattern: Record<string, unknown>,
  path: Array<string | number>,
  problems: FilterProblem[],
  fields: Set<FilterField>,
): void {
  for (const [name, node] of Object.entries(pattern)) {
    if (name === '$or' && Array.isArray(node)) {
      node.forEach((alt, i) => isObject(alt) && checkTopLevel(alt, [...path, '$or', i], problems, fields));
    } else if (!(FILTER_FIELDS as readonly string[]).includes(name)) {
      problems.push({ path: [...path, name], message: `unknown field: a pattern looks into a record's ${FILTER_FIELDS.join(', ')} only` });
    } else {
      fields.add(name as FilterField);
      if (name === 'headers' && Array.isArray(node)) {
        problems.push({ path: [...path, name], message: 'headers is an object of header names: write {"headers": {"<name>": [...]}}' });
      }
    }
  }
}

function compileObject(obj: Record<string, unknown>, path: Array<string | number>, problems: FilterProblem[], inOr = false): ObjectNode {
  const fields: Array<readonly [string, PatternNode]> = [];
  let or: ObjectNode[] | undefined;
  if (Object.keys(obj).length === 0) problems.push({ path, message: 'must not be an empty object' });
  for (const [name, node] of Object.entries(obj)) {
    const at = [...path, name];
    if (name === '$or') {
      or = compileOr(node, at, problems);
      continue;
    }
    if (inOr && (OPERATORS as readonly string[]).includes(name)) {
      problems.push({ path: at, message: `"${name}" is an operator, not a field: an operator goes inside a list, [{"${name}": ...}]` });
      continue;
    }
    if (Array.isArray(node)) fields.push([name, compileList(node, at, problems)]);
    else if (isObject(node)) fields.push([name, compileObject(node, at, problems, inOr)]);
    else problems.push({ path: at, message: `must be a list of values or an object of fields, got ${describe(node)}${bareHint(node)}` });
  }
  return or ? { kind: 'object', fields, or } : { kind: 'object', fields };
}

/** `$or`: a list of at least two objects, any of which may match. */
function compileOr(node: unknown, path: Array<string | number>, problems: FilterProblem[]): ObjectNode[] {
  if (!Array.isArray(node) || node.length < 2 || !node.every(isObject)) {
    problems.push({ path, message: '$or must be a list of at least two objects of fields, e.g. [{"type": ["a"]}, {"kind": ["b"]}]' });
    return [];
  }
  return node.map((alt, i) => compileObject(alt, [...path, i], problems, true));
}

function compileList(list: unknown[], path: Array<string | number>, problems: FilterProblem[]): LeafNode {
  if (list.length === 0) problems.push({ path, message: 'must not be an empty list' });
  const rules: Rule[] = [];
  list.forEach((element, i) => {
    const rule = compileRule(element, [...path, i], problems);
    if (rule) rules.push(rule);
  });
  return { kind: 'leaf', rules };
}

function compileRule(element: unknown, path: Array<string | number>, problems: FilterProblem[]): Rule | undefined {
  if (typeof element === 'string') return { kind: 'string', value: element };
  if (typeof element === 'number') return { kind: 'number', value: element };
  if (typeof element === 'boolean' || element === null) return { kind: 'literal', value: element };
  if (!isObject(element)) {
    problems.push({ path, message: `must be a string, number, true, false, null or an operator object, got ${describe(element)}` });
    return undefined;
  }
  const names = Object.keys(element);
  if (names.length !== 1) {
    problems.push({ path, message: `an operator object has exactly one operator, got ${names.length === 0 ? 'none' : names.join(', ')}` });
    return undefined;
  }
  const op = names[0] as string;
  const at = [...path, op];
  const arg = element[op];
  const fail = (message: string): undefined => {
    problems.push({ path: at, message });
    return undefined;
  };
  const refused = REFUSED_OPERATORS[op];
  if (refused !== undefined) return fail(`"${op}" is not supported: ${refused}`);
  switch (op) {
    case 'prefix':
    case 'suffix':
      return stringMatch(op, arg, fail);
    case 'equals-ignore-case':
      return typeof arg === 'string' ? { kind: op, value: arg, ignoreCase: true } : fail(`must be a string, got ${describe(arg)}`);
    case 'anything-but':
      return anythingBut(arg, fail);
    case 'numeric':
      return numeric(arg, fail);
    case 'exists':
      return typeof arg === 'boolean' ? { kind: 'exists', exists: arg } : fail(`must be true or false, got ${describe(arg)}`);
    default:
      return fail(`unknown operator "${op}" (Lambda's filters support ${OPERATORS.join(', ')})`);
  }
}

/** `{"prefix": "us-"}` or `{"prefix": {"equals-ignore-case": "us-"}}` (and the same for suffix). */
function stringMatch(op: 'prefix' | 'suffix', arg: unknown, fail: (m: string) => undefined): Rule | undefined {
  if (typeof arg === 'string') return { kind: op, value: arg, ignoreCase: false };
  if (isObject(arg) && Object.keys(arg).length === 1 && typeof arg['equals-ignore-case'] === 'string') {
    return { kind: op, value: arg['equals-ignore-case'], ignoreCase: true };
  }
  return fail(`must be a string or {"equals-ignore-case": "<string>"}, got ${describe(arg)}`);
}

/** A string, a number, or a list of strings only or numbers only. Lambda refuses the object forms. */
function anythingBut(arg: unknown, fail: (m: string) => undefined): Rule | undefined {
  if (isObject(arg)) {
    const inner = Object.keys(arg).join(', ');
    return fail(
      `anything-but with ${inner || 'an object'} is not supported: Lambda's filters accept anything-but with a value ` +
        'or a list of values only (anything-but with prefix, suffix, equals-ignore-case or wildcard is EventBridge rules only)',
    );
  }
  const values = Array.isArray(arg) ? arg : [arg];
  if (values.length > 0 && values.every((v) => typeof v === 'string')) return { kind: 'anything-but-strings', values: new Set(values) };
  if (values.length > 0 && values.every((v) => typeof v === 'number')) {
    const comparable = values.map(comparableNumber);
    if (comparable.some((c) => c === undefined)) return fail(`numbers must be between -${NUMERIC_LIMIT} and ${NUMERIC_LIMIT}`);
    return { kind: 'anything-but-numbers', values: comparable as number[] };
  }
  return fail(`must be a string, a number, or a non-empty list of only strings or only numbers, got ${describe(arg)}`);
}

/** `["=", n]`, `[">" | ">=", n]`, `["<" | "<=", n]` or `[">" | ">=", a, "<" | "<=", b]` with a < b. */
function numeric(arg: unknown, fail: (m: string) => undefined): Rule | undefined {
  const form = 'must be ["=", n], [">" or ">=", n], ["<" or "<=", n] or [">" or ">=", low, "<" or "<=", high]';
  if (!Array.isArray(arg)) return fail(`${form}, got ${describe(arg)}`);
  const [op1, n1, op2, n2] = arg as unknown[];
  const bound = (n: unknown, open: boolean): Bound | undefined => {
    const at = typeof n === 'number' ? comparableNumber(n) : undefined;
    return at === undefined ? undefined : { at, open };
  };
  if (arg.some((x, i) => (i % 2 === 1 ? typeof x !== 'number' : typeof x !== 'string')) || arg.length % 2 !== 0 || arg.length === 0) {
    return fail(`${form}, got ${JSON.stringify(arg)}`);
  }
  if (arg.some((x, i) => i % 2 === 1 && bound(x, false) === undefined))
    return fail(`numbers must be between -${NUMERIC_LIMIT} and ${NUMERIC_LIMIT}`);
  if (arg.length === 2 && op1 === '=') {
    const at = bound(n1, false)!.at;
    return { kind: 'numeric', lower: { at, open: false }, upper: { at, open: false } };
  }
  if (arg.length === 2 && (op1 === '<' || op1 === '<=')) return { kind: 'numeric', upper: bound(n1, op1 === '<') };
  if (op1 !== '>' && op1 !== '>=') return fail(`${form}, got ${JSON.stringify(arg)}`);
  const lower = bound(n1, op1 === '>');
  if (arg.length === 2) return { kind: 'numeric', lower };
  if (arg.length !== 4 || (op2 !== '<' && op2 !== '<=')) return fail(`${form}, got ${JSON.stringify(arg)}`);
  const upper = bound(n2, op2 === '<')!;
  if ((n1 as number) >= (n2 as number)) return fail(`the low end (${String(n1)}) must be below the high end (${String(n2)})`);
  return { kind: 'numeric', lower, upper };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `${typeof v === 'number' ? 'a number' : typeof v === 'string' ? 'a string' : `a ${typeof v}`} (${JSON.stringify(v)})`;
}

/** Lambda refuses `"type": "order"`; the fix is a one-element list. */
function bareHint(v: unknown): string {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null ? `: write [${JSON.stringify(v)}]` : '';
}
