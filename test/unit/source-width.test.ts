/** Source lines stay within the formatter's width: prettier does not break strings or comments, so this rule does. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
const ROOTS = ['lib', 'functions', 'bin', 'infra'];
const SOURCE = /\.(ts|js|cjs|mjs)$/;
const MAX_COLUMNS = 140;

/** `<line number>: <columns>` of every line of `text` wider than `maxColumns`. */
function wideLines(text: string, maxColumns = MAX_COLUMNS): string[] {
  return text.split('\n').flatMap((line, i) => (line.length > maxColumns ? [`${i + 1}: ${line.length}`] : []));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.name !== 'node_modules' && !e.name.startsWith('.'))
    .flatMap((e) => (e.isDirectory() ? sourceFiles(join(dir, e.name)) : SOURCE.test(e.name) ? [join(dir, e.name)] : []));
}

/** Every over-wide line under lib/, functions/, bin/ and infra/, as `<file>:<line>: <columns>`. */
function wideSourceLines(): Map<string, string[]> {
  const wide = new Map<string, string[]>();
  for (const file of ROOTS.flatMap((r) => sourceFiles(join(ROOT, r)))) {
    const lines = wideLines(readFileSync(file, 'utf8'));
    if (lines.length) wide.set(relative(ROOT, file), lines);
  }
  return wide;
}

describe('source width', () => {
  it('reports a line over 140 columns, and not one of exactly 140', () => {
    expect(wideLines(['short', 'x'.repeat(140), 'y'.repeat(141), ''].join('\n'))).toEqual(['3: 141']);
  });

  it(`no line in lib/, functions/, bin/ or infra/ is over ${MAX_COLUMNS} columns`, () => {
    const found = [...wideSourceLines()].flatMap(([file, lines]) => lines.map((l) => `${file}:${l}`));
    expect(found).toEqual([]);
  });
});
