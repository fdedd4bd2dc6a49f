/**
 * `kafka-direct init <dir>`: scaffolds a stream project in its own directory: a package.json that
 * depends on the engine (and names its streams config), tsconfig, a typed fold handler with its test,
 * a streams config, sample data, and the scripts `start`, `test`, `deploy` and `produce`. Refuses a
 * directory that is not empty (a lone `.git` excepted) unless `--force`; writes nothing on a refusal.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { Command } from 'commander';
import { parseArgv, usageLine } from '../cli/args';
import { ValidationError } from '../errors';
import { isSourceCheckout, PACKAGE_ROOT, packageFile } from '../paths';

export type InitOptions = {
  dir: string;
  /** Write into a non-empty directory (files of the same names are replaced). */
  force: boolean;
  /** The engine dependency as npm takes it (`^0.1.0`, `file:../engine.tgz`); default: see `engineSpec`. */
  engine?: string;
  /** The package name (default: the directory's name). */
  name?: string;
};

/** `init`'s argument and options, without parsing: `parseInitArgs` parses with it, the docs' test reads it. */
export function initProgram(): Command {
  return new Command('kafka-direct init')
    .description('scaffold a stream project (package.json, handler, test, streams config) in a new directory')
    .argument('<dir>', 'the directory (made if missing)')
    .option('--force', 'write into a non-empty directory, replacing files of the same names')
    .option('--engine <npm spec>', 'the engine dependency (default: the tarball npx ran from, the clone, else ^<version>)')
    .option('--name <package name>', "the package name (default: the directory's name)");
}

/** The options of `init`, validated; ValidationError with the usage on anything wrong. */
export function parseInitArgs(argv: string[], cwd: string): InitOptions {
  const program = initProgram();
  const usage = usageLine(program);
  const { opts, operands } = parseArgv<{ force?: boolean; engine?: string; name?: string }>(
    program,
    argv,
    (reason) => new ValidationError(`${reason}\n${usage}`),
  );
  const dir = operands[0] as string;
  const name = opts.name ?? packageNameOf(basename(resolve(cwd, dir)));
  if (!/^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/.test(name) || name.length > 214) {
    throw new ValidationError(`${JSON.stringify(name)} is not an npm package name: pass --name <name>\n${usage}`);
  }
  return { dir: resolve(cwd, dir), force: opts.force === true, engine: opts.engine, name };
}

/** What `init` wrote, for its report. */
export type InitResult = { dir: string; files: string[]; replaced: string[]; engine: string };

/** Scaffolds the project (see the file's comment). */
export function initProject(o: InitOptions, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): InitResult {
  const name = o.name ?? packageNameOf(basename(o.dir));
  const engine = o.engine ?? engineSpec(o.dir, env, cwd);
  const files = scaffoldFiles(name, engine);
  const existing = checkTarget(o.dir, o.force, Object.keys(files));
  mkdirSync(o.dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(o.dir, path, '..'), { recursive: true });
    writeFileSync(join(o.dir, path), content);
  }
  return { dir: o.dir, files: Object.keys(files).sort(), replaced: existing, engine };
}

/** Refuses a non-empty directory unless forced; returns the scaffold's files that exist already. */
function checkTarget(dir: string, force: boolean, paths: string[]): string[] {
  if (!existsSync(dir)) return [];
  const entries = readdirSync(dir).filter((e) => e !== '.git');
  if (entries.length && !force) {
    const shown = entries.slice(0, 5).join(', ') + (entries.length > 5 ? ', ...' : '');
    throw new ValidationError(`${dir} is not empty (${shown}): choose a new directory, or pass --force to write into it`);
  }
  return paths.filter((p) => existsSync(join(dir, p)));
}

/**
 * The engine dependency of a new project: the tarball `npx --package <file.tgz>` ran from (as a
 * path relative to the project); from a clone, the clone itself (`file:`); else this version.
 */
export function engineSpec(projectDir: string, env: NodeJS.ProcessEnv, cwd: string): string {
  const asked = env.npm_config_package;
  if (asked && /\.t(ar\.)?gz$/.test(asked) && existsSync(resolve(cwd, asked))) return `file:${relative(projectDir, resolve(cwd, asked))}`;
  if (isSourceCheckout()) return `file:${relative(projectDir, PACKAGE_ROOT) || '.'}`;
  return `^${enginePackage().version}`;
}

