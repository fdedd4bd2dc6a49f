/**
 * A stream project outside the repository, as a new user makes it from the README's "Your first
 * stream": the engine packed (`npm pack`), a project scaffolded from the tarball with `npx --package
 * <tgz> kafka-direct init`, installed (no registry for the engine), tested, run on a real topic until
 * caught up, and packaged for deploy; then what the README promises beyond its commands: a type error
 * fails `npm test`, a package the handler imports comes from the project's own node_modules (locally
 * and in the Lambda bundle, and is named when missing), the stream's IAM statements reach the
 * template, and bad input (init into a non-empty directory, a wildcard IAM action) is refused.
 *
 * What differs from a user's run: unique topic and table names on the test run's stack (KAFKA_BROKERS,
 * DYNAMODB_ENDPOINT instead of the project's own local stack), and every path in a temporary directory.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- word-wrap is CommonJS (`export =`)
const wrap = require('word-wrap') as (s: string, o: { width: number; cut: boolean; indent: string }) => string;
import { readZip } from '../deploy/zip';
import { uniqueName } from '../support/env';

const ROOT = resolve(__dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'stream-project-'));
const project = join(work, 'click-stream');
const names = { topic: uniqueName('clicks'), ledger: uniqueName('click-stream-ledger'), sink: uniqueName('click-counts') };
const WRAP_VERSION = (JSON.parse(readFileSync(join(ROOT, 'node_modules', 'word-wrap', 'package.json'), 'utf8')) as { version: string })
  .version;
/** The label the test's handler writes: what word-wrap makes of the user. */
const label = (user: string): string => wrap(user, { width: 4, cut: true, indent: '' }).split('\n').join('/');

type Block = { lang: string; info: string; text: string };
type Ran = { line: string; status: number | null; stdout: string; stderr: string };

