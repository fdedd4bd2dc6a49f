/**
 * `npm start`: starts (or reuses) the local Kafka broker and DynamoDB emulator, then runs the main
 * job on them (lib/local/demo.ts). The stack keeps running afterwards; `npm run local:down` stops it.
 * A service of the stack that had died is started again (Kafka on its data), saying what was lost.
 * KAFKA_BROKERS and DYNAMODB_ENDPOINT, when both set, name existing services instead.
 */
import { upPersistent } from '../infra/local/stack';
import { AppError, ValidationError } from '../lib/errors';
import { runDemo } from '../lib/local/demo';
import { parseStartArgs } from '../lib/local/demo-args';
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
  const res = await runDemo(parsed.options, {
    kafkaBrokers: env.KAFKA_BROKERS ?? stack.kafkaBrokers,
    dynamodbEndpoint: env.DYNAMODB_ENDPOINT ?? stack.dynamodbEndpoint,
    env,
    out: (s) => void process.stdout.write(s),
    err,
    signal: signals.stop,
    hardSignal: signals.hard,
    onRunning: signals.running,
    columns: () => process.stdout.columns,
  });
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
