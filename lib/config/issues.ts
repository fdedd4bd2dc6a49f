/**
 * Config error messages: zod issues turned into one "path: message" line per problem, worded for a
 * data engineer reading a deploy log, with a "did you mean" hint for a misspelt key. The schema
 * (schema.ts) uses `issueMessage` as zod's error map and `formatIssues` for the final report.
 */
import type { z } from 'zod';

/** One line per key, in the order of `keys` (formatIssues pairs them up again to name each key's path). */
export function unknownKeysMessage(keys: readonly string[], known: readonly string[]): string {
  return keys
    .map((key) => {
      const hint = closestKey(key, known);
      return `unknown key${hint === undefined ? '' : ` (did you mean ${JSON.stringify(hint)}?)`}`;
    })
    .join('\n');
}

/** The known key closest to a typo, if it is plausibly the intended one. */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const typed = key.toLowerCase();
    const meant = candidate.toLowerCase();
    // A truncated key ("ledger" for "ledgerTable") is as likely a slip as a typo.
    const truncated = typed.length >= 3 && (meant.startsWith(typed) || typed.startsWith(meant));
    const distance = truncated ? 1 : editDistance(typed, meant);
    if (best === undefined || distance < best.distance) best = { key: candidate, distance };
  }
  const tolerance = Math.max(2, Math.floor(key.length / 3));
  return best !== undefined && best.distance <= tolerance ? best.key : undefined;
}

/** Levenshtein distance (insertions, deletions, substitutions), for the "did you mean" hint. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** One "path: message" line per problem; problems of one stream stay together. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string[] {
  const problems = collectProblems(issues, []);
  // Stable sort by the first list index (the stream), so cross-stream checks join their stream.
  const listIndex = (path: readonly PropertyKey[]) => path.find((k): k is number => typeof k === 'number') ?? -1;
  problems.sort((a, b) => listIndex(a.path) - listIndex(b.path));
  return problems.map(({ path, message }) => (path.length === 0 ? message : `${formatPath(path)}: ${message}`));
}

type Problem = { path: PropertyKey[]; message: string };

function collectProblems(issues: readonly z.core.$ZodIssue[], basePath: readonly PropertyKey[]): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const path = [...basePath, ...issue.path];
    if (issue.code === 'invalid_union') {
      const meant = intendedUnionArm(issue.errors);
      if (meant !== undefined) {
        problems.push(...collectProblems(meant, path));
        continue;
      }
    }
    if (issue.code === 'unrecognized_keys') {
      const lines = issue.message.split('\n');
      issue.keys.forEach((key, i) => problems.push({ path: [...path, key], message: lines[i] ?? 'unknown key' }));
      continue;
    }
    const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    problems.push({ path, message });
  }
  return problems;
}

/**
 * Among a union's failed alternatives, the one the author evidently meant: the only one whose
 * failures are all inside values that are present (not a wrong type at the top, an unknown key or
 * a missing key). `{ "secretArn": 5 }` meant the Secrets Manager form; `{}` meant none in particular.
 */
function intendedUnionArm(arms: readonly (readonly z.core.$ZodIssue[])[]): readonly z.core.$ZodIssue[] | undefined {
  const plausible = arms.filter((arm) =>
    arm.every(
      (iss) => iss.path.length > 0 && iss.code !== 'unrecognized_keys' && !(iss.code === 'invalid_type' && iss.input === undefined),
    ),
  );
  return plausible.length === 1 ? plausible[0] : undefined;
}

/** `streams[0].kafka.brokers[1]`; keys that are not identifiers (topic names) as `["my.topic"]`. */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** Messages written for a data engineer reading a deploy log, not for a TypeScript developer. */
export function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int' && typeof issue.input === 'number') return 'must be a whole number';
      if (issue.expected === 'number' && typeof issue.input === 'number') return 'must be a finite number';
      return `expected ${describeExpected(issue.expected)}, got ${describeValue(issue.input)}`;
    }
    case 'too_small':
      return sizeMessage(issue.origin, issue.inclusive ?? true, issue.minimum, 'min');
    case 'too_big':
      return sizeMessage(issue.origin, issue.inclusive ?? true, issue.maximum, 'max');
    case 'invalid_value':
      return issue.values.length === 1
        ? `must be ${JSON.stringify(issue.values[0])}`
        : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'unrecognized_keys':
      return unknownKeysMessage(issue.keys, []);
    case 'invalid_union':
      return 'does not match any allowed form';
    default:
      return undefined;
  }
}

function sizeMessage(origin: string, inclusive: boolean, bound: number | bigint, side: 'min' | 'max'): string {
  const limit = String(bound);
  if (origin === 'array' || origin === 'set') {
    if (side === 'min' && limit === '1') return 'must not be empty';
    return `must have ${side === 'min' ? 'at least' : 'at most'} ${limit} items`;
  }
  if (origin === 'string') {
    if (side === 'min' && limit === '1') return 'must not be empty';
    return `must be ${side === 'min' ? 'at least' : 'at most'} ${limit} characters long`;
  }
  const op = side === 'min' ? (inclusive ? '>=' : '>') : inclusive ? '<=' : '<';
  return `must be ${op} ${limit}`;
}

function describeExpected(expected: string): string {
  if (expected === 'int') return 'a whole number';
  if (expected === 'array') return 'a list';
  if (expected === 'object' || expected === 'record') return 'an object';
  return `a ${expected}`;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
