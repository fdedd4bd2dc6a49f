/**
 * `npm run bench:latency`: a steady load and its end-to-end latency. Kafka's Java producer writes
 * `--rate` records/s for `--duration-ms` (the e2e workload's keyed ~512 B JSON records) while the local
 * runtime drains them with the planner on a `--trigger-interval-ms` schedule. A record's latency runs
 * from its produce timestamp (the producer's send time, Kafka's CreateTime) to the commit that made
 * it count: the ledger write moving its range's progress past it (for exactly-once, the transaction
 * that also applied its sink writes), seen when that write returned `applied`.
 *
 * Progress goes to stderr; the last line of stdout is
 * {"handler","ratePerSec","durationMs","records","observed","p50Ms","p99Ms","maxMs","exact"}.
 * On a shared stack its topic, ledger and sink tables are deleted at the end unless --keep.
 *
 * `--deployed` measures the deployed shape instead: the planner and processor Lambda handlers,
 * invoked the way the schedule invokes the planner (bench/latency-deployed.ts). Its last line is
 * {"triggerIntervalMs","schedulePeriodMs","handovers","maxTickGapMs","noop":{"p50Ms","p99Ms","maxMs"},
 * "exactlyOnce":{"p50Ms","p99Ms","maxMs","exact"}}, medians over --runs (`maxTickGapMs`: the largest gap
 * between ticks across hand-overs).
 *
 * `--deployed --runtime lambda` runs what `sls package` ships instead: the packaged stack under Lambda's
 * runtime emulator and client, the planner on the template's schedule (bench/latency-lambda.ts), a
 * `--duration-ms` load (default 60 s) per handler. Its last line is {"runtime":"lambda","pollMs",
 * "noop":{"p50Ms","p99Ms","maxMs","initMs","invocations"},"exactlyOnce":{...,"exact"}}.
 */
// First: the Lambda handlers --deployed loads require middy, which is ESM-only.
import '../lib/runtime/require-middy';
import { Option } from 'commander';
import { wholeNumberOption } from '../lib/cli/args';
import { ValidationError } from '../lib/errors';
import { javaProduceAccounts, type ProducedAccounts } from '../test/support/java';
import { benchArgs, benchLog, benchProgram, runBench } from './cli';
import { drainOnce } from './drain';
import { endOffsetsOf, withBenchTopic, withStack } from './stack';
import type { DeployedFlags } from './latency-deployed';
import type { LambdaLatencyFlags } from './latency-lambda';
import { createLatencyObserver, latencySummary } from './stats';

const log = benchLog('latency');

const program = benchProgram('latency', 'a steady load and its end-to-end latency (--deployed: the deployed shape)')
  .addOption(wholeNumberOption('--rate <n>', 'records/s', 5000))
  .addOption(wholeNumberOption('--duration-ms <ms>', 'load duration (default 120000; 60000 with --runtime lambda)'))
  .addOption(wholeNumberOption('--partitions <n>', 'partitions', 10))
  .addOption(wholeNumberOption('--accounts <n>', 'keys (default 10000; 1000 with --deployed)'))
  .addOption(wholeNumberOption('--trigger-interval-ms <ms>', 'trigger interval', 1000))
  .addOption(new Option('--handler <name>', 'handler (default running-totals)').choices(['running-totals', 'noop']))
  .option('--deployed', 'through the deployed Lambda handlers')
  .addOption(new Option('--runtime <where>', 'process or lambda').choices(['process', 'lambda']).default('process'))
  .addOption(wholeNumberOption('--schedule-period-ms <ms>', 'schedule period', 20000))
  .addOption(wholeNumberOption('--planner-timeout-ms <ms>', 'planner timeout (default: the period + 10000)'))
  .addOption(wholeNumberOption('--invocations <n>', 'scheduled planner invocations', 4))
  .addOption(
    wholeNumberOption('--tick-chain-from-ms <ms>', "the shortest interval the tick chain ticks, as the deploy's tickChainFromMs", 5000),
  )
  .addOption(wholeNumberOption('--runs <n>', 'runs', 3))
  .option('--continuous', 'continuous mode: resident segments instead of micro-batches (with --deployed)')
  .addOption(wholeNumberOption('--segment-ms <ms>', 'continuous: segment length (at least 3 hand-overs per partition in the load)'))
  .addOption(wholeNumberOption('--commit-interval-ms <ms>', 'continuous: commit interval', 100));

