/**
 * `npm run local:up [-- --brokers N] [--registry]` / `local:down` / `local:reset` / `local:prune` / `local:prepare`.
 * `up` prints KAFKA_BROKERS=... and DYNAMODB_ENDPOINT=... (and SCHEMA_REGISTRY_URL=... when a schema registry
 * runs) on stdout (so `eval "$(npm run -s local:up)"` works); progress, timings and what a restart lost go to
 * stderr. `down` keeps Kafka's data for the next `up`; `reset` stops the stack and deletes it; `prune` deletes
 * what the project's own tools left on it (prune.ts).
 * The same as `kafka-direct local up|down|reset|prepare` from a stream project.
 */
import { AppError } from '../../lib/errors';
import { ensureMoto } from './dynamodb';
import { ensureKafkaJars, javaBinary } from './kafka';
import { ensureRegistryBuild } from './registry';
import { ensureRic, ensureRie } from './lambda/tools';
import { ensureSystemPackages } from './system-packages';
import { CACHE_DIR, downPersistent, parseUpArgs, securedEnv, upPersistent, upRegistry } from './stack';
import { parsePruneArgs, prunePersistent } from './prune';
import { runTopic } from './topic';

const log = (line: string): void => {
  process.stderr.write(`[local] ${line}\n`);
};

/** Runs one local-stack command; resolves to the exit code (prerequisite problems in one line). */
export async function runLocal(cmd: string | undefined, args: string[], usage = 'tsx infra/local/cli.ts'): Promise<number> {
  try {
    return await local(cmd, args, usage);
  } catch (err) {
    // Prerequisite problems are explained in one line; anything else keeps its stack for debugging.
    process.stderr.write(err instanceof AppError ? `[local] error: ${err.message}\n` : `${String((err as Error)?.stack ?? err)}\n`);
    return 1;
  }
}

async function local(cmd: string | undefined, args: string[], usage: string): Promise<number> {
  if (cmd === 'up') {
    // --registry is the stack's own business, not the broker's: parseUpArgs never sees it.
    const withRegistry = args.includes('--registry');
    const state = await upPersistent(log, parseUpArgs(args.filter((a) => a !== '--registry')));
    const registryUrl = await upRegistry(log, { start: withRegistry });
    const lines = {
      KAFKA_BROKERS: state.kafkaBrokers,
      DYNAMODB_ENDPOINT: state.dynamodbEndpoint,
      ...(state.secured && securedEnv(state.secured)),
      ...(registryUrl ? { SCHEMA_REGISTRY_URL: registryUrl } : {}),
    };
    process.stdout.write(
      Object.entries(lines)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(''),
    );
  } else if (cmd === 'prepare') {
    // Downloads only (CI warms the caches before the timed test run).
    const t0 = Date.now();
    ensureSystemPackages(log);
    javaBinary();
    ensureKafkaJars(CACHE_DIR);
    ensureMoto(CACHE_DIR);
    ensureRegistryBuild(CACHE_DIR);
    ensureRie(CACHE_DIR);
    ensureRic(CACHE_DIR);
    log(`Kafka jars, moto, the schema registry and Lambda's runtime emulator and client ready in ${Date.now() - t0} ms`);
  } else if (cmd === 'prune') {
    // The list on stdout (one line each), the summary on stderr.
    await prunePersistent((line) => process.stdout.write(`${line}\n`), log, parsePruneArgs(args));
  } else if (cmd === 'down' || cmd === 'reset') {
    await downPersistent(log, { wipe: cmd === 'reset' });
  } else if (cmd === 'topic') {
    return runTopic(args, `${usage} topic`);
  } else {
    process.stderr.write(
      `usage: ${usage} up [--brokers N] [--secured] [--registry]|down|reset|prune [--dry-run] ` +
        `[--older-than 1d]|prepare|topic <name> [--partitions n] [--produce <file.jsonl>]\n`,
    );
    return 2;
  }
  return 0;
}

if (require.main === module) {
  void runLocal(process.argv[2], process.argv.slice(3)).then((code) => {
    process.exitCode = code;
  });
}
