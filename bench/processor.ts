/**
 * `npm run bench:processor`: one partition of 1,000,000 records of 1 KB on the local broker, read to
 * the end by (1) this project's RangeReader with a no-op handler, then again with its CRC-32C checks
 * off (librdkafka's default, so the same work as kcat), (2) `kcat -C`, (3) Kafka's own consumer
 * performance tool from the broker's jars. The last line printed is one JSON object:
 * {"records","runs","readerRps","kcatRps","javaRps","ratioKcat","ratiosKcat","ratioKcatNoCrc","peakRssMb"}:
 * medians over the runs (ratioKcat is the median of each run's reader/kcat ratio, ratiosKcat lists
 * them, ratioKcatNoCrc is the same without checks; peak RSS is the largest, with checks). The
 * partition is produced once; each run reads it with all of them, in turn.
 * The reader runs as plain JavaScript bundled by esbuild, as on Lambda, not through tsx's loader
 * (which compiles modules kafkajs loads lazily, on its first requests, inside the timed read).
 *
 * Flags: --records N (default 1000000) --size BYTES (default 1024) --runs N (default 1)
 * --keep (leave the topic, e.g. for profiling the reader on it: bench/processor-reader.ts; by default
 * the topic and ConsumerPerformance's consumer groups are deleted at the end).
 */
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { Kafka, logLevel } from 'kafkajs';
import { wholeNumberOption } from '../lib/cli/args';
import { benchArgs, benchLog, benchProgram, runBench } from './cli';
import { consumerPerformance, runKafkaTool, runTimed } from './kafka-tools';
import { LOCAL_DIR } from '../infra/local/stack/dirs';
import { withStack, type BenchStack } from './stack';
import { median } from './stats';

const log = benchLog('processor');

/** One run's figures: the reader, kcat and ConsumerPerformance over the same partition, one after the other. */
type Sample = {
  readerRps: number;
  kcatRps: number;
  javaRps: number;
  ratioKcat: number;
  /** The reader with CRC-32C checks off: the same work as kcat, whose librdkafka leaves `check.crcs` off by default. */
  readerNoCrcRps: number;
  ratioKcatNoCrc: number;
  peakRssMb: number;
  /** The CRC-32C implementation the reader checked with (`crc32cImplementation` of a 1 MiB batch). */
  crc32c: string;
};

/** The median, rounded to two decimals. */
function roundedMedian(values: number[]): number {
  return Math.round(median(values) * 100) / 100;
}

/** The Lambda bundles' plugin that packages the CRC-32C binding (a CommonJS file of the serverless config). */
const { nativeCrc32c } = createRequire(__filename)('../infra/serverless/esbuild-plugins.js') as {
  nativeCrc32c(architecture: 'arm64' | 'x86_64', warn: (line: string) => void): Plugin;
};

/**
 * bench/processor-reader.ts bundled with the options of the Lambda bundles (serverless.yml,
 * `custom.esbuild`: one CommonJS file for node22, names kept; not minified here) and their CRC-32C
 * binding beside it for this machine's architecture (infra/serverless/esbuild-plugins.js); its path.
 */
async function bundleReader(): Promise<string> {
  const outfile = join(LOCAL_DIR, 'bench', `reader-${process.pid}`, 'processor-reader.js');
  await build({
    entryPoints: [resolve(__dirname, 'processor-reader.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    keepNames: true,
    logLevel: 'warning',
    plugins: [nativeCrc32c(process.arch === 'arm64' ? 'arm64' : 'x86_64', log)],
  });
  return outfile;
}

/** Reads the whole partition once with each of the three readers. */
function measureOnce(p: { brokers: string; topic: string; records: number; group: string; readerJs: string }): Sample {
  const { brokers, topic, records, group, readerJs } = p;
  const readOnce = (extra: string[], what: string) => {
    const run = runTimed(process.execPath, [readerJs, brokers, topic, String(records), ...extra], 15 * 60_000);
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1) as string) as {
      records: number;
      ms: number;
      peakRssMb: number;
      crc32c: string;
    };
    if (out.records !== records) throw new Error(`${what} delivered ${out.records} of ${records}`);
    const rps = Math.round(records / (out.ms / 1000));
    log(`${what}: ${out.records} records in ${out.ms} ms = ${rps}/s, peak RSS ${out.peakRssMb} MB, CRC-32C ${out.crc32c}`);
    return { rps, peakRssMb: out.peakRssMb, crc32c: out.crc32c };
  };
  const readerOut = readOnce([], 'reader');
  const readerRps = readerOut.rps;
  const readerNoCrcRps = readOnce(['--no-crc-check'], 'reader without CRC checks').rps;

  const kcat = runTimed('kcat', ['-C', '-b', brokers, '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-q', '-f', '%o\\n'], 15 * 60_000);
  const kcatCount = kcat.stdout.split('\n').filter(Boolean).length;
  if (kcatCount !== records) throw new Error(`kcat read ${kcatCount} of ${records}`);
  const kcatRps = Math.round(records / (kcat.ms / 1000));
  log(`kcat: ${kcatCount} records in ${Math.round(kcat.ms)} ms = ${kcatRps}/s (process start included)`);

  const perf = consumerPerformance({ brokers, topic, records, group, timeoutMs: 15 * 60_000 });
  // CSV: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
  const line = perf.stdout.trim().split('\n').at(-1) ?? '';
  const cols = line.split(',').map((c) => c.trim());
  const javaRps = Math.round(Number(cols[9]));
  if (!Number.isFinite(javaRps)) throw new Error(`could not read ConsumerPerformance output: ${perf.stdout}`);
  log(`java ConsumerPerformance: fetch ${javaRps}/s (its own figure, group join excluded); wall ${Math.round(perf.ms)} ms`);
  return {
    readerRps,
    kcatRps,
    javaRps,
    ratioKcat: Math.round((readerRps / kcatRps) * 100) / 100,
    readerNoCrcRps,
    ratioKcatNoCrc: Math.round((readerNoCrcRps / kcatRps) * 100) / 100,
    peakRssMb: readerOut.peakRssMb,
    crc32c: readerOut.crc32c,
  };
}

