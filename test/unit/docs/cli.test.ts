/**
 * The command-line tables of docs/operations.md list exactly the commands and options the code
 * accepts, read from the commander programs that parse them: the operations CLI and `npm start`
 * (`operationsProgram`, `startCommand`), the project commands `init`, `deploy` and `remove`
 * (`initProgram`, `deployProgram`), and the local stack's commands (`upProgram`, `pruneProgram`,
 * `topicProgram`; the commands from the one list its dispatcher runs, `LOCAL_COMMANDS`, and
 * package.json's `local:*` scripts). An option cell documents the options its code spans start
 * (`--to <target>` documents `--to`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { operationsProgram } from '../../../lib/cli/program';
import { DEMO_ONLY, startCommand } from '../../../lib/local/demo-args';
import { initProgram } from '../../../lib/project/init';
import { deployProgram } from '../../../infra/serverless/deploy';
import { isLocalCommand, LOCAL_COMMANDS, localCommandFlags, type LocalCommand } from '../../../infra/local/commands';
import { pruneProgram } from '../../../infra/local/prune';
import { upProgram } from '../../../infra/local/stack/up-args';
import { topicProgram } from '../../../infra/local/topic';
import { codeSpans, flagsIn, markdownTable } from '../../support/markdown-table';

const DOC = 'docs/operations.md';
const ROOT = join(__dirname, '..', '..', '..');

/** commander adds `-h, --help` to every program and command itself; it is not in `options`. */
const HELP = ['-h', '--help'];

/** The long and short flags of a command's options (with help), sorted. */
function flagsOf(cmd: Command, withHelp = true): string[] {
  const flags = cmd.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined));
  return [...flags, ...(withHelp ? HELP : [])].sort();
}

const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();

/** Each local stack command's program; a command without one takes no options. */
const LOCAL_PROGRAMS: Record<LocalCommand, Command | undefined> = {
  up: upProgram(),
  down: undefined,
  reset: undefined,
  prune: pruneProgram(),
  prepare: undefined,
  topic: topicProgram(),
};

/** The options a local stack command's program declares (without help). */
const localFlags = (name: LocalCommand): string[] => {
  const program = LOCAL_PROGRAMS[name];
  return program ? flagsOf(program, false) : [];
};

/** The first word of a cell's first code span: `status [stream]` -> `status`. */
const firstWord = (cell: string): string => (codeSpans(cell)[0] ?? '').split(/\s+/)[0] as string;