type Opts = {
  rate: number;
  durationMs?: number;
  partitions: number;
  accounts?: number;
  triggerIntervalMs: number;
  handler?: 'running-totals' | 'noop';
  deployed?: boolean;
  runtime: 'process' | 'lambda';
  schedulePeriodMs: number;
  plannerTimeoutMs?: number;
  invocations: number;
  tickChainFromMs: number;
  runs: number;
  keep: boolean;
  continuous?: boolean;
  segmentMs?: number;
  commitIntervalMs: number;
};

/** The flags only one of the two modes takes: given to the other, they stop the run. */
const LOCAL_ONLY = ['--duration-ms', '--handler'] as const;
const DEPLOYED_ONLY = [
  '--schedule-period-ms',
  '--planner-timeout-ms',
  '--invocations',
  '--tick-chain-from-ms',
  '--runs',
  '--continuous',
  '--segment-ms',
  '--commit-interval-ms',
] as const;

function parseFlags(argv: string[]) {
  const o = benchArgs<Opts>(program, argv);
  const given = new Set(program.options.filter((x) => program.getOptionValueSource(x.attributeName()) === 'cli').map((x) => x.long));
  if (o.runtime === 'lambda') return { keep: o.keep, lambda: lambdaFlags(o, given) };
  const wrong = (o.deployed ? LOCAL_ONLY : DEPLOYED_ONLY).find((f) => given.has(f));
  if (wrong) throw new ValidationError(`${wrong} ${o.deployed ? 'is not taken with' : 'needs'} --deployed`);
  // The deployed mode's workload (issue 23): 1,000 keys; the local mode's, 10,000.
  const load = loadFlags({ ...o, durationMs: o.durationMs ?? 120_000, accounts: o.accounts ?? (o.deployed ? 1000 : 10_000) });
  return { ...load, handler: o.handler ?? 'running-totals', keep: o.keep, deployed: o.deployed ? deployedFlags(o, load) : undefined };
}

/** The continuous flags `--runtime lambda` takes too (its segments run in the segments function's environments). */
const LAMBDA_CONTINUOUS = new Set(['--continuous', '--segment-ms', '--commit-interval-ms']);

/** `--deployed --runtime lambda`: the load's flags, and `--continuous`'s; the schedule is the template's. */
function lambdaFlags(o: Opts, given: Set<string | undefined>): LambdaLatencyFlags {
  if (!o.deployed) throw new ValidationError('--runtime lambda needs --deployed');
  const wrong = ['--handler', ...DEPLOYED_ONLY.filter((f) => !LAMBDA_CONTINUOUS.has(f))].find((f) => given.has(f));
  if (wrong) throw new ValidationError(`${wrong} is not taken with --runtime lambda (the schedule is the template's; both handlers run)`);
  if (!o.continuous && (given.has('--segment-ms') || given.has('--commit-interval-ms'))) {
    throw new ValidationError('--segment-ms and --commit-interval-ms need --continuous');
  }
  const load = loadFlags({ ...o, durationMs: o.durationMs ?? 60_000, accounts: o.accounts ?? 1000 });
  if (!o.continuous) return load;
  // At least 3 hand-overs per partition while the load runs: a quarter of it by default.
  const segmentMs = o.segmentMs ?? Math.floor(load.durationMs / 4);
  if (segmentMs < 2_000) throw new ValidationError(`--segment-ms must be at least 2000 (the stream setting's minimum), not ${segmentMs}`);
  return { ...load, continuous: { segmentMs, commitIntervalMs: o.commitIntervalMs } };
}

/** The load both modes take: rate, duration, partitions, keys and trigger interval. */
function loadFlags(o: Opts & { durationMs: number; accounts: number }): LambdaLatencyFlags {
  return {
    ratePerSec: o.rate,
    durationMs: o.durationMs,
    partitions: o.partitions,
    accounts: o.accounts,
    triggerIntervalMs: o.triggerIntervalMs,
  };
}

/**
 * The deployed mode's schedule: `--schedule-period-ms` between invocations (shortened from the
 * deployed minute), the planner's timeout (default: the period plus 10 s, so each invocation still
 * ticks when the next arrives), `--invocations` (at least 2: one hand-over), `--runs`, and which
 * intervals the tick chain ticks (`--tick-chain-from-ms`, as deployed).
 */
