/**
 * The operations CLI (`kafka-direct`, `npm run cli -- <command>`). Every argument is parsed and
 * validated before any client is created, so a wrong argument prints usage, exits 2 and changes
 * nothing. Exit codes: 0 done, 1 failed, 2 usage or invalid input, 3 refused by the current state
 * (e.g. ranges in flight), 130 interrupted.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import type { DeploymentConfig } from '../config/schema';
import { AppError, PreconditionError, ValidationError } from '../errors';
import { kafkaLogLines, quietKafkaLog } from '../kafka/client';
import { createOpsContext, type OpsContext, type OpsContextOptions } from '../ops/context';
import { parseDeadLetterId, redriveDeadLetters, renderDeadLetters, renderRedrive } from '../ops/dead-letters';
import { operatorName } from '../ops/lease';
import { peekJsonLines, peekRecords, renderPeek } from '../ops/peek';
import { dryRunPlan, renderPlan } from '../ops/plan';
import { createReplay, renderReplayPlan, renderReplayRun, runReplay } from '../ops/replay';
import { parseRewindTarget, renderRewind, rewindStream } from '../ops/rewind';
import { renderStatus, streamStatus } from '../ops/status';
import { replayStreamId, resolveStream } from '../ops/streams';
import { parseTimestamp, parseWhole } from '../ops/time';
import { loadCliConfig, type CliConfig } from './config';

export const EXIT = { ok: 0, failed: 1, usage: 2, refused: 3, interrupted: 130 } as const;

export type CliIo = { out(text: string): void; err(text: string): void };

export type CliDeps = {
  env: NodeJS.ProcessEnv;
  now?: () => number;
  /** Loads the deployment config (tests inject one). */
  loadConfig?: (configPath: string | undefined, env: NodeJS.ProcessEnv) => CliConfig;
  /** Builds the operations context (tests inject fakes). */
  contextFor?: (config: DeploymentConfig, env: NodeJS.ProcessEnv, options: OpsContextOptions) => OpsContext;
  /** Aborted on Ctrl-C (a running replay stops at a chunk boundary). */
  signal?: AbortSignal;
};

