/**
 * `npm run local:up [-- --brokers N] [--secured] [--registry]` / `local:down` / `local:reset` / `local:prune` / `local:prepare`.
 * `up` prints KAFKA_BROKERS=... and DYNAMODB_ENDPOINT=... (and SCHEMA_REGISTRY_URL=... when a schema registry
 * runs) on stdout (so `eval "$(npm run -s local:up)"` works); progress, timings and what a restart lost go to
 * stderr. `down` keeps Kafka's data for the next `up`; `reset` stops the stack and deletes it; `prune` deletes
 * what the project's own tools left on it (prune.ts).
 * The same as `kafka-direct local <command>` from a stream project; the commands are listed in commands.ts.
 */
import { HelpRequestedError } from '../../lib/cli/args';
import { AppError } from '../../lib/errors';
import { ensureMoto } from './dynamodb';
import { ensureKafkaJars, javaBinary } from './kafka';
import { ensureRegistryBuild } from './registry';
import { ensureRic, ensureRie } from './lambda/tools';
import { ensureToxiproxy } from './toxiproxy';
import { ensureSystemPackages } from './system-packages';
import { CACHE_DIR } from './stack/dirs';
import { downPersistent, upPersistent } from './stack/persistent';
import { upRegistry } from './stack/registry-up';
import { securedEnv } from './stack/secured';
import { parseUpArgs } from './stack/up-args';
import { parsePruneArgs, prunePersistent } from './prune';
import { runTopic } from './topic';
import { isLocalCommand, localCommandsUsage, type LocalCommand } from './commands';

const log = (line: string): void => {
  process.stderr.write(`[local] ${line}\n`);
};

/** Runs one local-stack command; resolves to the exit code (prerequisite problems in one line). */
export async function runLocal(cmd: string | undefined, args: string[], usage = 'tsx infra/local/cli.ts'): Promise<number> {
  try {
    return await local(cmd, args, usage);
  } catch (err) {
    if (err instanceof HelpRequestedError) {
      process.stdout.write(err.help);
      return 0;
    }
    // Prerequisite problems are explained in one line; anything else keeps its stack for debugging.
    process.stderr.write(err instanceof AppError ? `[local] error: ${err.message}\n` : `${String((err as Error)?.stack ?? err)}\n`);
    return 1;
  }
}

/** Each command's run; the record's type ties it to LOCAL_COMMANDS, one handler per command. */
const COMMANDS: Record<LocalCommand, (args: string[], usage: string) => Promise<number>> = {
  up: async (args) => {
    const { registry, ...stack } = parseUpArgs(args);
    const state = await upPersistent(log, stack);
    // upPersistent starts the broker and the emulator; the registry is started apart, after them.
    const registryUrl = await upRegistry(log, { start: registry });
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
    return 0;
  },
  down: async () => {
    await downPersistent(log, { wipe: false });
    return 0;
  },
  reset: async () => {
    await downPersistent(log, { wipe: true });
    return 0;
  },
  prune: async (args) => {
    // The list on stdout (one line each), the summary on stderr.
    await prunePersistent((line) => process.stdout.write(`${line}\n`), log, parsePruneArgs(args));
    return 0;
  },
  prepare: async () => {
    // Downloads only (CI warms the caches before the timed test run).
    const t0 = Date.now();
    ensureSystemPackages(log);
    javaBinary();
    ensureKafkaJars(CACHE_DIR);
    ensureMoto(CACHE_DIR);
    ensureRegistryBuild(CACHE_DIR);
    ensureRie(CACHE_DIR);
    ensureRic(CACHE_DIR);
    ensureToxiproxy(CACHE_DIR);
    log(`Kafka jars, moto, the schema registry, Lambda's runtime emulator and client and the fault proxy ready in ${Date.now() - t0} ms`);
    return 0;
  },
  topic: (args, usage) => runTopic(args, `${usage} topic`),
};

async function local(cmd: string | undefined, args: string[], usage: string): Promise<number> {
  if (isLocalCommand(cmd)) return COMMANDS[cmd](args, usage);
  process.stderr.write(`usage: ${usage} ${localCommandsUsage()}\n`);
  return 2;
}

if (require.main === module) {
  void runLocal(process.argv[2], process.argv.slice(3)).then((code) => {
    process.exitCode = code;
  });
}
