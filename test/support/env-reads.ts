/**
 * The environment variables the project's code reads, found in its syntax trees (the TypeScript
 * parser, no type checking): reads of an object named `env` (`process.env`, `env`, `opts.env`, and
 * `a ?? process.env`) by property (`env.NAME`), by element with a string (`env['NAME']`), a constant
 * (`env[NAME_ENV]`, `env[CONFIG_ENV.streams]`: constants of any scanned file) or a template over a
 * parameter typed as a union of strings (`env[\`AWS_ENDPOINT_URL_${service}\`]`), and calls with a
 * string of a local function that reads `env[<its parameter>]` (`read('LOCAL_LOG_FILE_MB', ...)`).
 * A read it cannot name is reported as unresolved, with its place, so a new form fails a test
 * instead of going unseen.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..');

export type EnvReads = {
  /** Variable name -> the files (relative to the repository) that read it. */
  names: Map<string, Set<string>>;
  /** `file:line: text` of each read whose name could not be worked out. */
  unresolved: string[];
};

/** The .ts files under these directories (relative to the repository). */
function sourceFiles(dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
    }
  };
  for (const d of dirs) walk(join(ROOT, d));
  return out.sort();
}

/** `process.env`, `env`, `opts.env`, `(opts.env ?? process.env)`: an expression whose last name is `env`. */
function isEnvObject(e: ts.Expression): boolean {
  if (ts.isParenthesizedExpression(e)) return isEnvObject(e.expression);
  if (ts.isBinaryExpression(e)) return isEnvObject(e.left) || isEnvObject(e.right);
  if (ts.isIdentifier(e)) return e.text === 'env';
  return ts.isPropertyAccessExpression(e) && e.name.text === 'env';
}

const stringOf = (e: ts.Expression): string | undefined =>
  ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e) ? e.text : undefined;

/** `x as const`, `(x)`: the expression itself. */
function bare(e: ts.Expression): ts.Expression {
  while (ts.isAsExpression(e) || ts.isParenthesizedExpression(e)) e = e.expression;
  return e;
}

/**
 * A file's module-level string constants (`export const A = 'X'` as `A`, `const O = { k: 'X' } as
 * const` as `O.k`), which other files import by the same name; local ones are resolved in scope.
 */
function constantsOf(sf: ts.SourceFile, into: Map<string, string>): void {
  for (const statement of sf.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const d of statement.declarationList.declarations) {
      if (!ts.isIdentifier(d.name) || !d.initializer) continue;
      const init = bare(d.initializer);
      const text = stringOf(init);
      if (text !== undefined) into.set(d.name.text, text);
      if (!ts.isObjectLiteralExpression(init)) continue;
      for (const p of init.properties) {
        if (!ts.isPropertyAssignment(p) || !ts.isIdentifier(p.name)) continue;
        const value = stringOf(p.initializer);
        if (value !== undefined) into.set(`${d.name.text}.${p.name.text}`, value);
      }
    }
  }
}

/** All strings, or undefined when one is not a string. */
const allStrings = (xs: Array<string | undefined>): string[] | undefined =>
  xs.every((x) => x !== undefined) ? (xs as string[]) : undefined;

/**
 * The strings a local name `name` (used at `at`) can hold: a parameter typed as a union of string
 * literals, a `for (const x of ['A', 'B'])` variable, or a `const` of a string or such a template.
 */
function localValues(at: ts.Node, name: string): string[] | undefined {
  for (let n: ts.Node | undefined = at.parent; n; n = n.parent) {
    if (ts.isFunctionLike(n)) {
      const p = n.parameters.find((q) => ts.isIdentifier(q.name) && q.name.text === name);
      if (p?.type && ts.isUnionTypeNode(p.type)) {
        return allStrings(p.type.types.map((t) => (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal) ? t.literal.text : undefined)));
      }
      if (p) return undefined;
    }
    if (ts.isForOfStatement(n) && ts.isVariableDeclarationList(n.initializer)) {
      const d = n.initializer.declarations[0];
      const list = bare(n.expression);
      if (d && ts.isIdentifier(d.name) && d.name.text === name && ts.isArrayLiteralExpression(list))
        return allStrings(list.elements.map(stringOf));
    }
    if (ts.isBlock(n)) {
      for (const statement of n.statements) {
        if (statement.getStart() > at.getStart() || !ts.isVariableStatement(statement)) continue;
        const d = statement.declarationList.declarations.find((x) => ts.isIdentifier(x.name) && x.name.text === name);
        if (d?.initializer) return valuesOf(bare(d.initializer));
      }
    }
  }
  return undefined;
}

