/**
 * Matching a record against compiled filter patterns, as EventBridge's engine (aws/event-ruler)
 * matches an event: fields of an object are AND-ed, the elements of a list OR-ed; a list in the
 * record matches if any element does (objects inside a list are matched one element at a time, so
 * two fields never match from two different elements); only scalars are values (an object where a
 * list pattern expects a value counts as absent); numeric operators match JSON numbers only.
 */
import { ValidationError } from '../errors';
import {
  comparableNumber,
  compilePattern,
  type CompiledPattern,
  type FilterField,
  type ObjectNode,
  type PatternNode,
  type Rule,
} from './pattern';

/** What a pattern looks into: the record's `value`, `key` and `headers` (absent fields left out). */
export type FilterDocument = Partial<Record<FilterField, unknown>>;

/** Whether one compiled pattern matches a document. */
export function matchesPattern(pattern: CompiledPattern, doc: FilterDocument): boolean {
  return matchObject(pattern.root, doc);
}

/** A stream's patterns, OR-ed: a record matching none of them is filtered out. */
export type RecordFilter = {
  /** The record fields any pattern looks into (the others need not be decoded). */
  fields: ReadonlySet<FilterField>;
  matches(doc: FilterDocument): boolean;
};

/** Compiles validated patterns (the config checked them); throws on one that does not compile. */
export function compileFilters(patterns: readonly unknown[]): RecordFilter {
  const compiled = patterns.map((p, i) => {
    const { compiled: c, problems } = compilePattern(p);
    if (!c) throw new ValidationError(`filters[${i}]: ${problems.map((x) => x.message).join('; ')}`);
    return c;
  });
  const fields = new Set(compiled.flatMap((c) => [...c.fields]));
  return { fields, matches: (doc) => compiled.some((c) => matchesPattern(c, doc)) };
}

function matchObject(node: ObjectNode, doc: unknown): boolean {
  if (Array.isArray(doc)) return doc.length === 0 ? matchObject(node, undefined) : doc.some((element) => matchObject(node, element));
  for (const [name, child] of node.fields) {
    if (!matchNode(child, fieldOf(doc, name))) return false;
  }
  return node.or === undefined || node.or.some((alt) => matchObject(alt, doc));
}

function matchNode(node: PatternNode, value: unknown): boolean {
  if (node.kind === 'object') return matchObject(node, value);
  const leaves = leavesOf(value);
  return node.rules.some((rule) =>
    rule.kind === 'exists' ? leaves.length > 0 === rule.exists : leaves.some((leaf) => matchRule(rule, leaf)),
  );
}

/** A field of a JSON object; anything else (a string, a number, absent) has no fields. */
function fieldOf(doc: unknown, name: string): unknown {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc) || ArrayBuffer.isView(doc)) return undefined;
  return Object.hasOwn(doc, name) ? (doc as Record<string, unknown>)[name] : undefined;
}

type Leaf = string | number | bigint | boolean | null;

/** The scalar values at a place: itself, or the scalars of a list (nested lists flattened). */
function leavesOf(value: unknown): Leaf[] {
  if (Array.isArray(value)) return value.flatMap(leavesOf);
  const t = typeof value;
  return value === null || t === 'string' || t === 'number' || t === 'bigint' || t === 'boolean' ? [value as Leaf] : [];
}

function matchRule(rule: Exclude<Rule, { kind: 'exists' }>, leaf: Leaf): boolean {
  switch (rule.kind) {
    case 'string':
      return leaf === rule.value;
    case 'number':
      return isNumber(leaf) && numbersEqual(rule.value, leaf);
    case 'literal':
      return leaf === rule.value;
    case 'prefix':
      return typeof leaf === 'string' && fold(leaf, rule.ignoreCase).startsWith(fold(rule.value, rule.ignoreCase));
    case 'suffix':
      return typeof leaf === 'string' && fold(leaf, rule.ignoreCase).endsWith(fold(rule.value, rule.ignoreCase));
    case 'equals-ignore-case':
      return typeof leaf === 'string' && fold(leaf, true) === fold(rule.value, true);
    case 'anything-but-strings':
      return !(typeof leaf === 'string' && rule.values.has(leaf));
    case 'anything-but-numbers': {
      const at = comparableOf(leaf);
      return at === undefined || !rule.values.includes(at);
    }
    case 'numeric': {
      const at = comparableOf(leaf);
      if (at === undefined) return false;
      const { lower, upper } = rule;
      return (!lower || (lower.open ? at > lower.at : at >= lower.at)) && (!upper || (upper.open ? at < upper.at : at <= upper.at));
    }
  }
}

function isNumber(leaf: Leaf): leaf is number | bigint {
  return typeof leaf === 'number' || typeof leaf === 'bigint';
}

/** A JSON number's comparable form (numeric operators ignore strings, even "5"). */
function comparableOf(leaf: Leaf): number | undefined {
  return isNumber(leaf) ? comparableNumber(Number(leaf)) : undefined;
}

/** event-ruler matches a number literal numerically within +-5e9, and by its text beyond. */
function numbersEqual(pattern: number, leaf: number | bigint): boolean {
  const a = comparableNumber(pattern);
  const b = comparableNumber(Number(leaf));
  return a !== undefined && b !== undefined ? a === b : String(pattern) === String(leaf);
}

function fold(s: string, ignoreCase: boolean): string {
  return ignoreCase ? s.toLowerCase() : s;
}
