/** `npm start -- [options]`: the demo's command line, validated before anything starts. */
import { Command } from 'commander';
import { HelpRequestedError, parseArgv } from '../cli/args';
import { ValidationError } from '../errors';
import { parseWhole } from '../ops/time';
import { DEMO_DEFAULTS, type DemoOptions } from './demo';
import type { RunConfigOptions } from './run-config';

export type StartArgs = { options: DemoOptions } | { run: RunConfigOptions } | { help: string };

/** Demo options that mean nothing for a run of a config file's streams. */
export const DEMO_ONLY = ['rate', 'duration', 'partitions', 'addPartitionAfter', 'accounts', 'demoConfig', 'keep', 'continuous'] as const;

/** Default --timeout of a config run: give up after this long without a commit while lag remains. */
const CONFIG_RUN_TIMEOUT_MS = 300_000;

/**
 * `npm start`'s options, without parsing: `parseStartArgs` parses with it, and the docs' test reads
 * its options from it (test/unit/docs/cli.test.ts).
 */
export function startCommand(): Command {
  return new Command('npm start --')
    .description(
      'Run the pipeline on the local stack: the demo stream (default) or ' +
        'the streams of --config <file>; planner and processors in this process',
    )
    .option('--config <file>', "run this deployment config's streams (your handlers) instead of the demo")
    .option('--until-caught-up', 'bounded run: produce for --duration, then exit 0 once lag is zero and the sink matches')
    .option('--json', 'print one JSON summary {produced, applied, wallMs, invocations, ...} as the last line')
    .option('--rate <events/s>', 'events produced per second', String(DEMO_DEFAULTS.ratePerSec))
    .option('--duration <seconds>', `how long to produce (bounded default ${DEMO_DEFAULTS.boundedDurationMs / 1000}; else until Ctrl-C)`)
    .option('--partitions <n>', 'partitions the topic starts with', String(DEMO_DEFAULTS.partitions))
    .option('--add-partition-after <seconds>', 'add one partition after this long (default: half the duration, or 30 s); "never" to skip')
    .option('--accounts <n>', 'distinct keys (accounts)', String(DEMO_DEFAULTS.accounts))
    .option(
      '--timeout <seconds>',
      `bounded run: give up waiting for lag 0 after producing stopped (demo, default ${DEMO_DEFAULTS.timeoutMs / 1000}) ` +
        `or after nothing was committed (--config, default ${CONFIG_RUN_TIMEOUT_MS / 1000})`,
    )
    .option(
      '--concurrency <n>',
      'processors running at once (the local reserved concurrency); more ranges queue',
      String(DEMO_DEFAULTS.maxConcurrency),
    )
    .option('--continuous', 'continuous mode: resident segments commit records as they arrive (10 s segments, so hand-overs show)')
    .option('--no-progress', 'no live progress view')
    .option('--verbose', "also print the Kafka client's own log lines (by default a failure is said once, in one line)")
    .option('--demo-config <file>', 'where to write the demo stream config for the CLI (default .local/demo/streams.json)')
    .option('--keep', "keep the run's topic and sink table at exit (by default they are deleted)");
}

/** Parses the arguments; ValidationError (with the usage text) on anything wrong. */
export function parseStartArgs(argv: string[], out: { isTTY: boolean }): StartArgs {
  const cmd = startCommand();
  try {
    parseArgv(cmd, argv, (reason) => new ValidationError(`${reason}\n\n${cmd.helpInformation()}`));
  } catch (err) {
    if (err instanceof HelpRequestedError) return { help: err.help };
    throw err;
  }
  try {
    if (cmd.opts<{ config?: string }>().config !== undefined) return { run: configRunOf(cmd, out.isTTY) };
    return { options: optionsOf(cmd, out.isTTY) };
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError(`${err.message}\n\n${cmd.helpInformation()}`);
    throw err;
  }
}

