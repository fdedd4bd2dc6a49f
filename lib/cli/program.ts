/**
 * The operations CLI (`kafka-direct`, `npm run cli -- <command>`). Every argument is parsed and
 * validated before any client is created, so a wrong argument prints usage, exits 2 and changes
 * nothing. Exit codes: 0 done, 1 failed, 2 usage or invalid input, 3 refused by the current state
 * (e.g. ranges in flight), 130 interrupted.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import type { DeploymentConfig } from '../config/schema';
import { AppError, PreconditionError, ValidationError } from '../errors';
import { kafkaLogLines, quietKafkaLog } from '../kafka/client';
import { createOpsContext, type OpsContext, type OpsContextOptions } from '../ops/context';
import { parseDeadLetterId, redriveDeadLetters, renderDeadLetters, renderRedrive, undeliveredById } from '../ops/dead-letters';
import { operatorName } from '../ops/lease';
import { peekJsonLines, peekRecords, renderPeek } from '../ops/peek';
import { RANGE_HISTORY_DAYS } from '../ports/ledger';
import { renderHistory, streamHistory } from '../ops/history';
import { migrateLedgers, renderMigration } from '../ops/migrate';
import { dryRunPlan, nothingRead, renderPlan, unavailableLine } from '../ops/plan';
import { createReplay, renderReplayPlan, renderReplayRun, runReplay } from '../ops/replay';
import { parseRewindTarget, renderRewind, rewindStream } from '../ops/rewind';
import { renderStatus, streamStatus, unavailableRows } from '../ops/status';
import { replayStreamId, resolveStream } from '../ops/streams';
import { partitionCount, unavailableText } from '../ops/unavailable';
import { parseTimestamp, parseWhole } from '../ops/time';
import { packageFile } from '../paths';
import { scanSinkItems } from '../sink/table.dynamodb';
import { loadCliConfig, type CliConfig, type CliConfigOptions } from './config';

export const EXIT = { ok: 0, failed: 1, usage: 2, refused: 3, interrupted: 130 } as const;

export type CliIo = { out(text: string): void; err(text: string): void };

export type CliDeps = {
  env: NodeJS.ProcessEnv;
  now?: () => number;
  /** Loads the deployment config (tests inject one). */
  loadConfig?: (configPath: string | undefined, env: NodeJS.ProcessEnv, opts: CliConfigOptions) => CliConfig;
  /** Builds the operations context (tests inject fakes). */
  contextFor?: (config: DeploymentConfig, env: NodeJS.ProcessEnv, options: OpsContextOptions) => OpsContext;
  /** Aborted on Ctrl-C (a running replay stops at a chunk boundary). */
  signal?: AbortSignal;
  /** More commands the `kafka-direct` bin runs itself (init, start, deploy, local), for the help text. */
  moreCommands?: string;
};

/** The package version, as `--version` prints it. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { version?: unknown };
  return String(pkg.version);
}

const SINK_TABLE = /^[a-zA-Z0-9_.-]{3,255}$/;
const REPLAY_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** What a command's action works with: the invocation's output, deps, clock and exit code. */
type Invocation = {
  io: CliIo;
  deps: CliDeps;
  now: () => number;
  /** Loads the config, builds the context, runs `fn`, closes the context. */
  withContext<T>(cmd: Command, fn: (ctx: OpsContext, cfg: CliConfig) => Promise<T>): Promise<T>;
  json(v: unknown): void;
  /** The exit code once the command returns (a command that finished but found a failure). */
  exitWith(code: number): void;
};

/** One command: its arguments and options, and its action (arguments, then options, as commander passes them). */
type CommandDef<O> = {
  define(cmd: Command): Command;
  run(inv: Invocation, args: Array<string | undefined>, opts: O, cmd: Command): Promise<void>;
};

/** Types a command's options for its `run` (the table holds them side by side). */
const command = <O>(def: CommandDef<O>): CommandDef<never> => def as CommandDef<never>;

