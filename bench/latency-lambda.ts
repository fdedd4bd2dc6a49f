/**
 * `npm run bench:latency -- --deployed --runtime lambda`: latency through what `sls package` ships.
 * The stack is packaged with a one-topic stream and run as deployed on the local stack (the template
 * in the emulator's CloudFormation, the zips under AWS's runtime emulator and Node runtime client,
 * the planner on the template's schedule: infra/local/lambda/). Kafka's Java producer writes the load
 * for `--duration-ms`; then the run drains.
 *
 * Nothing inside the functions is instrumented (they run in processes of their own), so a record's
 * latency is read from outside: from its produce timestamp (Kafka's CreateTime) to the first look at
 * the ledger, every `POLL_MS`, that shows its partition committed past it. That look adds up to
 * `POLL_MS` (half of it on average) to what bench:latency's in-process observer measures. The same
 * looks give `maxCommitGapMs`, the largest gap between a partition's commits under the load (hand-overs
 * included; `maxCommitGapMs` in stats.ts). Each function's cold starts come from the runtime's
 * `INIT REPORT` lines.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { LOCAL_DIR } from '../infra/local/stack/dirs';
import type { PackagedRun } from '../infra/local/lambda/run-packaged';
import { createDynamoLedger } from '../lib/ledger/ledger.dynamodb';
import { oneTopicConfigInput } from '../lib/local/one-topic';
import { scanTotals } from '../lib/sink/totals.dynamodb';
import { javaProduceAccounts } from '../test/support/java';
import type { BenchStack } from './stack';
import { endOffsetsOf, withBenchTopic } from './stack';
import { runConfigAsDeployed } from './packaged-stack';
import { latencySummary, maxCommitGapMs, median, totalsMismatches, type CommittedLook } from './stats';

const POLL_MS = 50;
/** The packaged stack's files (config, package, task roots), removed after each phase. */
const RUN_DIR = join(LOCAL_DIR, 'bench', `latency-lambda-${process.pid}`);

export type LambdaLatencyFlags = {
  ratePerSec: number;
  durationMs: number;
  partitions: number;
  accounts: number;
  triggerIntervalMs: number;
  /** Continuous mode (`--continuous`): segments of `segmentMs` in the segments function, commits every `commitIntervalMs`. */
  continuous?: { segmentMs: number; commitIntervalMs: number };
};
type Handler = 'noop' | 'running-totals';

/** Both handlers in turn; the last line's figures. */
export async function runLambdaLatency(stack: BenchStack, flags: LambdaLatencyFlags, log: (l: string) => void) {
  const noop = await phase(stack, flags, 'noop', log);
  const exactlyOnce = await phase(stack, flags, 'running-totals', log);
  return {
    runtime: 'lambda',
    ratePerSec: flags.ratePerSec,
    durationMs: flags.durationMs,
    pollMs: POLL_MS,
    ...(flags.continuous && { continuous: flags.continuous }),
    noop,
    exactlyOnce,
  };
}

async function phase(stack: BenchStack, flags: LambdaLatencyFlags, handler: Handler, log: (l: string) => void) {
  const kind = handler === 'noop' ? 'noop' : 'eo';
  return withBenchTopic(stack, `latency-lambda-${kind}`, flags.partitions, async ({ topic, admin, dynamo }) => {
    const streamId = stack.name(`ll-${kind}`);
    const sinkTable = handler === 'running-totals' ? stack.table('latency-lambda-totals') : undefined;
    const run = await packagedStack(stack, { topic, streamId, handler, sinkTable, flags });
    try {
      const ledgerTable = run.stack.functions.find((f) => f.name.endsWith('-processor'))!.env.LEDGER_TABLE!;
      const ledger = createDynamoLedger({ client: dynamo, tableName: ledgerTable });
      const looks: CommittedLook[] = [];
      // Known once the load is written; the drain check waits for it.
      const load: { ends?: number[] } = {};
      const records = Math.round((flags.ratePerSec * flags.durationMs) / 1000);
      const producing = javaProduceAccounts(stack.brokers, { topic, records, accounts: flags.accounts, ratePerSec: flags.ratePerSec });
      const drained = (async () => {
        for (const deadline = Date.now() + flags.durationMs + 120_000; Date.now() < deadline;) {
          const parts = await ledger.readPartitions(streamId).catch(() => []);
          looks.push({ atMs: Date.now(), committed: new Map(parts.map((p) => [p.partition, p.committed])) });
          if (load.ends?.every((end, p) => (looks.at(-1)!.committed.get(p) ?? 0) >= end)) return true;
          await new Promise((r) => setTimeout(r, POLL_MS));
        }
        return false;
      })();
      const produced = await producing;
      const ends = await endOffsetsOf(admin, topic);
      load.ends = ends;
      if (!(await drained)) throw new Error(`${handler}: not drained within 120 s of the load's end`);
      const latencies = await latenciesOf(stack.brokers, topic, ends, looks);
      const exact = sinkTable ? totalsMismatches(produced.totals, await scanTotals(dynamo, sinkTable)).length === 0 : undefined;
      const figures = {
        records: latencies.length,
        ...summary(latencies),
        maxCommitGapMs: maxCommitGapMs(looks, ends),
        ...(exact !== undefined && { exact }),
        ...initFigures(run),
      };
      log(`${handler}: ${JSON.stringify(figures)}`);
      return figures;
    } finally {
      await run.stop();
      rmSync(RUN_DIR, { recursive: true, force: true });
    }
  });
}

