/**
 * The policy table of docs/architecture.md ("Retries") lists exactly the named retry policies, each
 * with the file that exports it and its values. A named policy is an exported constant of lib/ typed
 * `RetryPolicy` (`: RetryPolicy` or `satisfies RetryPolicy`), found in the files' syntax, so a policy
 * added, renamed or moved is one the table must follow; its values are the module's own.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { NO_JITTER, type RetryPolicy } from '../../../lib/retry';
import { codeSpans, markdownTable } from '../../support/markdown-table';

const ROOT = join(__dirname, '..', '..', '..');

/** A named policy: its constant's name and the file (relative to the repository) that exports it. */
type Named = { name: string; file: string };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** `x as const satisfies RetryPolicy`, `(x satisfies RetryPolicy)`: whether the expression is checked against RetryPolicy. */
function satisfiesPolicy(e: ts.Expression | undefined): boolean {
  while (e && (ts.isAsExpression(e) || ts.isParenthesizedExpression(e))) e = e.expression;
  return !!e && ts.isSatisfiesExpression(e) && e.type.getText() === 'RetryPolicy';
}

/** Every exported `const NAME: RetryPolicy` (or `... satisfies RetryPolicy`) of lib/. */
function namedPolicies(): Named[] {
  return sourceFiles(join(ROOT, 'lib')).flatMap((path) => {
    const sf = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const file = relative(ROOT, path);
    return sf.statements
      .filter((s): s is ts.VariableStatement => ts.isVariableStatement(s))
      .filter((s) => s.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword))
      .flatMap((s) => [...s.declarationList.declarations])
      .filter((d) => d.type?.getText(sf) === 'RetryPolicy' || satisfiesPolicy(d.initializer))
      .map((d) => ({ name: d.name.getText(sf), file }));
  });
}

/** A duration as the table writes it: `25 ms`, `2 s`. */
const duration = (ms: number): string => (ms < 1_000 ? `${ms} ms` : `${ms / 1_000} s`);

/**
 * The backoff cells a policy may have: `<first> doubling to <cap>` (`x<m>` for a growth other than 2),
 * or, with bounded attempts, every wait listed (`200 ms, then 1 s`).
 */
function backoffCells(p: RetryPolicy): string[] {
  const multiplier = p.multiplier ?? 2;
  const growth = multiplier === 2 ? 'doubling' : `x${multiplier}`;
  const cells = [`${duration(p.initialBackoffMs)} ${growth} to ${duration(p.maxBackoffMs)}`];
  if (p.maxAttempts !== undefined) {
    const waits = Array.from({ length: p.maxAttempts - 1 }, (_, r) => Math.min(p.maxBackoffMs, p.initialBackoffMs * multiplier ** r));
    cells.push(waits.map(duration).join(', then '));
  }
  return cells;
}

function jitterCell(p: RetryPolicy): string {
  const [low, high] = p.jitter ?? [0.5, 1];
  return low === NO_JITTER[0] && high === NO_JITTER[1] ? 'none' : `${low * 100}-${high * 100} %`;
}

function budgetCell(p: RetryPolicy): string {
  if (p.maxElapsedMs === undefined) return 'none';
  return `${duration(p.maxElapsedMs)}, ${(p.budget ?? 'retry-start') === 'failure' ? 'at failure' : 'retry start'}`;
}

describe('docs: retry policies (docs/architecture.md "Retries")', () => {
  const table = markdownTable('docs/architecture.md', 'Retries', {
    columns: ['policy', 'where', 'attempts', 'backoff', 'jitter', 'budget'],
  });
  const rows = new Map(table.rows.map((r) => [codeSpans(r[0] as string)[0] ?? (r[0] as string), r]));
  const named = namedPolicies();

  it('the scan finds the named policies (a form it misses is one to teach it)', () => {
    // One of each form: a `: RetryPolicy` annotation, an `as const satisfies RetryPolicy`.
    expect(named.map((n) => n.name)).toEqual(expect.arrayContaining(['KAFKA_CALL_RETRIES', 'KAFKA_METADATA_RETRIES']));
  });

  it('lists every named policy exported under lib/, and no other', () => {
    expect([...rows.keys()].sort()).toEqual(named.map((n) => n.name).sort());
  });

  it.each(named)('$name: the file exporting it, and its attempts, backoff, jitter and budget', async ({ name, file }) => {
    const policy = ((await import(join(ROOT, file))) as Record<string, RetryPolicy>)[name] as RetryPolicy;
    const row = rows.get(name);
    if (!row) throw new Error(`${name} (${file}) has no row`);
    const [, where, attempts, backoff, jitter, budget] = row as [string, string, string, string, string, string];
    expect(codeSpans(where)[0]).toBe(file);
    expect(attempts).toBe(policy.maxAttempts === undefined ? 'by time' : String(policy.maxAttempts));
    expect(backoffCells(policy)).toContain(backoff);
    expect(jitter).toBe(jitterCell(policy));
    // A remark on a policy derived from it may follow in parentheses.
    expect(budget.replace(/ \(.*\)$/, '')).toBe(budgetCell(policy));
  });
});