const COMMANDS: Record<string, CommandDef<never>> = {
  sink: command<{ limit: string }>({
    define: (c) =>
      c
        .description("the items of the stream's sink table, one JSON object per line (exactly-once handlers)")
        .argument('[stream]', 'stream id (default: the only configured stream)')
        .option('--limit <n>', 'at most this many items', '1000'),
    run: (inv, [id], opts, cmd) =>
      inv.withContext(cmd, async (ctx) => {
        const stream = resolveStream(ctx.config, id);
        const table = stream.handler?.sinkTable;
        if (!table)
          throw new ValidationError(`stream ${stream.id} has no handler.sinkTable (an at-least-once handler writes where it likes)`);
        const limit = parseWhole(opts.limit, '--limit');
        for (const item of await scanSinkItems(ctx.dynamo, table, limit)) inv.json(item);
      }),
  }),
  status: command<{ json?: boolean }>({
    define: (c) =>
      c
        .description('per-partition committed offset, latest offset, lag, ranges in flight, failures, dead letters and data loss')
        .argument('[stream]', 'stream id (default: the only configured stream)')
        .option('--json', 'one JSON object'),
    run: (inv, [id], opts, cmd) =>
      inv.withContext(cmd, async (ctx) => {
        const s = await streamStatus(ctx, resolveStream(ctx.config, id), inv.now());
        if (opts.json) inv.json(s);
        else inv.io.out(`${renderStatus(s)}\n`);
        if (opts.json && s.topicsWarning) inv.io.err(`warning: ${s.topicsWarning}\n`);
        // Some leaders answered: the report is partial, not failed (the table marks the others).
        const unavailable = s.kafkaError ? undefined : unavailableRows(s);
        if (opts.json && unavailable) inv.io.err(`warning: ${unavailable}\n`);
        // The ledger's half of the table is still worth showing, but lag without Kafka is unknown.
        if (s.kafkaError) {
          inv.io.err(`error: ${s.kafkaError}\n`);
          inv.exitWith(EXIT.failed);
        }
      }),
  }),

  history: command<{ since: string; topic?: string; partition?: string; json?: boolean }>({
    define: (c) =>
      c
        .description(`the ranges the stream ran, oldest first (the ledger keeps them ${RANGE_HISTORY_DAYS} days)`)
        .argument('[stream]', 'stream id (default: the only configured stream)')
        .option('--since <timestamp>', 'ranges finished at or after: 2024-05-01T12:00:00Z, @<epoch ms>, -2h', '-1h')
        .option('--topic <topic>', 'only this topic')
        .option('--partition <n>', 'only this partition')
        .option('--json', 'one JSON object per range'),
    async run(inv, [id], opts, cmd) {
      const sinceMs = parseTimestamp(opts.since, inv.now(), '--since');
      const partition = opts.partition === undefined ? undefined : parseWhole(opts.partition, '--partition');
      await inv.withContext(cmd, async (ctx) => {
        const h = await streamHistory(ctx, resolveStream(ctx.config, id), { sinceMs, topic: opts.topic, partition });
        if (opts.json) for (const r of h.ranges) inv.json(r);
        else inv.io.out(`${renderHistory(h)}\n`);
      });
    },
  }),

  'migrate-ledger': command<{ json?: boolean }>({
    define: (c) =>
      c
        .description(
          "move a stream's ledger written by an earlier release to the current layout, in place " +
            '(stop its planner and let its processors finish first)',
        )
        .argument('[stream]', 'stream id (default: every configured stream)')
        .option('--json', 'one JSON object per stream'),
    run: (inv, [id], opts, cmd) =>
      inv.withContext(cmd, async (ctx) => {
        const streams = id === undefined ? ctx.config.streams : [resolveStream(ctx.config, id)];
        for (const r of await migrateLedgers(ctx, streams, inv.now())) {
          if (opts.json) inv.json(r);
          else inv.io.out(`${renderMigration(r)}\n`);
        }
      }),
  }),

  plan: command<{ dryRun?: boolean; json?: boolean }>({
    define: (c) =>
      c
        .description('what the next planner run would do (--dry-run: no lease, no writes, no dispatch)')
        .argument('[stream]', 'stream id (default: every configured stream)')
        .option('--dry-run', 'required: the planner itself runs on its schedule')
        .option('--json', 'the planner reports as JSON'),
    async run(inv, [id], opts, cmd) {
      if (!opts.dryRun) {
        throw new ValidationError(
          'plan only runs with --dry-run: the planner itself runs on its schedule (npm start locally, EventBridge on AWS)',
        );
      }
      await inv.withContext(cmd, async (ctx) => {
        const streams = id === undefined ? ctx.config.streams : [resolveStream(ctx.config, id)];
        const reports = await dryRunPlan(ctx, streams, inv.now());
        if (opts.json) inv.json(reports);
        else inv.io.out(`${reports.map(renderPlan).join('\n\n')}\n`);
        if (opts.json) for (const w of reports.flatMap((r) => r.warnings)) inv.io.err(`warning: ${w}\n`);
        // A partial plan (some leaders did not answer) is a plan; one that could read nothing is not.
        for (const r of reports) {
          const line = unavailableLine(r);
          if (line && nothingRead(r)) inv.io.err(`error: ${line}\n`);
          else if (line && opts.json) inv.io.err(`warning: ${line}\n`);
        }
        if (reports.some((r) => r.status === 'failed' || nothingRead(r))) inv.exitWith(EXIT.failed);
      });
    },
  }),

  peek: command<{ count: string; stream?: string; json?: boolean }>({
    define: (c) =>
      c
        .description('records from an offset, read like the processor reads them; commits nothing')
        .argument('<topic>')
        .argument('<partition>')
        .argument('<offset>')
        .option('--count <n>', 'records to show (1-1000)', '10')
        .option('--stream <id>', 'whose cluster and isolation level to use (default: the stream reading the topic)')
        .option('--json', 'one JSON object per record and line: offset, key, value (UTF-8, or base64), headers, timestamp'),
    async run(inv, [topicArg, partitionText, offsetText], opts, cmd) {
      const topic = topicArg as string;
      const partition = parseWhole(partitionText as string, 'partition');
      const offset = parseWhole(offsetText as string, 'offset');
      const count = parseWhole(opts.count, '--count');
      if (count < 1 || count > 1000) throw new ValidationError(`invalid --count ${count}: between 1 and 1000`);
      if (!/^[a-zA-Z0-9._-]{1,249}$/.test(topic)) throw new ValidationError(`invalid topic name "${topic}"`);
      await inv.withContext(cmd, async (ctx) => {
        const res = await peekRecords(ctx, { stream: opts.stream, topic, partition, offset, count });
        if (opts.json) for (const line of peekJsonLines(res)) inv.io.out(`${line}\n`);
        else inv.io.out(`${renderPeek(res)}\n`);
      });
    },
  }),

  rewind: command<{ to: string; topic?: string; partition?: string; dryRun?: boolean; json?: boolean }>({
    define: (c) =>
      c
        .description('move a stream (or one partition) to earliest, latest, a timestamp or an offset; refused while ranges are in flight')
        .argument('<stream>')
        .requiredOption('--to <target>', 'earliest | latest | <offset> | <timestamp: 2024-05-01T12:00:00Z, @<epoch ms>, -2h>')
        .option('--topic <topic>', 'only this topic')
        .option('--partition <n>', 'only this partition')
        .option('--dry-run', 'show the new offsets, change nothing')
        .option('--json', 'the result as JSON'),
    async run(inv, [id], opts, cmd) {
      const target = parseRewindTarget(opts.to, inv.now());
      const partition = opts.partition === undefined ? undefined : parseWhole(opts.partition, '--partition');
      await inv.withContext(cmd, async (ctx) => {
        const stream = resolveStream(ctx.config, id);
        const who = operatorName(inv.deps.env);
        const res = await rewindStream(ctx, {
          stream,
          target,
          topic: opts.topic,
          partition,
          dryRun: opts.dryRun ?? false,
          who,
          nowMs: inv.now(),
        });
        if (opts.json) inv.json(res);
        else inv.io.out(`${renderRewind(res)}\n`);
        // Only a dry run gets here with unavailable partitions (a rewind is refused): partial, or nothing read.
        if (!res.unavailable.length) return;
        const line =
          `Kafka offsets of ${partitionCount(res.unavailable.length)} of ` +
          `stream ${stream.id} unavailable: ${unavailableText(res.unavailable)}`;
        if (!res.partitions.length) {
          inv.io.err(`error: ${line}\n`);
          inv.exitWith(EXIT.failed);
        } else if (opts.json) inv.io.err(`warning: ${line}\n`);
      });
    },
  }),

  replay: command<ReplayOptions>({
    define: (c) =>
      c
        .description('bounded backfill of [--from, --to) into a separate stream <stream>-replay-<name>, run here until finished')
        .argument('<stream>', 'the configured stream to replay')
        .requiredOption('--from <timestamp>', 'first record time: 2024-05-01T12:00:00Z, @<epoch ms>, -2h')
        .requiredOption('--to <timestamp>', 'end (exclusive) time; later than now means the current end')
        .option('--name <name>', 'replay name (default: the creation time in base 36); re-running with it continues that replay')
        .option('--sink-table <table>', "write into this (existing) sink table instead of the stream's")
        .addOption(new Option('--no-run', 'only create the replay and print its stream config (to run it with the deployed planner)'))
        .option('--timeout <seconds>', 'give up running after this long (the replay can be continued)')
        .option('--json', 'the result as JSON'),
    run: replayCommand,
  }),

  'dead-letters': command<{ redrive?: string[]; redriveAll?: boolean; json?: boolean }>({
    define: (c) =>
      c
        .description('list dead letters; re-drive one or all through the stream handler')
        .argument('<stream>')
        .option('--redrive <id...>', 're-drive these (topic/partition/offset)')
        .option('--redrive-all', 're-drive every pending dead letter')
        .option('--json', 'JSON output'),
    async run(inv, [id], opts, cmd) {
      if (opts.redrive && opts.redriveAll) throw new ValidationError('give either --redrive <id...> or --redrive-all, not both');
      for (const t of opts.redrive ?? []) parseDeadLetterId(t);
      await inv.withContext(cmd, async (ctx) => {
        const stream = resolveStream(ctx.config, id);
        if (!opts.redrive && !opts.redriveAll) {
          const [letters, undelivered] = await Promise.all([
            ctx.ledger.listDeadLetters(stream.id),
            ctx.ledger.readPendingDeliveries({ stream: stream.id }),
          ]);
          const owed = undeliveredById(undelivered);
          if (opts.json) inv.json(letters.map((d) => ({ ...d, undelivered: owed.get(`${d.topic}/${d.partition}/${d.offset}`) ?? [] })));
          else inv.io.out(`${renderDeadLetters(stream.id, letters, undelivered)}\n`);
          return;
        }
        const results = await redriveDeadLetters(ctx, stream, { ids: opts.redrive, all: opts.redriveAll, nowMs: inv.now });
        if (opts.json) inv.json(results);
        else inv.io.out(`${renderRedrive(results)}\n`);
        if (results.some((r) => r.outcome === 'failed')) inv.exitWith(EXIT.failed);
      });
    },
  }),
};

