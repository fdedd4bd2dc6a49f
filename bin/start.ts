/**
 * `npm start` / `kafka-direct start`: starts (or reuses) the local Kafka broker and DynamoDB emulator,
 * then runs the main job on them: the demo (lib/local/demo.ts), or with `--config <file>` the streams
 * of that deployment config (lib/local/run-config.ts); in a stream project (`kafka-direct init`) the
 * project's own config is the default. The stack keeps running afterwards; `npm run local:down` (or
 * `kafka-direct local down`) stops it. A service of the stack that had died is started again (Kafka
 * on its data), saying what was lost. KAFKA_BROKERS and DYNAMODB_ENDPOINT, when both set, name
 * existing services instead.
 */
import { upPersistent } from '../infra/local/stack/persistent';
import { AppError, ValidationError } from '../lib/errors';
import { runDemo } from '../lib/local/demo';
import { parseStartArgs } from '../lib/local/demo-args';
import { runConfigFile } from '../lib/local/run-config';
import { handleStartSignals } from '../lib/local/signals';
import { findStreamProject } from '../lib/project/project';

const err = (s: string): void => void process.stderr.write(s);

/** The arguments with the stream project's config added when none is given (a project runs its own streams). */
function withProjectConfig(argv: string[], cwd: string): string[] {
  if (argv.some((a) => a === '--config' || a.startsWith('--config=') || a === '--help' || a === '-h')) return argv;
  const project = findStreamProject(cwd);
  return project ? ['--config', project.configFile, ...argv] : argv;
}

/** Runs `start` with these arguments; resolves to the exit code. */
export async function runStart(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseStartArgs(withProjectConfig(argv, process.cwd()), { isTTY: process.stdout.isTTY === true });
  } catch (e) {
    if (e instanceof ValidationError) {
      err(`error: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if ('help' in parsed) {
    process.stdout.write(parsed.help);
    return 0;
  }
  const signals = handleStartSignals(process, err, (code) => process.exit(code));

  const env = process.env;
  const stack =
    env.KAFKA_BROKERS && env.DYNAMODB_ENDPOINT
      ? { kafkaBrokers: env.KAFKA_BROKERS, dynamodbEndpoint: env.DYNAMODB_ENDPOINT }
      : await upPersistent((line) => err(`[local] ${line}\n`));
  if (signals.stop.aborted) return 130;
  const deps = {
    kafkaBrokers: env.KAFKA_BROKERS ?? stack.kafkaBrokers,
    dynamodbEndpoint: env.DYNAMODB_ENDPOINT ?? stack.dynamodbEndpoint,
    env,
    out: (s: string) => void process.stdout.write(s),
    err,
    signal: signals.stop,
    hardSignal: signals.hard,
    onRunning: signals.running,
    columns: () => process.stdout.columns,
  };
  const res = 'run' in parsed ? await runConfigFile(parsed.run, deps) : await runDemo(parsed.options, deps);
  return res.exitCode;
}

/** Sets the exit code from a run, printing an AppError in one line and anything else with its stack. */
export function exitWith(run: Promise<number>): void {
  run.then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      err(e instanceof AppError ? `error: ${e.message}\n` : `${String((e as Error)?.stack ?? e)}\n`);
      process.exitCode = 1;
    },
  );
}

if (require.main === module) exitWith(runStart(process.argv.slice(2)));