/** The stream's config, packaged (osls) and run as deployed. */
function packagedStack(
  stack: BenchStack,
  p: { topic: string; streamId: string; handler: Handler; sinkTable?: string; flags: LambdaLatencyFlags },
): Promise<PackagedRun> {
  const handler =
    p.handler === 'noop'
      ? ({ module: 'noop', mode: 'at-least-once' } as const)
      : ({
          module: 'running-totals',
          mode: 'dynamodb-exactly-once',
          sinkTable: { name: p.sinkTable!, key: { partitionKey: 'pk' } },
        } as const);
  const config = oneTopicConfigInput({
    ledgerTable: 'named-by-the-stack',
    streamId: p.streamId,
    brokers: stack.brokers,
    topic: p.topic,
    triggerIntervalMs: p.flags.triggerIntervalMs,
    processor: { timeoutMs: 60_000 },
    handler,
    ...(p.flags.continuous && {
      continuous: { ...p.flags.continuous, handoverLeadMs: Math.min(2_000, Math.floor(p.flags.continuous.segmentMs / 4)) },
    }),
  });
  return runConfigAsDeployed({ config, stage: 'latency', stackName: p.streamId, dir: RUN_DIR, params: [['processorTimeout', '90']] });
}

/** Each record's latency: from its CreateTime to the first look showing its partition committed past it. */
async function latenciesOf(brokers: string, topic: string, ends: number[], looks: CommittedLook[]): Promise<number[]> {
  const out: number[] = [];
  const consumer = new Kafka({ clientId: 'latency-lambda', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).consumer({
    groupId: `latency-lambda-${process.pid}-${Date.now()}`,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const total = ends.reduce((s, n) => s + n, 0);
  await new Promise<void>((resolve, reject) => {
    consumer
      .run({
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            const offset = Number(m.offset);
            const seen = looks.find((l) => (l.committed.get(batch.partition) ?? 0) > offset);
            if (seen) out.push(seen.atMs - Number(m.timestamp));
          }
          if (out.length >= total) resolve();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  return out;
}

/** p50, p99 and max (the stats module's summary: no spread of 60,000 values into Math.max). */
function summary(latencies: number[]) {
  const { p50Ms, p99Ms, maxMs } = latencySummary(latencies);
  return { p50Ms, p99Ms, maxMs };
}

/** Cold starts per function from the runtime's INIT REPORT lines, and how many invocations ran. */
function initFigures(run: PackagedRun) {
  const of = (fn: string) => run.lambda.records.filter((r) => r.function.endsWith(`-${fn}`));
  const inits = (fn: string) => of(fn).flatMap((r) => (r.initMs === undefined ? [] : [r.initMs]));
  return {
    initMs: Object.fromEntries(
      ['planner', 'processor', 'segments'].map((fn) => [
        fn,
        inits(fn).length ? { p50: Math.round(median(inits(fn))), max: Math.round(Math.max(...inits(fn))) } : undefined,
      ]),
    ),
    invocations: { planner: of('planner').length, processor: of('processor').length, segments: of('segments').length },
    // Each function's largest environment (Lambda's "Max Memory Used"), against its memory size.
    peakRssMb: Object.fromEntries(
      ['planner', 'processor', 'segments'].flatMap((fn) => {
        const peaks = of(fn).flatMap((r) => (r.peakRssMb === undefined ? [] : [r.peakRssMb]));
        return peaks.length ? [[fn, Math.max(...peaks)]] : [];
      }),
    ),
  };
}