function configRunOf(cmd: Command, isTTY: boolean): RunConfigOptions {
  const o = cmd.opts<{
    config: string;
    untilCaughtUp?: boolean;
    json?: boolean;
    timeout?: string;
    concurrency: string;
    progress: boolean;
    verbose?: boolean;
  }>();
  for (const name of DEMO_ONLY) {
    if (cmd.getOptionValueSource(name) === 'cli') {
      const flag = `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      throw new ValidationError(`${flag} is an option of the demo; with --config the streams come from the file`);
    }
  }
  if (o.config.trim() === '') throw new ValidationError('--config needs the path of a deployment config file');
  const json = o.json ?? false;
  const timeoutS = o.timeout !== undefined ? parseWhole(o.timeout, '--timeout') : CONFIG_RUN_TIMEOUT_MS / 1000;
  if (timeoutS < 1 || timeoutS > 86_400) throw new ValidationError(`invalid --timeout ${timeoutS}: between 1 and 86400`);
  return {
    configFile: o.config,
    untilCaughtUp: o.untilCaughtUp ?? false,
    json,
    timeoutMs: timeoutS * 1000,
    maxConcurrency: concurrencyOf(o.concurrency),
    progress: !o.progress ? 'off' : isTTY && !json ? 'tty' : 'lines',
    verbose: o.verbose ?? false,
  };
}

function optionsOf(cmd: Command, isTTY: boolean): DemoOptions {
  const o = cmd.opts<{
    untilCaughtUp?: boolean;
    json?: boolean;
    rate: string;
    duration?: string;
    partitions: string;
    addPartitionAfter?: string;
    accounts: string;
    timeout?: string;
    concurrency: string;
    progress: boolean;
    demoConfig?: string;
    verbose?: boolean;
    keep?: boolean;
    continuous?: boolean;
  }>();
  const bounded = o.untilCaughtUp ?? false;
  const positive = (text: string, what: string, max: number): number => {
    const n = parseWhole(text, what);
    if (n < 1 || n > max) throw new ValidationError(`invalid ${what} ${n}: between 1 and ${max}`);
    return n;
  };
  const ratePerSec = positive(o.rate, '--rate', 100_000);
  const durationMs =
    o.duration !== undefined ? positive(o.duration, '--duration', 86_400) * 1000 : bounded ? DEMO_DEFAULTS.boundedDurationMs : undefined;
  const partitions = positive(o.partitions, '--partitions', 1000);
  const accounts = positive(o.accounts, '--accounts', 1_000_000);
  const timeoutMs = positive(o.timeout ?? String(DEMO_DEFAULTS.timeoutMs / 1000), '--timeout', 86_400) * 1000;
  const maxConcurrency = concurrencyOf(o.concurrency);
  let addPartitionAfterMs: number | undefined;
  if (o.addPartitionAfter === 'never') addPartitionAfterMs = undefined;
  else if (o.addPartitionAfter !== undefined) addPartitionAfterMs = parseWhole(o.addPartitionAfter, '--add-partition-after') * 1000;
  else addPartitionAfterMs = durationMs !== undefined ? Math.floor(durationMs / 2) : DEMO_DEFAULTS.unboundedAddPartitionAfterMs;
  const json = o.json ?? false;
  return {
    untilCaughtUp: bounded,
    json,
    ratePerSec,
    durationMs,
    partitions,
    addPartitionAfterMs,
    accounts,
    timeoutMs,
    // The live table only on a terminal, and never mixed into JSON output.
    progress: !o.progress ? 'off' : isTTY && !json ? 'tty' : 'lines',
    triggerIntervalMs: DEMO_DEFAULTS.triggerIntervalMs,
    ledgerTable: DEMO_DEFAULTS.ledgerTable,
    maxConcurrency,
    verbose: o.verbose ?? false,
    keep: o.keep ?? false,
    continuous: o.continuous ?? false,
    ...(o.demoConfig !== undefined ? { configFile: o.demoConfig } : {}),
  };
}

/** `--concurrency`: processors at once, 1-1000. */
function concurrencyOf(text: string): number {
  const n = parseWhole(text, '--concurrency');
  if (n < 1 || n > 1000) throw new ValidationError(`invalid --concurrency ${n}: between 1 and 1000`);
  return n;
}
