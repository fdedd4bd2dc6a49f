/**
 * Function lengths from the TypeScript compiler's syntax tree: a function's *own* lines are its span
 * minus the spans of the functions nested in it, so a factory returning small closures is not counted
 * as one long function. Hand-written because ESLint's max-lines-per-function counts nested functions
 * as part of their parent.
 *
 * usage: tsx scripts/function-lengths.ts [--max 80] [paths...]   (default paths: lib functions bin infra bench test/chaos test/support)
 * Prints "<own lines> <file>:<first>-<last> <name>" for every function over --max, longest first;
 * exits 1 if there is any.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

export type FunctionLength = { file: string; name: string; firstLine: number; lastLine: number; ownLines: number };

const DEFAULT_ROOTS = ['lib', 'functions', 'bin', 'infra', 'bench', 'test/chaos', 'test/support'];
const SOURCE = /\.(ts|js|cjs|mjs)$/;
/** Test files stay as they are: a table-driven test reads best with its worked examples inline. */
const TEST_FILE = /\.test\.(ts|js)$/;

function isFunctionLike(node: ts.Node): node is ts.SignatureDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) {
    return parent.name.getText(source);
  }
  return '(anonymous)';
}

/** Every function of one source text with its own line count. */
export function functionLengths(file: string, text: string): FunctionLength[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line + 1;
  const span = (node: ts.Node): number => lineOf(node.getEnd()) - lineOf(node.getStart(source)) + 1;
  const nestedSpan = (node: ts.Node): number => {
    let lines = 0;
    const visit = (child: ts.Node): void => {
      if (isFunctionLike(child)) lines += span(child);
      else ts.forEachChild(child, visit);
    };
    ts.forEachChild(node, visit);
    return lines;
  };
  const out: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (isFunctionLike(node)) {
      const firstLine = lineOf(node.getStart(source));
      out.push({ file, name: nameOf(node, source), firstLine, lastLine: lineOf(node.getEnd()), ownLines: span(node) - nestedSpan(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

function sourceFiles(path: string): string[] {
  if (statSync(path).isFile()) return SOURCE.test(path) && !TEST_FILE.test(path) ? [path] : [];
  return readdirSync(path, { withFileTypes: true })
    .filter((e) => e.name !== 'node_modules' && !e.name.startsWith('.'))
    .flatMap((e) => sourceFiles(join(path, e.name)));
}

/** Functions over `maxLines` own lines under `paths` (relative to `root`), longest first. */
export function longFunctions(root: string, paths: string[] = DEFAULT_ROOTS, maxLines = 80): FunctionLength[] {
  return paths
    .flatMap((p) => sourceFiles(resolve(root, p)))
    .flatMap((f) => functionLengths(relative(root, f), readFileSync(f, 'utf8')))
    .filter((f) => f.ownLines > maxLines)
    .sort((a, b) => b.ownLines - a.ownLines);
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--max');
  const max = at >= 0 ? Number(args.splice(at, 2)[1]) : 80;
  if (!Number.isInteger(max) || max < 1) {
    console.error('--max needs a positive whole number of lines');
    process.exit(2);
  }
  const long = longFunctions(resolve(__dirname, '..'), args.length ? args : DEFAULT_ROOTS, max);
  for (const f of long) console.log(`${f.ownLines} ${f.file}:${f.firstLine}-${f.lastLine} ${f.name}`);
  if (!long.length) console.log(`no function over ${max} own lines`);
  process.exit(long.length ? 1 : 0);
}
