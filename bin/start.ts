/**
 * `npm start`: starts (or reuses) the local Kafka broker and DynamoDB emulator, then runs the main
 * job on them: the demo (lib/local/demo.ts), or with `--config <file>` the streams of that deployment
 * config (lib/local/run-config.ts). The stack keeps running afterwards; `npm run local:down` stops it.
 * A service of the stack that had died is started again (Kafka on its data), saying what was lost.
 * KAFKA_BROKERS and DYNAMODB_ENDPOINT, when both set, name existing services instead.
 */
import { upPersistent } from '../infra/local/stack';
import { AppError, ValidationError } from '../lib/errors';
import { runDemo } from '../lib/local/demo';
import { parseStartArgs } from '../lib/local/demo-args';
import { runConfigFile } from '../lib/local/run-config';
import { handleStartSignals } from '../lib/local/signals';

const err = (s: string): void => void process.stderr.write(s);

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseStartArgs(process.argv.slice(2), { isTTY: process.stdout.isTTY === true });
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

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    err(e instanceof AppError ? `error: ${e.message}\n` : `${String((e as Error)?.stack ?? e)}\n`);
    process.exitCode = 1;
  },
);
