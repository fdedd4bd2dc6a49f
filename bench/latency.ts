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
import { parseArgs } from 'node:util';
import { ValidationError } from '../lib/errors';
import { javaProduceAccounts, type ProducedAccounts } from '../test/support/java';
import { benchLog, KEEP_OPTION, runBench, wholeNumberFlags } from './cli';
import { drainOnce } from './drain';
import { endOffsetsOf, withBenchTopic, withStack } from './stack';
import type { DeployedFlags } from './latency-deployed';
import type { LambdaLatencyFlags } from './latency-lambda';
import { createLatencyObserver, latencySummary } from './stats';

const log = benchLog('latency');

const OPTIONS = {
  rate: { type: 'string', default: '5000' },
  'duration-ms': { type: 'string' },
  partitions: { type: 'string', default: '10' },
  accounts: { type: 'string' },
  'trigger-interval-ms': { type: 'string', default: '1000' },
  handler: { type: 'string' },
  deployed: { type: 'boolean', default: false },
  runtime: { type: 'string', default: 'process' },
  'schedule-period-ms': { type: 'string', default: '20000' },
  'planner-timeout-ms': { type: 'string' },
  invocations: { type: 'string', default: '4' },
  runs: { type: 'string', default: '3' },
  ...KEEP_OPTION,
} as const;

/** The flags only one of the two modes takes: given to the other, they stop the run. */
const LOCAL_ONLY = ['duration-ms', 'handler'] as const;
const DEPLOYED_ONLY = ['schedule-period-ms', 'planner-timeout-ms', 'invocations', 'runs'] as const;

function parseFlags(argv: string[]) {
  const { values, tokens } = parseArgs({ args: argv, options: OPTIONS, tokens: true });
  const given = new Set(tokens.flatMap((t) => (t.kind === 'option' ? [t.name] : [])));
  if (values.runtime !== 'process' && values.runtime !== 'lambda')
    throw new ValidationError(`--runtime must be process or lambda, not ${values.runtime}`);
  if (values.runtime === 'lambda') return { keep: values.keep, lambda: lambdaFlags(values, given) };
  const wrong = (values.deployed ? LOCAL_ONLY : DEPLOYED_ONLY).find((f) => given.has(f));
  if (wrong) throw new ValidationError(`--${wrong} ${values.deployed ? 'is not taken with' : 'needs'} --deployed`);
  const handler = values.handler ?? 'running-totals';
  if (handler !== 'running-totals' && handler !== 'noop')
    throw new ValidationError(`--handler must be running-totals or noop, not ${handler}`);
  const withDefaults = {
    ...values,
    'duration-ms': values['duration-ms'] ?? '120000',
    // The deployed mode's workload (issue 23): 1,000 keys; the local mode's, 10,000.
    accounts: values.accounts ?? (values.deployed ? '1000' : '10000'),
  };
  const n = wholeNumberFlags(withDefaults, ['rate', 'duration-ms', 'partitions', 'accounts', 'trigger-interval-ms']);
  return {
    ...loadFlags(n),
    handler: handler as 'running-totals' | 'noop',
    keep: values.keep,
    deployed: values.deployed ? deployedFlags(values, n) : undefined,
  };
}

/** `--deployed --runtime lambda`: the load's flags; the schedule is the template's. */
function lambdaFlags(values: Partial<Record<keyof typeof OPTIONS, string | boolean | undefined>>, given: Set<string>): LambdaLatencyFlags {
  if (!values.deployed) throw new ValidationError('--runtime lambda needs --deployed');
  const wrong = ['handler', ...DEPLOYED_ONLY].find((f) => given.has(f));
  if (wrong) throw new ValidationError(`--${wrong} is not taken with --runtime lambda (the schedule is the template's; both handlers run)`);
  const withDefaults = { ...values, 'duration-ms': values['duration-ms'] ?? '60000', accounts: values.accounts ?? '1000' };
  return loadFlags(wholeNumberFlags(withDefaults, ['rate', 'duration-ms', 'partitions', 'accounts', 'trigger-interval-ms']));
}

/** The load both modes take: rate, duration, partitions, keys and trigger interval. */
function loadFlags(n: Record<'rate' | 'duration-ms' | 'partitions' | 'accounts' | 'trigger-interval-ms', number>): LambdaLatencyFlags {
  return {
    ratePerSec: n.rate,
    durationMs: n['duration-ms'],
    partitions: n.partitions,
    accounts: n.accounts,
    triggerIntervalMs: n['trigger-interval-ms'],
  };
}

/**
 * The deployed mode's schedule: `--schedule-period-ms` between invocations (shortened from the
 * deployed minute), the planner's timeout (default: the period plus 10 s, so each invocation still
 * ticks when the next arrives), `--invocations` (at least 2: one hand-over), `--runs`.
 */
function deployedFlags(
  values: Partial<Record<keyof typeof OPTIONS, string | boolean | undefined>>,
  n: { rate: number; partitions: number; accounts: number; 'trigger-interval-ms': number },
): DeployedFlags {
  const period = wholeNumberFlags(values, ['schedule-period-ms'])['schedule-period-ms'];
  const d = wholeNumberFlags({ ...values, 'planner-timeout-ms': values['planner-timeout-ms'] ?? String(period + 10_000) }, [
    'planner-timeout-ms',
    'invocations',
    'runs',
  ]);
  if (d.invocations < 2) throw new ValidationError(`--invocations must be at least 2 (one hand-over), not ${d.invocations}`);
  if (d['planner-timeout-ms'] <= period)
    throw new ValidationError(`--planner-timeout-ms must exceed --schedule-period-ms (${period}), or no invocation hands over`);
  if (n['trigger-interval-ms'] > period)
    throw new ValidationError(`--trigger-interval-ms must not exceed --schedule-period-ms (${period})`);
  return {
    ratePerSec: n.rate,
    partitions: n.partitions,
    accounts: n.accounts,
    triggerIntervalMs: n['trigger-interval-ms'],
    schedulePeriodMs: period,
    plannerTimeoutMs: d['planner-timeout-ms'],
    invocations: d.invocations,
    runs: d.runs,
    keep: values.keep === true,
  };
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