/** The fenced blocks of the README section "Your first stream", in order. */
function walkthrough(): Block[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Your first stream\n');
  if (start < 0) throw new Error('README has no "Your first stream" section');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  return [...section.matchAll(/^```(\S*)([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1] as string,
    info: (m[2] as string).trim(),
    text: m[3] as string,
  }));
}

/** A walkthrough line with this run's paths. */
function localise(line: string): string {
  return line
    .replace(/^npm pack$/, `npm pack --pack-destination ${work}`)
    .replaceAll('./kafka-lambda-direct-', `${work}/kafka-lambda-direct-`)
    .replaceAll('../click-stream', project);
}

/** The environment of a user's shell here: the test stack, npm from its cache first, no AWS or stream settings. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
  env.SLS_TELEMETRY_DISABLED = '1';
  for (const name of ['AWS_PROFILE', 'AWS_DEFAULT_PROFILE', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'])
    delete env[name];
  for (const name of ['STREAMS_CONFIG', 'LEDGER_TABLE', 'JEST_WORKER_ID', 'KAFKA_DIRECT_HOME', 'npm_config_package']) delete env[name];
  return env;
}

function sh(line: string, cwd: string): Ran {
  const run = spawnSync('bash', ['-c', line], { cwd, env: userEnv(), encoding: 'utf8', timeout: 300_000 });
  return { line, status: run.status, stdout: run.stdout ?? '', stderr: run.stderr ?? '' };
}

const inProject = (line: string): Ran => sh(line, project);
const blocks = walkthrough();
const commands = blocks
  // Deploying needs AWS; emulating runs until Ctrl-C (test/integration/packaged-lambda.test.ts runs a packaged stack).
  .filter((b) => b.lang === 'sh' && b.info !== 'deploy' && b.info !== 'emulate')
  .flatMap((b) => b.text.split('\n'))
  .map((l) => l.trim())
  .filter(Boolean);
const ran = new Map<string, Ran>();
const output = (prefix: string): Ran => {
  const r = [...ran.values()].find((x) => x.line.startsWith(prefix));
  if (!r) throw new Error(`no walkthrough command starting with ${prefix}`);
  return r;
};

/** This run's topic and table names in the scaffolded project (the stack is shared by the whole test run). */
function localiseProject(): void {
  const configFile = join(project, 'streams.json');
  const config = readFileSync(configFile, 'utf8')
    .replace('"topics": [\n        "clicks"\n      ]', `"topics": [\n        "${names.topic}"\n      ]`)
    .replace('"ledgerTable": "click-stream-ledger"', `"ledgerTable": "${names.ledger}"`)
    .replace('"name": "click-stream-click-counts"', `"name": "${names.sink}"`);
  if (!config.includes(names.topic) || !config.includes(names.ledger) || !config.includes(names.sink))
    throw new Error(`the scaffolded streams.json changed shape:\n${config}`);
  writeFileSync(configFile, config);
  const pkgFile = join(project, 'package.json');
  writeFileSync(pkgFile, readFileSync(pkgFile, 'utf8').replace('local topic clicks ', `local topic ${names.topic} `));
}

/** npx keeps what it installed per package spec; this run's spec is its own, so its copy goes with the run. */
function removeNpxCopy(): void {
  const npxDir = join(process.env.npm_config_cache ?? join(homedir(), '.npm'), '_npx');
  if (!existsSync(npxDir)) return;
  for (const entry of readdirSync(npxDir)) {
    const manifest = join(npxDir, entry, 'package.json');
    if (existsSync(manifest) && readFileSync(manifest, 'utf8').includes(work))
      rmSync(join(npxDir, entry), { recursive: true, force: true });
  }
}

beforeAll(() => {
  let cwd = ROOT;
  for (const line of commands) {
    if (line.startsWith('cd ')) {
      cwd = resolve(cwd, localise(line.slice(3)));
      continue;
    }
    const r = sh(localise(line), cwd);
    ran.set(line, r);
    if (r.status !== 0) throw new Error(`walkthrough step failed (exit ${r.status}): ${line}\n${r.stdout}${r.stderr}`);
    if (line.includes(' kafka-direct init ')) localiseProject();
  }
}, 900_000);

afterAll(() => {
  removeNpxCopy();
  rmSync(work, { recursive: true, force: true });
});

/** Users and their click counts in the project's sample data. */
function producedClicks(times = 1): Record<string, number> {
  const produced: Record<string, number> = {};
  for (const line of readFileSync(join(project, 'data', 'clicks.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)) {
    const key = (JSON.parse(line) as { key: string }).key;
    produced[key] = (produced[key] ?? 0) + times;
  }
  return produced;
}

function sinkItems(): Array<Record<string, unknown>> {
  const r = inProject('npx kafka-direct --local sink');
  expect(r.status).toBe(0);
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('README: your first stream, as a project of its own', () => {
  it('has the steps: pack, init, install, test, produce, run, sink, package, deploy', () => {
    expect(commands).toEqual(expect.arrayContaining(['npm pack', 'npm install', 'npm test', 'npm start -- --until-caught-up']));
    expect(commands.some((c) => c.startsWith('npx --yes --package ./kafka-lambda-direct-') && c.includes(' kafka-direct init '))).toBe(
      true,
    );
    expect(blocks.some((b) => b.info === 'deploy' && b.text.includes('npm run deploy -- --stage dev'))).toBe(true);
    // The handler the README shows is the one init writes.
    const shown = blocks.find((b) => b.info === 'file=handlers/click-counts.ts');
    expect(shown?.text).toBe(readFileSync(join(project, 'handlers', 'click-counts.ts'), 'utf8'));
  });

  it('depends on the tarball it was made from, with the engine installed from it (no tsx, no engine dev dependency)', () => {
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies['kafka-lambda-direct']).toMatch(/^file:\.\.\/kafka-lambda-direct-\d+\.\d+\.\d+\.tgz$/);
    const engine = join(project, 'node_modules', 'kafka-lambda-direct');
    expect(existsSync(join(engine, 'dist', 'lib', 'index.d.ts'))).toBe(true);
    expect(existsSync(join(engine, 'tsconfig.json'))).toBe(false);
    expect(inProject('npx kafka-direct --version').stdout.trim()).toBe(
      (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    );
    // The entry points load in plain Node, outside any bundle or jest.
    const load = inProject(
      `node -e "const p=require('kafka-lambda-direct/functions/processor');const k=require('kafka-lambda-direct');const t=require('kafka-lambda-direct/testing');console.log(typeof p.handler, typeof k.foldHandler, typeof k.lastHeader, typeof t.runHandler)"`,
    );
    expect(load.stdout.trim()).toBe('function function function function');
  });

  it("passes the project's own npm test (type check and handler test)", () => {
    const test = output('npm test');
    expect(test.stdout).toContain('tsc --noEmit && jest');
    expect(test.stderr).toMatch(/Tests:\s+1 passed, 1 total/);
  });

  it('drains a real topic exactly: the sink equals the produced clicks, user by user', () => {
    expect(output('npm run produce').stdout).toContain(`topic ${names.topic}: created with 3 partition(s); produced 1000 records`);
    expect(output('npm start -- --until-caught-up').stdout).toContain('caught up: no lag, nothing in flight');
    const sink = Object.fromEntries(
      output('npx kafka-direct --local sink')
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => {
          const item = JSON.parse(l) as { userId: string; clicks: number };
          return [item.userId, item.clicks];
        }),
    );
    expect(sink).toEqual(producedClicks());
  });

  it('packages the stage with the handler bundled and the declared sink table', () => {
    const template = JSON.parse(readFileSync(join(project, '.serverless', 'dev', 'cloudformation-template-update-stack.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const tables = Object.values(template.Resources).filter((r) => r.Type === 'AWS::DynamoDB::Table');
    expect(tables.map((t) => t.Properties.TableName).sort()).toEqual(['click-stream-dev-ledger', names.sink].sort());
    const code = readZip(join(project, '.serverless', 'dev', 'processor.zip'))
      .find((e) => e.name === 'functions/processor.bundle.js')!
      .data()
      .toString('utf8');
    expect(code).toContain('has no user in its key');
  });

  it('fails npm test on a type error in the handler', () => {
    const file = join(project, 'handlers', 'click-counts.ts');
    const good = readFileSync(file, 'utf8');
    try {
      writeFileSync(file, good.replace("expression: 'ADD clicks :n'", 'expression: 42'));
      const r = inProject('npm test');
      expect(r.status).not.toBe(0);
      expect(r.stdout).toMatch(/handlers\/click-counts\.ts\(\d+,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
    } finally {
      writeFileSync(file, good);
    }
  }, 300_000);

  it('refuses to init into a non-empty directory and writes nothing there', () => {
    const before = readdirSync(project).sort();
    const r = inProject(`npx kafka-direct init ${project}`);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`error: ${project} is not empty (`);
    expect(r.stderr).toContain('pass --force to write into it');
    expect(readdirSync(project).sort()).toEqual(before);
  }, 300_000);
});

describe("a stream project's own dependencies and IAM statements", () => {
  const handlerFile = join(project, 'handlers', 'click-counts.ts');
  const configFile = join(project, 'streams.json');
  /**
   * The scaffolded handler, also writing a label per user made with word-wrap: a package of the
   * project's own (none of the engine's dependencies brings it along).
   */
  const withWrap = () =>
    readFileSync(handlerFile, 'utf8')
      .replace(
        "import type { FoldingHandler } from 'kafka-lambda-direct';",
        "import type { FoldingHandler } from 'kafka-lambda-direct';\nimport wrap from 'word-wrap';",
      )
      .replace(
        "write: (item, clicks) => ({ update: { ...item, expression: 'ADD clicks :n', values: { ':n': clicks } } }),",
        "write: (item, clicks) => ({\n      update: { ...item, expression: 'ADD clicks :n SET #label = :l', names: { '#label': 'label' }, values: { ':n': clicks, ':l': label(String(item.key.userId)) } },\n    }),",
      )
      .replace(
        'export default clickCounts;',
        "const label = (user: string): string => wrap(user, { width: 4, cut: true, indent: '' }).split('\\n').join('/');\n\nexport default clickCounts;",
      );

  it('names a package the handler imports but the project lacks, at load and at package time', () => {
    const wrapping = withWrap();
    expect(wrapping).toContain("import wrap from 'word-wrap'");
    expect(wrapping).toContain('const label = (user: string)');
    writeFileSync(handlerFile, wrapping);
    const run = inProject('npm start -- --until-caught-up');
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(
      /handler\.module "\.\/handlers\/click-counts\.ts" \(.*\): imports "word-wrap", which is not installed \(npm install word-wrap in /,
    );
    const pack = inProject('npm run deploy -- --stage dev --package-only');
    expect(pack.status).toBe(1);
    expect(`${pack.stdout}${pack.stderr}`).toContain('imports "word-wrap", which is not installed');
  }, 300_000);

  it('once installed, is used by the local run and bundled into the processor; the IAM statements reach the template', () => {
    expect(inProject(`npm install word-wrap@${WRAP_VERSION}`).status).toBe(0);
    // The scaffolded test compares whole items: now they also hold a bucket.
    const testFile = join(project, 'handlers', 'click-counts.test.ts');
    writeFileSync(
      testFile,
      readFileSync(testFile, 'utf8').replaceAll(
        /\{ userId: '(\w+)', clicks: (\d) \}/g,
        "expect.objectContaining({ userId: '$1', clicks: $2 })",
      ),
    );
    const test = inProject('npm test');
    expect(test.stderr).toMatch(/Tests:\s+1 passed, 1 total/);

    // The same 1,000 clicks again, counted by the handler that imports word-wrap.
    expect(inProject('npm run produce').status).toBe(0);
    const run = inProject('npm start -- --until-caught-up');
    expect({ status: run.status, stderr: run.stderr.slice(-3000) }).toMatchObject({ status: 0 });
    const expected = Object.entries(producedClicks(2)).map(([userId, clicks]) => ({ userId, clicks, label: label(userId) }));
    // Folded batches leave their applied-offset mark on the items they wrote (docs/ledger-schema.md); the counts are the point here.
    const withoutMarks = (item: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(item).filter(([k]) => !k.startsWith('_applied:')));
    expect(
      sinkItems()
        .map(withoutMarks)
        .sort((a, b) => String(a.userId).localeCompare(String(b.userId))),
    ).toEqual(expected.sort((a, b) => a.userId.localeCompare(b.userId)));

    const config = JSON.parse(readFileSync(configFile, 'utf8')) as { streams: Array<{ handler: Record<string, unknown> }> };
    config.streams[0]!.handler.iam = [{ actions: ['sqs:SendMessage'], resources: ['arn:aws:sqs:us-east-1:123456789012:click-alerts'] }];
    config.streams[0]!.handler.environment = { ALERTS_QUEUE: 'click-alerts' };
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    const pack = inProject('npm run deploy -- --stage dev --package-only');
    expect(pack.status).toBe(0);
    const code = readZip(join(project, '.serverless', 'dev', 'processor.zip'))
      .find((e) => e.name === 'functions/processor.bundle.js')!
      .data()
      .toString('utf8');
    // word-wrap's own function, by the name the bundle keeps (keepNames).
    expect(code).toContain('trimTabAndSpaces');
    const template = JSON.parse(readFileSync(join(project, '.serverless', 'dev', 'cloudformation-template-update-stack.json'), 'utf8')) as {
      Resources: Record<string, { Properties: Record<string, unknown> }>;
    };
    const statements = (role: string) =>
      (
        template.Resources[role]!.Properties as {
          Policies: Array<{ PolicyDocument: { Statement: Array<{ Action: string[]; Resource: unknown }> } }>;
        }
      ).Policies[0]!.PolicyDocument.Statement;
    expect(statements('ProcessorRole')).toContainEqual(
      expect.objectContaining({ Action: ['sqs:SendMessage'], Resource: ['arn:aws:sqs:us-east-1:123456789012:click-alerts'] }),
    );
    expect(statements('PlannerRole').some((s) => s.Action.includes('sqs:SendMessage'))).toBe(false);
    const env = (template.Resources.ProcessorLambdaFunction!.Properties as { Environment: { Variables: Record<string, unknown> } })
      .Environment.Variables;
    expect(env.ALERTS_QUEUE).toBe('click-alerts');
  }, 300_000);

  it('refuses an IAM statement with a wildcard action when packaging, in one line', () => {
    const config = JSON.parse(readFileSync(configFile, 'utf8')) as { streams: Array<{ handler: Record<string, unknown> }> };
    config.streams[0]!.handler.iam = [{ actions: ['sqs:*'], resources: ['arn:aws:sqs:us-east-1:123456789012:click-alerts'] }];
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    const pack = inProject('npm run deploy -- --stage dev --package-only');
    expect(pack.status).toBe(1);
    const errors = `${pack.stdout}${pack.stderr}`.split('\n').filter((l) => l.startsWith('Error: '));
    expect(errors).toEqual([expect.stringContaining('streams[0].handler.iam[0].actions[0]: "sqs:*" is a wildcard action')]);
  }, 300_000);
});
