/**
 * The README's "Your first stream", run as written: its files are written into a temporary
 * directory outside the repository (`S`), its shell blocks are run in order from the repository,
 * and the outcome is checked (the sink equals the produced clicks user by user, a second run counts
 * nothing twice, the handler's own test passes, the stage packages with its sink table). What
 * differs from a user's run: unique topic and table names on the shared stack, the test's stack
 * instead of `npm run local:up`, and `sls package` into a temporary directory; the deploy block is
 * not run.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { uniqueName } from '../support/env';

const ROOT = resolve(__dirname, '..', '..');

type Block = { lang: string; info: string; text: string };

/** The fenced blocks of the README section "Your first stream", in order. */
function walkthrough(): Block[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Your first stream\n');
  const end = readme.indexOf('\n## ', start + 1);
  if (start < 0) throw new Error('README has no "Your first stream" section');
  const section = readme.slice(start, end);
  return [...section.matchAll(/^```(\S*)([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1] as string,
    info: (m[2] as string).trim(),
    text: m[3] as string,
  }));
}

const S = mkdtempSync(join(tmpdir(), 'click-stream-'));
const packageDir = mkdtempSync(join(tmpdir(), 'click-stream-package-'));
const names = { topic: uniqueName('clicks'), ledger: uniqueName('click-stream-ledger'), sink: uniqueName('click-counts') };
afterAll(() => {
  rmSync(S, { recursive: true, force: true });
  rmSync(packageDir, { recursive: true, force: true });
});

/** The walkthrough's text with this run's names. */
function localise(text: string): string {
  return text
    .replaceAll('"topics": ["clicks"]', `"topics": ["${names.topic}"]`)
    .replaceAll('local:topic -- clicks ', `local:topic -- ${names.topic} `)
    .replaceAll('click-stream-ledger', names.ledger)
    .replaceAll('"name": "click-counts"', `"name": "${names.sink}"`)
    .replaceAll('sls package --stage clicks', `sls package --package ${packageDir} --stage clicks`);
}

type Ran = { line: string; status: number | null; stdout: string; stderr: string };

/** Runs one shell line of the walkthrough from the repository, with S and the test stack's endpoints. */
function sh(line: string): Ran {
  const env: NodeJS.ProcessEnv = { ...process.env, S, SLS_TELEMETRY_DISABLED: '1' };
  for (const name of ['AWS_PROFILE', 'AWS_DEFAULT_PROFILE', 'AWS_SESSION_TOKEN', 'STREAMS_CONFIG', 'LEDGER_TABLE']) delete env[name];
  const run = spawnSync('bash', ['-c', line], { cwd: ROOT, env, encoding: 'utf8', timeout: 240_000 });
  return { line, status: run.status, stdout: run.stdout ?? '', stderr: run.stderr ?? '' };
}

const blocks = walkthrough();
const commands = blocks
  .filter((b) => b.lang === 'sh' && b.info !== 'deploy')
  .flatMap((b) => b.text.split('\n'))
  .map((l) => l.trim())
  .filter(Boolean);
const ran = new Map<string, Ran>();
const output = (prefix: string): Ran => {
  const r = [...ran.values()].find((x) => x.line.includes(prefix));
  if (!r) throw new Error(`no walkthrough command containing ${prefix}`);
  return r;
};

beforeAll(() => {
  for (const b of blocks.filter((x) => x.info.startsWith('file='))) {
    const file = join(S, b.info.slice('file='.length));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, localise(b.text));
  }
  for (const line of commands) {
    // `S` is this test's directory, and the stack is the test run's (KAFKA_BROKERS, DYNAMODB_ENDPOINT).
    if (line.startsWith('export S=') || line.startsWith('eval "$(npm run -s local:up)"')) continue;
    const r = sh(localise(line));
    ran.set(line, r);
    if (r.status !== 0) throw new Error(`walkthrough step failed (exit ${r.status}): ${line}\n${r.stdout}${r.stderr}`);
  }
}, 600_000);

describe('README: your first stream', () => {
  it('has the steps: topic, handler, config, local run, sink, handler test, package, deploy', () => {
    expect(blocks.filter((b) => b.info.startsWith('file=')).map((b) => b.info)).toEqual([
      'file=handlers/click-counts.ts',
      'file=streams.json',
      'file=handlers/click-counts.test.ts',
    ]);
    expect(commands.some((c) => c.startsWith('npm start -- --config'))).toBe(true);
    expect(blocks.some((b) => b.info === 'deploy' && b.text.includes('sls deploy'))).toBe(true);
  });

  it('runs the handler file outside the repository exactly once: the sink equals the produced clicks, user by user', () => {
    const produced: Record<string, number> = {};
    for (const line of readFileSync(join(S, 'clicks.jsonl'), 'utf8').split('\n').filter(Boolean)) {
      const key = (JSON.parse(line) as { key: string }).key;
      produced[key] = (produced[key] ?? 0) + 1;
    }
    expect(Object.values(produced).reduce((a, b) => a + b, 0)).toBe(3500);
    const sink = Object.fromEntries(
      output(' sink clicks')
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { userId: string; clicks: number })
        .map((i) => [i.userId, i.clicks]),
    );
    expect(sink).toEqual(produced);
    expect(output('npm start -- --config').stdout).toContain('caught up: no lag, nothing in flight');
  });

  it('a second run resumes from the ledger and counts nothing twice', () => {
    const again = sh(`npm start -s -- --config "${S}/streams.json" --until-caught-up --json`);
    expect(again.status).toBe(0);
    const summary = JSON.parse(again.stdout.trim().split('\n').pop() as string) as { records: number; caughtUp: boolean };
    expect(summary).toMatchObject({ records: 0, caughtUp: true });
    const sink = sh(`npm run -s cli -- --config "${S}/streams.json" sink clicks`);
    expect(sink.stdout).toBe(output(' sink clicks').stdout);
  });

  it("passes the handler's own test with the project's test runner", () => {
    expect(output('npm run test:handler').stderr).toMatch(/Tests:\s+1 passed, 1 total/);
  });

  it('packages the stage with the handler bundled and the declared sink table', () => {
    const template = JSON.parse(readFileSync(join(packageDir, 'cloudformation-template-update-stack.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const tables = Object.values(template.Resources).filter((r) => r.Type === 'AWS::DynamoDB::Table');
    expect(tables.map((t) => t.Properties.TableName).sort()).toEqual(['kafka-lambda-direct-clicks-ledger', names.sink].sort());
  });
});
