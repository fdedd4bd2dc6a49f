/**
 * `npm run local:up [-- --brokers N]` / `local:down` / `local:reset` / `local:prepare`. `up` prints KAFKA_BROKERS=... and
 * DYNAMODB_ENDPOINT=... on stdout (so `eval "$(npm run -s local:up)"` works); progress, timings and what a restart lost go
 * to stderr. `down` keeps Kafka's data for the next `up`; `reset` stops the stack and deletes it.
 */
import { AppError } from '../../lib/errors';
import { ensureMoto } from './dynamodb';
import { ensureKafkaJars, javaBinary } from './kafka';
import { CACHE_DIR, downPersistent, parseUpArgs, upPersistent } from './stack';

const log = (line: string): void => {
  process.stderr.write(`[local] ${line}\n`);
};

async function main(cmd: string | undefined, args: string[]): Promise<void> {
  if (cmd === 'up') {
    const state = await upPersistent(log, parseUpArgs(args));
    process.stdout.write(`KAFKA_BROKERS=${state.kafkaBrokers}\nDYNAMODB_ENDPOINT=${state.dynamodbEndpoint}\n`);
  } else if (cmd === 'prepare') {
    // Downloads only (CI warms the caches before the timed test run).
    const t0 = Date.now();
    javaBinary();
    ensureKafkaJars(CACHE_DIR);
    ensureMoto(CACHE_DIR);
    log(`Kafka jars and moto ready in ${Date.now() - t0} ms`);
  } else if (cmd === 'down' || cmd === 'reset') {
    await downPersistent(log, { wipe: cmd === 'reset' });
  } else {
    process.stderr.write('usage: tsx infra/local/cli.ts up [--brokers N]|down|reset|prepare\n');
    process.exitCode = 2;
  }
}

main(process.argv[2], process.argv.slice(3)).catch((err: unknown) => {
  // Prerequisite problems are explained in one line; anything else keeps its stack for debugging.
  process.stderr.write(err instanceof AppError ? `[local] error: ${err.message}\n` : `${String((err as Error)?.stack ?? err)}\n`);
  process.exitCode = 1;
});
