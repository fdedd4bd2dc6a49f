/**
 * `npm run bench:e2e`: the end-to-end benchmark. Produces once, with Kafka's Java producer, a topic of
 * `--partitions` partitions holding `--records` records of ~512 B JSON `{"account","amount","pad"}`
 * keyed by one of `--accounts` accounts; then, `--runs` times, drains it (a) exactly-once with the
 * `running-totals` handler into a fresh sink table, checked account by account against what was
 * produced, (b) with the no-op at-least-once handler, both through the local runtime (planner loop and
 * in-process processors) with a fresh stream id each, and (c) with Kafka's ConsumerPerformance.
 *
 * Progress goes to stderr, with one `detail` JSON line per drain (ledger writes, planner ticks,
 * processor-seconds: the cost model's inputs). The last line of stdout is the result object:
 * {"records","consumerPerfRps","consumerPerfFetchRps","exactlyOnce":{"rps","ratio","wallMs",
 * "invocations","sinkWrites","writeUnitsPer1000","writeUnitsPerItem","idealWriteUnitsPerItem",
 * "idealWriteUnitsPer1000","exact"},"atLeastOnce":{"rps","ratio","fetchRatio","wallMs","invocations"},
 * "peakRssMb"}.
 *
 * Uses KAFKA_BROKERS and DYNAMODB_ENDPOINT when both are set (and deletes its topic, tables and
 * consumer groups at the end, unless --keep), else starts a private stack and removes it at the end.
 */
import { wholeNumberOption } from '../lib/cli/args';
import { ValidationError } from '../lib/errors';
import { javaProduceAccounts } from '../test/support/java';
import { benchArgs, benchLog, benchProgram, runBench } from './cli';
import { costPerMillion } from './cost';
import { drainOnce } from './drain';
import { consumerPerformance } from './kafka-tools';
import { endOffsetsOf, withBenchTopic, withStack } from './stack';
import { consumerPerfRps, e2eResult, type E2eRun } from './stats';

/** The processor's memory as deployed (serverless.yml processorMemorySize), for the cost line. */
const PROCESSOR_MEMORY_GB = 1;

const log = benchLog('e2e');

/** The workload of the issue that asked for this benchmark; flags shrink it for development. */
const E2E_DEFAULTS = { records: 2_000_000, accounts: 10_000, partitions: 10, runs: 1, triggerIntervalMs: 1000 } as const;

const program = benchProgram('e2e', 'one keyed topic drained exactly-once, at-least-once and by ConsumerPerformance')
  .addOption(wholeNumberOption('--records <n>', 'records produced (~512 B JSON each)', E2E_DEFAULTS.records))
  .addOption(wholeNumberOption('--accounts <n>', 'distinct keys (accounts), at most --records', E2E_DEFAULTS.accounts))
  .addOption(wholeNumberOption('--partitions <n>', "the topic's partitions", E2E_DEFAULTS.partitions))
  .addOption(wholeNumberOption('--runs <n>', 'drains of each kind', E2E_DEFAULTS.runs))
  .addOption(wholeNumberOption('--drain-timeout-ms <ms>', 'give up a drain after this long', 3 * 3600_000));

type Flags = { records: number; accounts: number; partitions: number; runs: number; drainTimeoutMs: number; keep: boolean };

function parseFlags(argv: string[]): Flags {
  const flags = benchArgs<Flags>(program, argv);
  // Every record its own account at most: a higher count would only leave accounts without records.
  if (flags.accounts > flags.records)
    throw new ValidationError(`--accounts must be at most --records (${flags.records}), not ${flags.accounts}`);
  return flags;
}

/** Kafka's ConsumerPerformance over the whole topic in a fresh group: its whole-run and fetch-only records/s. */
function runConsumerPerf(brokers: string, topic: string, records: number, group: string): { rps: number; fetchRps: number } {
  const { stdout } = consumerPerformance({ brokers, topic, records, group, timeoutMs: 30 * 60_000 });
  return { rps: consumerPerfRps(stdout), fetchRps: consumerPerfRps(stdout, 'fetch.nMsg.sec') };
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  await withStack(log, { keep: flags.keep }, (stack) =>
    withBenchTopic(stack, 'e2e', flags.partitions, async ({ topic, ledgerTable, admin }) => {
      const brokers = stack.brokers;
      const tp = Date.now();
      const produced = await javaProduceAccounts(brokers, { topic, records: flags.records, accounts: flags.accounts, sizeBytes: 512 });
      const ends = await endOffsetsOf(admin, topic);
      const inTopic = ends.reduce((s, o) => s + o, 0);
      if (produced.sent !== flags.records || inTopic !== flags.records)
        throw new Error(`produced ${produced.sent}, the topic holds ${inTopic}, expected ${flags.records}`);
      log(`produced ${flags.records} records over ${Object.keys(produced.totals).length} accounts into ${topic} in ${Date.now() - tp} ms`);
      const runs: E2eRun[] = [];
      for (let run = 1; run <= flags.runs; run++) {
        const common = { brokers, ledgerTable, topic, endOffsets: () => ends, triggerIntervalMs: E2E_DEFAULTS.triggerIntervalMs, log };
        const drain = async (kind: 'eo' | 'alo') => {
          const figures = await drainOnce({
            ...common,
            timeoutMs: flags.drainTimeoutMs,
            streamId: stack.name(`e2e-${kind}-${run}`),
            ...(kind === 'eo'
              ? { handler: 'running-totals', sinkTable: stack.table(`e2e-totals-${run}`), expected: () => produced.totals }
              : { handler: 'noop' }),
          });
          log(`run ${run} ${kind === 'eo' ? 'exactly-once' : 'at-least-once'} detail ${JSON.stringify(figures)}`);
          const cost = Object.entries(costPerMillion(figures, PROCESSOR_MEMORY_GB)).map(([k, usd]) => [k, Number(usd.toFixed(6))]);
          log(
            `run ${run} cost per million records (docs/COST.md, ${PROCESSOR_MEMORY_GB} GB processors, USD): ${JSON.stringify(Object.fromEntries(cost))}`,
          );
          return figures;
        };
        const exactlyOnce = await drain('eo');
        const atLeastOnce = await drain('alo');
        const perf = runConsumerPerf(brokers, topic, flags.records, stack.group(`e2e-perf-${run}`));
        log(
          `run ${run} ConsumerPerformance: ${Math.round(perf.rps)} records/s (nMsg.sec, group join included), ` +
            `${Math.round(perf.fetchRps)} fetching (fetch.nMsg.sec)`,
        );
        runs.push({ consumerPerfRps: perf.rps, consumerPerfFetchRps: perf.fetchRps, exactlyOnce, atLeastOnce });
      }
      log(
        'goals: exactlyOnce.ratio >= 0.13 (10,000 accounts: >= 0.45), atLeastOnce.ratio >= 0.5, writeUnitsPer1000 <= 100 ' +
          '(10,000 accounts: <= 12), writeUnitsPerItem <= 1.1, atLeastOnce.fetchRatio >= 0.6, peakRssMb <= 512',
      );
      process.stdout.write(`${JSON.stringify(e2eResult(flags.records, runs))}\n`);
    }),
  );
}

runBench('e2e', main);