/** Fills the topic with `records` records of `size` bytes. */
function fill(p: { brokers: string; topic: string; records: number; size: number }): { ms: number } {
  const { brokers, topic, records, size } = p;
  // Kafka's producer perf tool fills the partition fastest (uncompressed, as the readers will see it).
  return runKafkaTool(
    'ProducerPerformance',
    [
      '--topic',
      topic,
      '--num-records',
      String(records),
      '--record-size',
      String(size),
      '--throughput',
      '-1',
      '--producer-props',
      `bootstrap.servers=${brokers}`,
      'linger.ms=20',
      'batch.size=524288',
      'acks=1',
    ],
    15 * 60_000,
  );
}

const program = benchProgram('processor', 'the range reader alone with a no-op handler, against kcat and ConsumerPerformance')
  .addOption(wholeNumberOption('--records <n>', 'records in the one partition', 1_000_000))
  .addOption(wholeNumberOption('--size <bytes>', 'bytes per record', 1024))
  .addOption(wholeNumberOption('--runs <n>', 'reads of the partition by each reader', 1));

/** Reads the partition `runs` times and sums the runs up: medians, the per-run ratios, the peak RSS. */
async function measure(stack: BenchStack, topic: string, records: number, runs: number) {
  const samples: Sample[] = [];
  const readerJs = await bundleReader();
  try {
    for (let i = 1; i <= runs; i++) {
      const sample = measureOnce({ brokers: stack.brokers, topic, records, group: stack.group('processor-perf'), readerJs });
      log(`run ${i}/${runs}: ${JSON.stringify(sample)}`);
      samples.push(sample);
    }
  } finally {
    rmSync(dirname(readerJs), { recursive: true, force: true });
  }
  return {
    records,
    runs,
    readerRps: roundedMedian(samples.map((x) => x.readerRps)),
    kcatRps: roundedMedian(samples.map((x) => x.kcatRps)),
    javaRps: roundedMedian(samples.map((x) => x.javaRps)),
    // The median of the per-run ratios: each run's reader against the kcat of the same run.
    ratioKcat: roundedMedian(samples.map((x) => x.ratioKcat)),
    ratiosKcat: samples.map((x) => x.ratioKcat),
    ratioKcatNoCrc: roundedMedian(samples.map((x) => x.ratioKcatNoCrc)),
    peakRssMb: Math.max(...samples.map((x) => x.peakRssMb)),
    // The implementation that checked the reader's batches (native, wasm or javascript).
    crc32c: [...new Set(samples.map((x) => x.crc32c))].join(','),
  };
}

async function main(): Promise<void> {
  const { records, size, runs, keep } = benchArgs<{ records: number; size: number; runs: number; keep: boolean }>(program);
  await withStack(log, { keep }, async (stack) => {
    const brokers = stack.brokers;
    const topic = stack.topic('processor');
    const admin = new Kafka({ clientId: 'bench-processor', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
    try {
      await admin.connect();
      await admin.createTopics({
        topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'segment.bytes', value: String(256 * 1024 * 1024) }] }],
        waitForLeaders: true,
      });
      const produce = fill({ brokers, topic, records, size });
      log(`produced ${records} records of ${size} B in ${Math.round(produce.ms)} ms`);
      const [offsets] = await admin.fetchTopicOffsets(topic);
      const until = Number(offsets?.high);
      if (until !== records) throw new Error(`expected ${records} records, the partition ends at ${until}`);
      const out = await measure(stack, topic, records, runs);
      log(`goal: readerRps >= kcatRps / 2 and peakRssMb < 256`);
      process.stdout.write(`${JSON.stringify(out)}\n`);
    } finally {
      await admin.disconnect();
    }
  });
}

runBench('processor', main);
