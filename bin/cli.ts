/**
 * `kafka-direct <command>` (the package bin) / `npm run cli -- <command>`: the project tools, run here
 * (`init`, `start`, `deploy`, `local`), and the operations commands (lib/cli/program.ts).
 */
import { HelpRequestedError } from '../lib/cli/args';
import { runCli } from '../lib/cli/program';
import { AppError, ValidationError } from '../lib/errors';
import { LOCAL_COMMANDS } from '../infra/local/commands';

const MORE_COMMANDS = `Project commands:
  init <dir>           scaffold a stream project (package.json, handler, test, streams config) in a new directory
  start [options]      run the project's streams (or the demo, or --config <file>) on the local stack
  deploy --stage <s>   package the stack with the project's streams config and deploy it (--package-only: package;
                       --emulate: run the packaged stack locally under Lambda's runtime emulator instead)
  remove --stage <s>   delete the stage's stack (sls remove), with the same config and params it was deployed with
  local <${Object.keys(LOCAL_COMMANDS).join('|')}>
                       the local Kafka broker and DynamoDB emulator (topic <name> [--partitions n] [--produce <file.jsonl>])
Run "kafka-direct <command> --help" for a project command's options.`;

const err = (s: string): void => void process.stderr.write(s);

/** A project tool's failure: bad input in one line with exit 2, an AppError in one line with exit 1, else the stack; `--help` its help. */
async function tool(run: () => Promise<number> | number): Promise<number> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof HelpRequestedError) {
      process.stdout.write(e.help);
      return 0;
    }
    if (e instanceof ValidationError) {
      err(`error: ${e.message}\n`);
      return 2;
    }
    err(e instanceof AppError ? `error: ${e.message}\n` : `${String((e as Error)?.stack ?? e)}\n`);
    return 1;
  }
}

const TOOLS: Record<string, (args: string[]) => Promise<number>> = {
  init: (args) =>
    tool(async () => {
      const { initProject, parseInitArgs, renderInit } = await import('../lib/project/init');
      process.stdout.write(renderInit(initProject(parseInitArgs(args, process.cwd())), process.cwd()));
      return 0;
    }),
  start: async (args) => (await import('./start')).runStart(args),
  deploy: (args) =>
    tool(async () => {
      const { parseDeployArgs, runDeploy, runPackage } = await import('../infra/serverless/deploy');
      const o = parseDeployArgs(args, process.cwd(), process.env);
      if (!o.emulate) return runDeploy(o, process.env, err);
      const { runEmulated } = await import('../infra/serverless/emulate');
      const stopped = new Promise<void>((r) => process.once('SIGINT', () => r()));
      return runEmulated(o, process.env, (p, dir) => runPackage(p, dir, process.env), err, stopped);
    }),
  remove: (args) =>
    tool(async () => {
      const { parseDeployArgs, runRemove } = await import('../infra/serverless/deploy');
      return runRemove(parseDeployArgs(args, process.cwd(), process.env, 'remove'), process.env);
    }),
  local: async ([cmd, ...args]) => (await import('../infra/local/cli')).runLocal(cmd, args, 'kafka-direct local'),
};

/** The operations CLI, with Ctrl-C: a running replay stops at a chunk boundary; a second one exits at once. */
function operations(argv: string[]): Promise<number> {
  const interrupt = new AbortController();
  process.once('SIGINT', () => {
    interrupt.abort();
    process.once('SIGINT', () => process.exit(130));
  });
  return runCli(
    argv,
    { out: (s) => process.stdout.write(s), err },
    { env: process.env, signal: interrupt.signal, moreCommands: MORE_COMMANDS },
  );
}

async function main(argv: string[]): Promise<number> {
  const run = TOOLS[argv[0] ?? ''];
  return run ? run(argv.slice(1)) : operations(argv);
}

// `kafka-direct sink | head`: a reader that has had enough is not a failure.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
  process.exit(process.exitCode ?? 0);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    err(`${String((e as Error)?.stack ?? e)}\n`);
    process.exitCode = 1;
  },
);