type EnginePackage = { version: string; devDependencies: Record<string, string> };

function enginePackage(): EnginePackage {
  return JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as EnginePackage;
}

/** Every file of the project, by path: the templates, and the files made from the names. */
function scaffoldFiles(name: string, engine: string): Record<string, string> {
  const dir = packageFile('templates', 'stream');
  const files: Record<string, string> = {};
  const walk = (sub: string) => {
    for (const entry of readdirSync(join(dir, sub), { withFileTypes: true })) {
      const path = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      // npm drops .gitignore files from packages: the template is `gitignore`.
      else files[path === 'gitignore' ? '.gitignore' : path] = readFileSync(join(dir, path), 'utf8').replaceAll('__NAME__', name);
    }
  };
  walk('');
  files['package.json'] = `${JSON.stringify(projectPackage(name, engine), null, 2)}\n`;
  files['streams.json'] = `${JSON.stringify(streamsConfig(name), null, 2)}\n`;
  files['data/clicks.jsonl'] = sampleClicks(1000, 20);
  return files;
}

/** The project's package.json: the engine, the tools its tests use (at the engine's own tested versions), and its scripts. */
function projectPackage(name: string, engine: string): Record<string, unknown> {
  const dev = enginePackage().devDependencies;
  const tools = ['@swc/core', '@swc/jest', '@types/jest', '@types/node', 'jest', 'typescript'];
  return {
    name,
    version: '0.1.0',
    private: true,
    description: 'A Kafka stream on AWS Lambda (kafka-lambda-direct)',
    scripts: {
      start: 'kafka-direct start',
      test: 'tsc --noEmit && jest',
      deploy: 'kafka-direct deploy',
      produce: 'kafka-direct local topic clicks --partitions 3 --produce data/clicks.jsonl',
    },
    kafkaDirect: { config: 'streams.json' },
    engines: { node: '>=22' },
    dependencies: { 'kafka-lambda-direct': engine },
    devDependencies: Object.fromEntries(tools.map((t) => [t, dev[t] ?? '*'])),
  };
}

function streamsConfig(name: string): Record<string, unknown> {
  const base = name.replace(/^@[^/]+\//, '').replace(/[^a-zA-Z0-9_.-]+/g, '-');
  return {
    $schema: './node_modules/kafka-lambda-direct/streams.schema.json',
    ledgerTable: `${base}-ledger`,
    streams: [
      {
        id: 'clicks',
        // The deployed stage's brokers (replace before deploying); local runs read KAFKA_BROKERS, the local stack.
        kafka: { brokers: ['kafka-1.example.com:9092'] },
        topics: ['clicks'],
        handler: {
          module: './handlers/click-counts.ts',
          mode: 'dynamodb-exactly-once',
          sinkTable: { name: `${base}-click-counts`, key: { partitionKey: 'userId' } },
        },
      },
    ],
  };
}

/** `count` clicks over `users` users, as JSON lines of `{"key", "value"}` (what `kafka-direct local topic --produce` takes). */
function sampleClicks(count: number, users: number): string {
  const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ key: `user-${i % users}`, value: { page: `/p/${i % 7}` } }));
  return `${lines.join('\n')}\n`;
}

/** A directory name made an npm package name: lowercase, odd characters as '-'. */
function packageNameOf(dirName: string): string {
  return (
    dirName
      .toLowerCase()
      .replace(/[^a-z0-9-._~]+/g, '-')
      .replace(/^[-._]+/, '') || 'my-stream'
  );
}

/** The lines `init` prints: what it wrote and what to do next. */
export function renderInit(r: InitResult, cwd: string): string {
  const rel = relative(cwd, r.dir) || '.';
  const lines = [
    `created a stream project in ${rel} (kafka-lambda-direct ${r.engine}):`,
    ...r.files.map((f) => `  ${f}${r.replaced.includes(f) ? ' (replaced)' : ''}`),
    '',
    'next:',
    `  cd ${rel}`,
    '  npm install',
    '  npm test                          # type check + handler tests',
    '  npm run produce                   # local stack up, 1,000 sample clicks into topic "clicks"',
    '  npm start -- --until-caught-up    # the stream on the local stack, until it has caught up',
    '  npm run deploy -- --stage dev --package-only',
  ];
  return `${lines.join('\n')}\n`;
}