type ReplayOptions = { from: string; to: string; name?: string; sinkTable?: string; run: boolean; timeout?: string; json?: boolean };

/** `replay`: validates every option, creates (or continues) the replay, and runs it here unless --no-run. */
async function replayCommand(inv: Invocation, [idArg]: Array<string | undefined>, opts: ReplayOptions, cmd: Command): Promise<void> {
  const id = idArg as string;
  const nowMs = inv.now();
  const fromMs = parseTimestamp(opts.from, nowMs, '--from');
  const toMs = parseTimestamp(opts.to, nowMs, '--to');
  if (fromMs >= toMs) throw new ValidationError(`--from must be before --to`);
  if (opts.name !== undefined && !REPLAY_NAME.test(opts.name))
    throw new ValidationError(`invalid --name "${opts.name}": lowercase letters, digits, '_' and '-'`);
  if (opts.sinkTable !== undefined && !SINK_TABLE.test(opts.sinkTable))
    throw new ValidationError(`invalid --sink-table "${opts.sinkTable}"`);
  const timeoutMs = opts.timeout === undefined ? undefined : parseWhole(opts.timeout, '--timeout') * 1000;
  if (opts.name !== undefined) replayStreamId(id, opts.name); // length check before anything runs
  await inv.withContext(cmd, async (ctx) => {
    const source = ctx.config.streams.find((s) => s.id === id);
    if (!source) throw new ValidationError(`unknown stream "${id}" (configured: ${ctx.config.streams.map((s) => s.id).join(', ')})`);
    const plan = await createReplay(ctx, {
      source,
      fromMs,
      toMs,
      name: opts.name,
      sinkTable: opts.sinkTable,
      who: operatorName(inv.deps.env),
      nowMs,
    });
    if (!opts.json) inv.io.out(`${renderReplayPlan(plan)}\n`);
    if (!opts.run) {
      if (opts.json) inv.json({ replay: plan });
      else
        inv.io.out(`\nnot run (--no-run). To run it on AWS, add this stream to STREAMS_CONFIG:\n${JSON.stringify(plan.stream, null, 2)}\n`);
      return;
    }
    const res = await runReplay(ctx, plan, { log: (l) => inv.io.err(`${l}\n`), timeoutMs, signal: inv.deps.signal });
    if (opts.json) inv.json({ replay: plan, run: res });
    else inv.io.out(`${renderReplayRun(res)}\n`);
    if (!res.finished) inv.exitWith(inv.deps.signal?.aborted ? EXIT.interrupted : EXIT.failed);
  });
}