/** The strings an expression can be: a string, or a template over local names with known strings. */
function valuesOf(e: ts.Expression): string[] | undefined {
  const text = stringOf(e);
  if (text !== undefined) return [text];
  if (!ts.isTemplateExpression(e)) return undefined;
  let names = [e.head.text];
  for (const span of e.templateSpans) {
    const values = ts.isIdentifier(span.expression) ? localValues(e, span.expression.text) : undefined;
    if (!values) return undefined;
    names = names.flatMap((prefix) => values.map((v) => `${prefix}${v}${span.literal.text}`));
  }
  return names;
}

/**
 * The names an element access's argument can be: strings (see valuesOf, localValues, module
 * constants), `{ param }` when it is a parameter of the function around it, else undefined.
 */
function namesOf(arg: ts.Expression, constants: Map<string, string>): string[] | { param: string } | undefined {
  const values = valuesOf(arg);
  if (values) return values;
  if (ts.isIdentifier(arg)) {
    const local = localValues(arg, arg.text);
    if (local) return local;
    for (let n: ts.Node | undefined = arg; n; n = n.parent) {
      if (ts.isFunctionLike(n) && n.parameters.some((p) => ts.isIdentifier(p.name) && p.name.text === arg.text)) return { param: arg.text };
    }
  }
  const constant = constants.get(arg.getText());
  return constant === undefined ? undefined : [constant];
}

/** The name a function is called by: `function read(...)` or `const read = (...) => ...`. */
function functionName(fn: ts.Node): string | undefined {
  if (ts.isFunctionDeclaration(fn)) return fn.name?.text;
  const decl = fn.parent;
  return decl && ts.isVariableDeclaration(decl) && ts.isIdentifier(decl.name) ? decl.name.text : undefined;
}

/** `env.X = ...` and `delete env.X` set the environment (for a child process, a handler): not reads. */
function isWritten(n: ts.Node): boolean {
  const p = n.parent;
  if (!p) return false;
  if (ts.isDeleteExpression(p)) return true;
  return (
    ts.isBinaryExpression(p) &&
    p.left === n &&
    p.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
    p.operatorToken.kind <= ts.SyntaxKind.LastAssignment
  );
}

/** Where a file reads the environment: named reads, and functions that read `env[<parameter i>]`. */
function readsOf(sf: ts.SourceFile, constants: Map<string, string>) {
  const named: string[] = [];
  const unresolved: ts.Node[] = [];
  const readers = new Map<string, number>();
  const visit = (n: ts.Node): void => {
    if (isWritten(n)) return;
    if (ts.isPropertyAccessExpression(n) && isEnvObject(n.expression) && /^[A-Z][A-Z0-9_]*$/.test(n.name.text)) named.push(n.name.text);
    if (ts.isElementAccessExpression(n) && isEnvObject(n.expression)) {
      const names = namesOf(n.argumentExpression, constants);
      if (Array.isArray(names)) named.push(...names);
      else if (names) {
        let fn: ts.Node | undefined = n;
        while (fn && !ts.isFunctionLike(fn)) fn = fn.parent;
        const index = (fn as ts.SignatureDeclaration).parameters.findIndex((p) => p.name.getText() === names.param);
        const name = fn && functionName(fn);
        if (name) readers.set(name, index);
        else unresolved.push(n);
      } else unresolved.push(n);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  // Calls of the functions that read by parameter, with a string there.
  const calls = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && readers.has(n.expression.text)) {
      const arg = n.arguments[readers.get(n.expression.text) as number];
      const text = arg && stringOf(arg);
      if (text !== undefined) named.push(text);
      else unresolved.push(n);
    }
    ts.forEachChild(n, calls);
  };
  calls(sf);
  return { named, unresolved };
}

/** The environment variables the .ts files under `dirs` read. */
export function envReads(dirs: string[]): EnvReads {
  const files = sourceFiles(dirs).map((path) => ({
    file: relative(ROOT, path),
    sf: ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true),
  }));
  const constants = new Map<string, string>();
  for (const { sf } of files) constantsOf(sf, constants);
  const result: EnvReads = { names: new Map(), unresolved: [] };
  for (const { file, sf } of files) {
    const { named, unresolved } = readsOf(sf, constants);
    for (const name of named) result.names.set(name, (result.names.get(name) ?? new Set()).add(file));
    for (const n of unresolved) {
      const line = sf.getLineAndCharacterOfPosition(n.getStart()).line + 1;
      result.unresolved.push(`${file}:${line}: ${n.getText()}`);
    }
  }
  return result;
}