/** The package version, as `--version` prints it. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version?: unknown };
  return String(pkg.version);
}

const SINK_TABLE = /^[a-zA-Z0-9_.-]{3,255}$/;
const REPLAY_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** Runs one CLI invocation; resolves to the process exit code (never calls process.exit). */
export async function runCli(argv: string[], io: CliIo, deps: CliDeps): Promise<number> {
  const now = deps.now ?? Date.now;
  let exitCode: number = EXIT.ok;
  let current: Command | undefined;

  /** Loads the config, builds the context, runs `fn`, closes the context. */
  const withContext = async <T>(cmd: Command, fn: (ctx: OpsContext, cfg: CliConfig) => Promise<T>): Promise<T> => {
    const globals = cmd.optsWithGlobals<{ config?: string; verbose?: boolean }>();
    const cfg = (deps.loadConfig ?? loadCliConfig)(globals.config, deps.env);
    if (cfg.note) io.err(`(${cfg.note})\n`);
    // kafkajs logs every failed connection attempt; the CLI reports the failure once, itself.
    const kafkaLog = globals.verbose ? kafkaLogLines((l) => io.err(`${l}\n`)) : quietKafkaLog;
    const contextFor = deps.contextFor ?? ((c: DeploymentConfig, e: NodeJS.ProcessEnv, o: OpsContextOptions) => createOpsContext(c, e, undefined, o));
    const ctx = contextFor(cfg.config, cfg.env, { kafkaLog });
    try {
      return await fn(ctx, cfg);
    } finally {
      await ctx.close();
    }
  };
  const json = (v: unknown) => io.out(`${JSON.stringify(v)}\n`);

  const program = new Command('kafka-direct')
    .description('Operate kafka-lambda-direct streams (local stack or AWS: endpoints and credentials from the environment)')
    .option('--config <file>', 'deployment config file (default: STREAMS_CONFIG, else the local demo config)')
    .option('--verbose', "also print the Kafka client's own log lines (stderr)")
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .exitOverride();
  program.hook('preAction', (_p, action) => {
    current = action;
  });

  program
    .command('status')
    .description('per-partition committed offset, latest offset, lag, ranges in flight, failures, dead letters and data loss')
    .argument('[stream]', 'stream id (default: the only configured stream)')
    .option('--json', 'one JSON object')
    .action(async (id: string | undefined, opts: { json?: boolean }, cmd: Command) => {
      await withContext(cmd, async (ctx) => {
        const s = await streamStatus(ctx, resolveStream(ctx.config, id), now());
        if (opts.json) json(s);
        else io.out(`${renderStatus(s)}\n`);
        if (opts.json && s.topicsWarning) io.err(`warning: ${s.topicsWarning}\n`);
        // The ledger's half of the table is still worth showing, but lag without Kafka is unknown.
        if (s.kafkaError) {
          io.err(`error: ${s.kafkaError}\n`);
          exitCode = EXIT.failed;
        }
      });
    });

  program
    .command('plan')
    .description('what the next planner run would do (--dry-run: no lease, no writes, no dispatch)')
    .argument('[stream]', 'stream id (default: every configured stream)')
    .option('--dry-run', 'required: the planner itself runs on its schedule')
    .option('--json', 'the planner reports as JSON')
    .action(async (id: string | undefined, opts: { dryRun?: boolean; json?: boolean }, cmd: Command) => {
      if (!opts.dryRun) {
        throw new ValidationError('plan only runs with --dry-run: the planner itself runs on its schedule (npm start locally, EventBridge on AWS)');
      }
      await withContext(cmd, async (ctx) => {
        const streams = id === undefined ? ctx.config.streams : [resolveStream(ctx.config, id)];
        const reports = await dryRunPlan(ctx, streams, now());
        if (opts.json) json(reports);
        else io.out(`${reports.map(renderPlan).join('\n\n')}\n`);
        if (opts.json) for (const w of reports.flatMap((r) => r.warnings)) io.err(`warning: ${w}\n`);
        if (reports.some((r) => r.status === 'failed')) exitCode = EXIT.failed;
      });
    });

  program
    .command('peek')
    .description('records from an offset, read like the processor reads them; commits nothing')
    .argument('<topic>')
    .argument('<partition>')
    .argument('<offset>')
    .option('--count <n>', 'records to show (1-1000)', '10')
    .option('--stream <id>', "whose cluster and isolation level to use (default: the stream reading the topic)")
    .option('--json', 'one JSON object per record and line: offset, key, value (UTF-8, or base64), headers, timestamp')
    .action(async (topic: string, partitionText: string, offsetText: string, opts: { count: string; stream?: string; json?: boolean }, cmd: Command) => {
      const partition = parseWhole(partitionText, 'partition');
      const offset = parseWhole(offsetText, 'offset');
      const count = parseWhole(opts.count, '--count');
      if (count < 1 || count > 1000) throw new ValidationError(`invalid --count ${count}: between 1 and 1000`);
      if (!/^[a-zA-Z0-9._-]{1,249}$/.test(topic)) throw new ValidationError(`invalid topic name "${topic}"`);
      await withContext(cmd, async (ctx) => {
        const res = await peekRecords(ctx, { stream: opts.stream, topic, partition, offset, count });
        if (opts.json) for (const line of peekJsonLines(res)) io.out(`${line}\n`);
        else io.out(`${renderPeek(res)}\n`);
      });
    });

  program
    .command('rewind')
    .description('move a stream (or one partition) to earliest, latest, a timestamp or an offset; refused while ranges are in flight')
    .argument('<stream>')
    .requiredOption('--to <target>', 'earliest | latest | <offset> | <timestamp: 2024-05-01T12:00:00Z, @<epoch ms>, -2h>')
    .option('--topic <topic>', 'only this topic')
    .option('--partition <n>', 'only this partition')
    .option('--dry-run', 'show the new offsets, change nothing')
    .option('--json', 'the result as JSON')
    .action(async (id: string, opts: { to: string; topic?: string; partition?: string; dryRun?: boolean; json?: boolean }, cmd: Command) => {
      const target = parseRewindTarget(opts.to, now());
      const partition = opts.partition === undefined ? undefined : parseWhole(opts.partition, '--partition');
      await withContext(cmd, async (ctx) => {
        const stream = resolveStream(ctx.config, id);
        const res = await rewindStream(ctx, { stream, target, topic: opts.topic, partition, dryRun: opts.dryRun ?? false, who: operatorName(deps.env), nowMs: now() });
        if (opts.json) json(res);
        else io.out(`${renderRewind(res)}\n`);
      });
    });

  program
    .command('replay')
    .description('bounded backfill of [--from, --to) into a separate stream <stream>-replay-<name>, run here until finished')
    .argument('<stream>', 'the configured stream to replay')
    .requiredOption('--from <timestamp>', 'first record time: 2024-05-01T12:00:00Z, @<epoch ms>, -2h')
    .requiredOption('--to <timestamp>', 'end (exclusive) time; later than now means the current end')
    .option('--name <name>', 'replay name (default: the creation time in base 36); re-running with it continues that replay')
    .option('--sink-table <table>', "write into this (existing) sink table instead of the stream's")
    .addOption(new Option('--no-run', 'only create the replay and print its stream config (to run it with the deployed planner)'))
    .option('--timeout <seconds>', 'give up running after this long (the replay can be continued)')
    .option('--json', 'the result as JSON')
    .action(async (id: string, opts: { from: string; to: string; name?: string; sinkTable?: string; run: boolean; timeout?: string; json?: boolean }, cmd: Command) => {
      const nowMs = now();
      const fromMs = parseTimestamp(opts.from, nowMs, '--from');
      const toMs = parseTimestamp(opts.to, nowMs, '--to');
      if (fromMs >= toMs) throw new ValidationError(`--from must be before --to`);
      if (opts.name !== undefined && !REPLAY_NAME.test(opts.name)) throw new ValidationError(`invalid --name "${opts.name}": lowercase letters, digits, '_' and '-'`);
      if (opts.sinkTable !== undefined && !SINK_TABLE.test(opts.sinkTable)) throw new ValidationError(`invalid --sink-table "${opts.sinkTable}"`);
      const timeoutMs = opts.timeout === undefined ? undefined : parseWhole(opts.timeout, '--timeout') * 1000;
      if (opts.name !== undefined) replayStreamId(id, opts.name); // length check before anything runs
      await withContext(cmd, async (ctx) => {
        const source = ctx.config.streams.find((s) => s.id === id);
        if (!source) throw new ValidationError(`unknown stream "${id}" (configured: ${ctx.config.streams.map((s) => s.id).join(', ')})`);
        const plan = await createReplay(ctx, { source, fromMs, toMs, name: opts.name, sinkTable: opts.sinkTable, who: operatorName(deps.env), nowMs });
        if (!opts.json) io.out(`${renderReplayPlan(plan)}\n`);
        if (!opts.run) {
          if (opts.json) json({ replay: plan });
          else io.out(`\nnot run (--no-run). To run it on AWS, add this stream to STREAMS_CONFIG:\n${JSON.stringify(plan.stream, null, 2)}\n`);
          return;
        }
        const res = await runReplay(ctx, plan, { log: (l) => io.err(`${l}\n`), timeoutMs, signal: deps.signal });
        if (opts.json) json({ replay: plan, run: res });
        else io.out(`${renderReplayRun(res)}\n`);
        if (!res.finished) exitCode = deps.signal?.aborted ? EXIT.interrupted : EXIT.failed;
      });
    });

  program
    .command('dead-letters')
    .description('list dead letters; re-drive one or all through the stream handler')
    .argument('<stream>')
    .option('--redrive <id...>', 're-drive these (topic/partition/offset)')
    .option('--redrive-all', 're-drive every pending dead letter')
    .option('--json', 'JSON output')
    .action(async (id: string, opts: { redrive?: string[]; redriveAll?: boolean; json?: boolean }, cmd: Command) => {
      if (opts.redrive && opts.redriveAll) throw new ValidationError('give either --redrive <id...> or --redrive-all, not both');
      for (const t of opts.redrive ?? []) parseDeadLetterId(t);
      await withContext(cmd, async (ctx) => {
        const stream = resolveStream(ctx.config, id);
        if (!opts.redrive && !opts.redriveAll) {
          const letters = await ctx.ledger.listDeadLetters(stream.id);
          if (opts.json) json(letters);
          else io.out(`${renderDeadLetters(stream.id, letters)}\n`);
          return;
        }
        const results = await redriveDeadLetters(ctx, stream, { ids: opts.redrive, all: opts.redriveAll, nowMs: now });
        if (opts.json) json(results);
        else io.out(`${renderRedrive(results)}\n`);
        if (results.some((r) => r.outcome === 'failed')) exitCode = EXIT.failed;
      });
    });

  try {
    if (argv.length === 0) {
      io.err(program.helpInformation());
      return EXIT.usage;
    }
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version are not errors; commander already printed the message and usage hint.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof ValidationError) {
      io.err(`error: ${err.message}\nnothing was changed.\n\n${(current ?? program).helpInformation()}`);
      return EXIT.usage;
    }
    if (err instanceof PreconditionError) {
      io.err(`refused: ${err.message}\n`);
      return EXIT.refused;
    }
    if (err instanceof AppError) {
      io.err(`error (${err.code}): ${err.message}\n`);
      return EXIT.failed;
    }
    io.err(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT.failed;
  }
}