/**
 * The operations program: its global options and commands, without actions. `runCli` runs it; the
 * docs' test reads its options and commands from it (test/unit/docs/cli.test.ts).
 */
export function operationsProgram(io: CliIo = { out: () => undefined, err: () => undefined }): Command {
  const program = new Command('kafka-direct')
    .description('Operate kafka-lambda-direct streams (local stack or AWS: endpoints and credentials from the environment)')
    .option(
      '--config <file>',
      "deployment config file (default: STREAMS_CONFIG, else the stream project's config, else the local demo config)",
    )
    .option('--local', "work against the recorded local stack (what `start` ran on) instead of the config's brokers and AWS")
    .option('--verbose', "also print the Kafka client's own log lines (stderr)")
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .exitOverride();
  for (const [name, def] of Object.entries(COMMANDS)) def.define(program.command(name));
  return program;
}

/** Runs one CLI invocation; resolves to the process exit code (never calls process.exit). */
export async function runCli(argv: string[], io: CliIo, deps: CliDeps): Promise<number> {
  let exitCode: number = EXIT.ok;
  let current: Command | undefined;
  const inv: Invocation = {
    io,
    deps,
    now: deps.now ?? Date.now,
    withContext: (cmd, fn) => withContext(io, deps, cmd, fn),
    json: (v) => io.out(`${JSON.stringify(v)}\n`),
    exitWith: (code) => {
      exitCode = code;
    },
  };
  const program = operationsProgram(io);
  if (deps.moreCommands) program.addHelpText('after', `\n${deps.moreCommands}`);
  program.hook('preAction', (_p, action) => {
    current = action;
  });
  for (const cmd of program.commands) {
    const def = COMMANDS[cmd.name()] as CommandDef<never>;
    // commander passes the declared arguments, then the options, then the command itself.
    cmd.action((...a: unknown[]) =>
      def.run(inv, a.slice(0, -2) as Array<string | undefined>, a[a.length - 2] as never, a[a.length - 1] as Command),
    );
  }
  try {
    if (argv.length === 0) {
      io.err(program.helpInformation());
      return EXIT.usage;
    }
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    return exitCodeOf(err, io, current ?? program);
  }
}

