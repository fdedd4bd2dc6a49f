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
 */
import { parseArgs } from 'node:util';
import { ValidationError } from '../lib/errors';
import { javaProduceAccounts, type ProducedAccounts } from '../test/support/java';
import { benchLog, KEEP_OPTION, runBench, wholeNumberFlags } from './cli';
import { drainOnce } from './drain';
import { endOffsetsOf, withBenchTopic, withStack } from './stack';
import { createLatencyObserver, latencySummary } from './stats';

const log = benchLog('latency');

function parseFlags(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      rate: { type: 'string', default: '5000' },
      'duration-ms': { type: 'string', default: '120000' },
      partitions: { type: 'string', default: '10' },
      accounts: { type: 'string', default: '10000' },
      'trigger-interval-ms': { type: 'string', default: '1000' },
      handler: { type: 'string', default: 'running-totals' },
      ...KEEP_OPTION,
    },
  });
  const handler = values.handler;
  if (handler !== 'running-totals' && handler !== 'noop')
    throw new ValidationError(`--handler must be running-totals or noop, not ${handler}`);
  const n = wholeNumberFlags(values, ['rate', 'duration-ms', 'partitions', 'accounts', 'trigger-interval-ms']);
  return {
    ratePerSec: n.rate,
    durationMs: n['duration-ms'],
    partitions: n.partitions,
    accounts: n.accounts,
    triggerIntervalMs: n['trigger-interval-ms'],
    handler: handler as 'running-totals' | 'noop',
    keep: values.keep,
  };
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
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
