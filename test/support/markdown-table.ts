/**
 * Reads the tables of the docs, for the tests that check them against the code (test/unit/docs/).
 * A doc's table is found by the heading of its section and, where the section has several, by the
 * text just above it (`**Planner loop**`) or its column names: what a reader sees, not line numbers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** One table: its column names and rows (cells trimmed, `\|` unescaped), and the paragraph above it. */
export type MarkdownTable = { file: string; heading: string; intro: string; columns: string[]; rows: string[][] };

/** A table row's cells; `\|` inside a cell (in code spans too) is a literal bar, as GitHub renders it. */
function cells(line: string): string[] {
  const inner = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  return inner.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
}

/** The lines of the section under `heading` (a heading line's text without its #s), up to the next heading as high or higher. */
function section(file: string, heading: string): string[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const start = lines.findIndex((l) => /^#{1,6} /.test(l) && l.replace(/^#+ /, '').trim() === heading);
  if (start < 0) throw new Error(`${file}: no heading "${heading}"`);
  const level = (lines[start] as string).indexOf(' ');
  const end = lines.findIndex((l, i) => i > start && /^#{1,6} /.test(l) && l.indexOf(' ') <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The text of the section under `heading` (sub-sections included). */
export function markdownSection(file: string, heading: string): string {
  return section(file, heading).join('\n');
}

/** Every table of the section under `heading` (sub-sections included), in order. */
export function markdownTables(file: string, heading: string): MarkdownTable[] {
  const lines = section(file, heading);
  const tables: MarkdownTable[] = [];
  let inFence = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.startsWith('```')) inFence = !inFence;
    if (inFence || !line.startsWith('|') || !/^\|\s*-{3}/.test(lines[i + 1] ?? '')) continue;
    let introEnd = i;
    while (introEnd > 0 && (lines[introEnd - 1] as string).trim() === '') introEnd--;
    let introStart = introEnd;
    while (introStart > 0 && (lines[introStart - 1] as string).trim() !== '') introStart--;
    const rows: string[][] = [];
    let j = i + 2;
    for (; j < lines.length && (lines[j] as string).startsWith('|'); j++) rows.push(cells(lines[j] as string));
    tables.push({ file, heading, intro: lines.slice(introStart, introEnd).join('\n'), columns: cells(line), rows });
    i = j - 1;
  }
  return tables;
}

/**
 * The one table of the section under `heading` that follows text containing `after` and has the
 * given first columns (either may be left out); it is an error when none or several match.
 */
export function markdownTable(file: string, heading: string, which: { after?: string; columns?: string[] } = {}): MarkdownTable {
  const found = markdownTables(file, heading).filter(
    (t) =>
      (which.after === undefined || t.intro.includes(which.after)) &&
      (which.columns === undefined || which.columns.every((c, i) => t.columns[i] === c)),
  );
  if (found.length !== 1) throw new Error(`${file} "${heading}": ${found.length} tables match ${JSON.stringify(which)}, not one`);
  return found[0] as MarkdownTable;
}

/** The code spans (`...`) of a cell, in order. */
export function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
}

/** The long and short options (`--name`, `-x`) a cell's code spans name (`--to <target>` names `--to`). */
export function flagsIn(cell: string): string[] {
  return codeSpans(cell).flatMap((span) => [...span.matchAll(/(?:^|[\s[|])(--?[a-zA-Z][a-zA-Z0-9-]*)/g)].map((m) => m[1] as string));
}