/** Loads the config, builds the context (quiet Kafka client unless --verbose), runs `fn`, closes the context. */
async function withContext<T>(io: CliIo, deps: CliDeps, cmd: Command, fn: (ctx: OpsContext, cfg: CliConfig) => Promise<T>): Promise<T> {
  const globals = cmd.optsWithGlobals<{ config?: string; verbose?: boolean; local?: boolean }>();
  const cfg = (deps.loadConfig ?? loadCliConfig)(globals.config, deps.env, { local: globals.local });
  if (cfg.note) io.err(`(${cfg.note})\n`);
  // kafkajs logs every failed connection attempt; the CLI reports the failure once, itself.
  const kafkaLog = globals.verbose ? kafkaLogLines((l) => io.err(`${l}\n`)) : quietKafkaLog;
  const contextFor =
    deps.contextFor ?? ((c: DeploymentConfig, e: NodeJS.ProcessEnv, o: OpsContextOptions) => createOpsContext(c, e, undefined, o));
  const ctx = contextFor(cfg.config, cfg.env, { kafkaLog });
  try {
    return await fn(ctx, cfg);
  } finally {
    await ctx.close();
  }
}

/** The exit code for what a command threw, after printing it (usage for bad input, refused for the state). */
function exitCodeOf(err: unknown, io: CliIo, current: Command): number {
  if (err instanceof CommanderError) {
    // --help and --version are not errors; commander already printed the message and usage hint.
    return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (err instanceof ValidationError) {
    io.err(`error: ${err.message}\nnothing was changed.\n\n${current.helpInformation()}`);
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
