/** `npm start -- [options]`: the demo's command line, validated before anything starts. */
import { Command, CommanderError } from 'commander';
import { ValidationError } from '../errors';
import { parseWhole } from '../ops/time';
import { DEMO_DEFAULTS, type DemoOptions } from './demo';

export type StartArgs = { options: DemoOptions } | { help: string };

/** Parses the arguments; ValidationError (with the usage text) on anything wrong. */
export function parseStartArgs(argv: string[], out: { isTTY: boolean }): StartArgs {
  let usage = '';
  const cmd = new Command('npm start --')
    .description('Run the pipeline on the local stack: demo stream, planner every second, processors in this process')
    .option('--until-caught-up', 'bounded run: produce for --duration, then exit 0 once lag is zero and the sink matches')
    .option('--json', 'print one JSON summary {produced, applied, wallMs, invocations, ...} as the last line')
    .option('--rate <events/s>', 'events produced per second', String(DEMO_DEFAULTS.ratePerSec))
    .option('--duration <seconds>', `how long to produce (bounded default ${DEMO_DEFAULTS.boundedDurationMs / 1000}; else until Ctrl-C)`)
    .option('--partitions <n>', 'partitions the topic starts with', String(DEMO_DEFAULTS.partitions))
    .option('--add-partition-after <seconds>', 'add one partition after this long (default: half the duration, or 30 s); "never" to skip')
    .option('--accounts <n>', 'distinct keys (accounts)', String(DEMO_DEFAULTS.accounts))
    .option('--timeout <seconds>', 'bounded run: give up waiting for lag 0 after producing stopped', String(DEMO_DEFAULTS.timeoutMs / 1000))
    .option(
      '--concurrency <n>',
      'processors running at once (the local reserved concurrency); more ranges queue',
      String(DEMO_DEFAULTS.maxConcurrency),
    )
    .option('--no-progress', 'no live progress view')
    .option('--demo-config <file>', 'where to write the demo stream config for the CLI (default .local/demo/streams.json)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => (usage += s), writeErr: () => undefined });
  try {
    cmd.parse(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError && err.exitCode === 0) return { help: usage };
    const message = err instanceof CommanderError ? err.message.replace(/^error: /, '') : String(err);
    throw new ValidationError(`${message}\n\n${cmd.helpInformation()}`);
  }
  try {
    return { options: optionsOf(cmd, out.isTTY) };
  } catch (err) {
    if (err instanceof ValidationError) throw new ValidationError(`${err.message}\n\n${cmd.helpInformation()}`);
    throw err;
  }
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
    timeout: string;
    concurrency: string;
    progress: boolean;
    demoConfig?: string;
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
  const timeoutMs = positive(o.timeout, '--timeout', 86_400) * 1000;
  const maxConcurrency = positive(o.concurrency, '--concurrency', 1000);
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
    ...(o.demoConfig !== undefined ? { configFile: o.demoConfig } : {}),
  };
}