function deployedFlags(o: Opts, load: LambdaLatencyFlags): DeployedFlags {
  const period = o.schedulePeriodMs;
  const plannerTimeoutMs = o.plannerTimeoutMs ?? period + 10_000;
  if (o.invocations < 2) throw new ValidationError(`--invocations must be at least 2 (one hand-over), not ${o.invocations}`);
  if (plannerTimeoutMs <= period)
    throw new ValidationError(`--planner-timeout-ms must exceed --schedule-period-ms (${period}), or no invocation hands over`);
  if (load.triggerIntervalMs > period) throw new ValidationError(`--trigger-interval-ms must not exceed --schedule-period-ms (${period})`);
  return {
    ratePerSec: load.ratePerSec,
    partitions: load.partitions,
    accounts: load.accounts,
    triggerIntervalMs: load.triggerIntervalMs,
    schedulePeriodMs: period,
    plannerTimeoutMs,
    invocations: o.invocations,
    tickChainFromMs: o.tickChainFromMs,
    runs: o.runs,
    keep: o.keep,
    ...(o.continuous ? { continuous: continuousFlags(o, period) } : {}),
  };
}

/**
 * `--continuous`: segments short enough for at least 3 hand-overs per partition while the load runs
 * (default: a quarter of it, the load being every scheduled period but the last), and the commit interval.
 */
function continuousFlags(o: Opts, period: number): { segmentMs: number; commitIntervalMs: number } {
  const loadMs = Math.max(1, o.invocations - 1) * period;
  const segmentMs = o.segmentMs ?? Math.floor(loadMs / 4);
  if (segmentMs < 2_000) throw new ValidationError(`--segment-ms must be at least 2000 (the stream setting's minimum), not ${segmentMs}`);
  if (segmentMs * 3 > loadMs) log(`--segment-ms ${segmentMs}: fewer than 3 hand-overs per partition in a ${loadMs} ms load`);
  return { segmentMs, commitIntervalMs: o.commitIntervalMs };
}

async function main(): Promise<void> {
  const parsed = parseFlags(process.argv.slice(2));
  const lambda = parsed.lambda;
  if (lambda) {
    const { runLambdaLatency } = await import('./latency-lambda');
    const result = await withStack(log, { keep: parsed.keep }, (stack) => runLambdaLatency(stack, lambda, log));
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const flags = parsed;
  if (flags.deployed) {
    const { runDeployedLatency } = await import('./latency-deployed');
    const result = await runDeployedLatency(flags.deployed, log);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  const records = Math.round((flags.ratePerSec * flags.durationMs) / 1000);
  await withStack(log, { keep: flags.keep }, (stack) =>
    withBenchTopic(stack, 'latency', flags.partitions, async ({ topic, ledgerTable, admin }) => {
      const brokers = stack.brokers;
      const observer = createLatencyObserver();
      let ends: number[] | undefined;
      let produced: ProducedAccounts | undefined;
      let producerError: unknown;
      const producing = javaProduceAccounts(brokers, { topic, records, accounts: flags.accounts, ratePerSec: flags.ratePerSec }).then(
        async (p) => {
          produced = p;
          ends = await endOffsetsOf(admin, topic);
          log(`produced ${p.sent} records at ${flags.ratePerSec}/s`);
        },
        (err: unknown) => {
          producerError = err;
        },
      );
      const exactlyOnce = flags.handler === 'running-totals';
      log(`producing ${records} records at ${flags.ratePerSec}/s into ${flags.partitions} partitions; ${flags.handler} drains them`);
      const [figures] = await Promise.all([
        drainOnce({
          brokers,
          ledgerTable,
          topic,
          endOffsets: () => {
            // A failed producer ends the drain at once instead of letting it wait for its timeout.
            if (producerError) throw producerError;
            return ends;
          },
          streamId: stack.name('latency'),
          handler: flags.handler,
          ...(exactlyOnce ? { sinkTable: stack.table('latency-totals'), expected: () => produced?.totals ?? {} } : {}),
          triggerIntervalMs: flags.triggerIntervalMs,
          timeoutMs: flags.durationMs + 30 * 60_000,
          observer,
          log,
        }),
        producing,
      ]);
      log(`detail ${JSON.stringify(figures)}`);
      const summary = latencySummary(observer.latenciesMs);
      process.stdout.write(
        `${JSON.stringify({ handler: flags.handler, ratePerSec: flags.ratePerSec, durationMs: flags.durationMs, records, ...summary, ...(exactlyOnce ? { exact: figures.exact === true } : {}) })}\n`,
      );
    }),
  );
}

runBench('latency', main);