describe('docs: `kafka-direct` (docs/operations.md "CLI reference")', () => {
  const program = operationsProgram();
  const heading = '`kafka-direct`: the operations CLI';

  it('the global options table lists every option of the program, and no other', () => {
    const table = markdownTable(DOC, heading, { columns: ['option (before the command)'] });
    expect(sorted(table.rows.flatMap((r) => flagsIn(r[0] as string)))).toEqual(flagsOf(program));
  });

  it('the commands table lists every command with exactly its options', () => {
    const table = markdownTable(DOC, heading, { columns: ['command', 'options', 'what it does', 'writes'] });
    const documented = new Map(table.rows.map((r) => [firstWord(r[0] as string), sorted(flagsIn(r[1] as string))]));
    expect(sorted(documented.keys())).toEqual(sorted(program.commands.map((c) => c.name())));
    // Every command takes --help too; the table leaves it out (the global table says so once).
    for (const cmd of program.commands) {
      expect({ command: cmd.name(), options: documented.get(cmd.name()) }).toEqual({ command: cmd.name(), options: flagsOf(cmd, false) });
    }
  });

  it('the project commands table lists every local stack command with exactly its options', () => {
    const table = markdownTable(DOC, 'Project commands', { columns: ['command', 'options'] });
    const documented = new Map<string, string[]>();
    for (const row of table.rows.filter((r) => firstWord(r[0] as string) === 'local')) {
      // `local up\|down\|...` or `local topic <name>`; options `up --brokers <n>` name their command.
      const names = ((codeSpans(row[0] as string)[0] as string).split(/\s+/)[1] as string).split('|');
      for (const name of names) documented.set(name, documented.get(name) ?? []);
      for (const span of codeSpans(row[1] as string)) {
        const [first, ...rest] = span.split(/\s+/);
        const name = names.length === 1 ? (names[0] as string) : (first as string);
        const flags = (names.length === 1 ? [first, ...rest] : rest).filter((w): w is string => /^--[a-z]/.test(w ?? ''));
        documented.get(name)?.push(...flags);
      }
    }
    expect(sorted(documented.keys())).toEqual(sorted(Object.keys(LOCAL_COMMANDS)));
    for (const [name, flags] of documented) {
      expect({ command: name, options: sorted(flags) }).toEqual({ command: name, options: localFlags(name as LocalCommand) });
    }
  });

  it('the project commands table lists init, deploy and remove with exactly their options', () => {
    const table = markdownTable(DOC, 'Project commands', { columns: ['command', 'options'] });
    const programs = { init: initProgram(), deploy: deployProgram('deploy'), remove: deployProgram('remove') };
    for (const [name, program] of Object.entries(programs)) {
      const row = table.rows.find((r) => firstWord(r[0] as string) === name) ?? [];
      // `deploy --stage <s>`: an option the command needs is said with the command. The options cell's
      // other spans (a default such as `npx --package <file.tgz>`) document no option.
      const options = codeSpans(row[1] ?? '').filter((span) => span.startsWith('-'));
      const documented = sorted([...flagsIn(row[0] ?? ''), ...options.flatMap((span) => flagsIn(`\`${span}\``))]);
      expect({ command: name, options: documented }).toEqual({ command: name, options: flagsOf(program, false) });
    }
  });

  it("docs/deploy.md's option table lists exactly deploy's options", () => {
    const table = markdownTable('docs/deploy.md', 'Deploy a stream project', { columns: ['option', 'meaning'] });
    expect(sorted(table.rows.flatMap((r) => flagsIn(r[0] as string)))).toEqual(flagsOf(deployProgram('deploy'), false));
  });

  it("each local stack command's usage summary (kafka-direct --help) names exactly the options its program declares", () => {
    for (const name of Object.keys(LOCAL_COMMANDS) as LocalCommand[]) {
      expect({ command: name, options: sorted(localCommandFlags(name)) }).toEqual({ command: name, options: localFlags(name) });
    }
  });
});

describe('docs: `npm start` (docs/operations.md "CLI reference")', () => {
  const table = markdownTable(DOC, '`npm start`', { columns: ['option', 'demo', '`--config` run'] });
  const cmd = startCommand();

  it('the options table lists every option, and no other', () => {
    expect(sorted(table.rows.flatMap((r) => flagsIn(r[0] as string)))).toEqual(flagsOf(cmd));
  });

  it('says "refused" with --config for exactly the demo-only options', () => {
    const refused = table.rows.filter((r) => /^refused\b/.test(r[2] as string)).flatMap((r) => flagsIn(r[0] as string));
    const demoOnly = cmd.options.filter((o) => (DEMO_ONLY as readonly string[]).includes(o.attributeName())).map((o) => o.long as string);
    expect(sorted(refused)).toEqual(sorted(demoOnly));
  });
});

describe('docs: the local stack (docs/operations.md "Local stack")', () => {
  const table = markdownTable(DOC, 'Local stack', { columns: ['command', 'what it does', 'exit codes'] });
  const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  /** Each row's script (`local:up`) and the flags its command span gives it. */
  const rows = table.rows.map((r) => {
    const span = codeSpans(r[0] as string)[0] as string;
    return { script: /npm run (local:[a-z]+)/.exec(span)?.[1] ?? span, flags: flagsIn(`\`${span}\``) };
  });

  it('lists every local:* script of package.json, and no other', () => {
    expect(sorted(rows.map((r) => r.script))).toEqual(sorted(Object.keys(scripts).filter((s) => s.startsWith('local:'))));
  });

  it('gives each command exactly the options it accepts', () => {
    const documented = new Map<string, string[]>();
    for (const { script, flags } of rows) documented.set(script, [...(documented.get(script) ?? []), ...flags]);
    for (const [script, flags] of documented) {
      const command = script.slice('local:'.length);
      // Every local:* script runs one of the commands (local:topic through infra/local/topic.ts, as `local topic` does).
      expect(isLocalCommand(command)).toBe(true);
      expect({ script, options: sorted(flags) }).toEqual({ script, options: localFlags(command as LocalCommand) });
    }
  });
});
