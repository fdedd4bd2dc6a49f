/**
 * `npm run bench:processor`: one partition of 1,000,000 records of 1 KB on the local broker, read to
 * the end by (1) this project's RangeReader with a no-op handler, (2) `kcat -C`, (3) Kafka's own
 * consumer performance tool from the broker's jars. The last line printed is one JSON object:
 * {"records","runs","readerRps","kcatRps","javaRps","ratioKcat","ratiosKcat","peakRssMb"}: medians over
 * the runs (ratioKcat is the median of each run's reader/kcat ratio, ratiosKcat lists them; peak RSS
 * is the largest). The partition is produced once; each run reads it with all three, in turn.
 *
 * Flags: --records N (default 1000000) --size BYTES (default 1024) --runs N (default 1)
 * --keep-topic (leave the topic for profiling the reader on it: bench/processor-reader.ts).
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { ensureKafkaJars, javaBinary } from '../infra/local/kafka';
import { CACHE_DIR, LOCAL_DIR, startStack, stopStack, type StackState } from '../infra/local/stack';

const log = (line: string): void => {
  process.stderr.write(`[bench:processor] ${line}\n`);
};

function run(cmd: string, args: string[], timeoutMs: number): { ms: number; stdout: string } {
  const t0 = performance.now();
  const res = spawnSync(cmd, args, {
    encoding: 'utf8',
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ms = performance.now() - t0;
  if (res.status !== 0) throw new Error(`${cmd} failed (${res.status ?? res.signal}): ${res.stderr?.slice(-2000)}`);
  return { ms, stdout: res.stdout };
}

/** One run's figures: the reader, kcat and ConsumerPerformance over the same partition, one after the other. */
type Sample = { readerRps: number; kcatRps: number; javaRps: number; ratioKcat: number; peakRssMb: number };

/** The middle value (the mean of the two middle ones for an even count), rounded. */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const m = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return Math.round(m * 100) / 100;
}

/** Reads the whole partition once with each of the three readers. */
function measureOnce(p: { brokers: string; topic: string; records: number; java: string; libs: string }): Sample {
  const { brokers, topic, records, java, libs } = p;
  const reader = run(
    process.execPath,
    ['--import', 'tsx', resolve(__dirname, 'processor-reader.ts'), brokers, topic, String(records)],
    15 * 60_000,
  );
  const readerOut = JSON.parse(reader.stdout.trim().split('\n').at(-1) as string) as { records: number; ms: number; peakRssMb: number };
  if (readerOut.records !== records) throw new Error(`reader delivered ${readerOut.records} of ${records}`);
  const readerRps = Math.round(records / (readerOut.ms / 1000));
  log(`reader: ${readerOut.records} records in ${readerOut.ms} ms = ${readerRps}/s, peak RSS ${readerOut.peakRssMb} MB`);

  const kcat = run('kcat', ['-C', '-b', brokers, '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-q', '-f', '%o\\n'], 15 * 60_000);
  const kcatCount = kcat.stdout.split('\n').filter(Boolean).length;
  if (kcatCount !== records) throw new Error(`kcat read ${kcatCount} of ${records}`);
  const kcatRps = Math.round(records / (kcat.ms / 1000));
  log(`kcat: ${kcatCount} records in ${Math.round(kcat.ms)} ms = ${kcatRps}/s (process start included)`);

  const perf = run(
    java,
    [
      '-Xmx512m',
      '-cp',
      `${libs}/*`,
      'org.apache.kafka.tools.ConsumerPerformance',
      '--bootstrap-server',
      brokers,
      '--topic',
      topic,
      '--messages',
      String(records),
      '--timeout',
      '60000',
      '--group',
      `${topic}-perf-${Date.now().toString(36)}`,
    ],
    15 * 60_000,
  );
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
    peakRssMb: readerOut.peakRssMb,
  };
}

/** Fills the topic with `records` records of `size` bytes. */
function fill(p: { java: string; libs: string; brokers: string; topic: string; records: number; size: number }): { ms: number } {
  const { java, libs, brokers, topic, records, size } = p;
  // Kafka's producer perf tool fills the partition fastest (uncompressed, as the readers will see it).
  return run(
    java,
    [
      '-Xmx512m',
      '-cp',
      `${libs}/*`,
      'org.apache.kafka.tools.ProducerPerformance',
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

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '1000000' },
      size: { type: 'string', default: '1024' },
      runs: { type: 'string', default: '1' },
      'keep-topic': { type: 'boolean', default: false },
    },
  });
  const records = Number(values.records);
  const size = Number(values.size);
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, not ${values.runs}`);
  let stack: StackState | undefined;
  if (!process.env.KAFKA_BROKERS || !process.env.DYNAMODB_ENDPOINT) {
    stack = await startStack({ dir: join(LOCAL_DIR, 'bench', String(process.pid)), ownerPid: process.pid, log });
    process.env.KAFKA_BROKERS = stack.kafkaBrokers;
    process.env.DYNAMODB_ENDPOINT = stack.dynamodbEndpoint;
  }
  const brokers = process.env.KAFKA_BROKERS;
  const libs = ensureKafkaJars(CACHE_DIR);
  const java = javaBinary();
  const topic = `bench-proc-${Date.now().toString(36)}`;
  const admin = new Kafka({ clientId: 'bench-processor', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.createTopics({
      topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'segment.bytes', value: String(256 * 1024 * 1024) }] }],
      waitForLeaders: true,
    });
    const produce = fill({ java, libs, brokers, topic, records, size });
    log(`produced ${records} records of ${size} B in ${Math.round(produce.ms)} ms`);
    const [offsets] = await admin.fetchTopicOffsets(topic);
    const until = Number(offsets?.high);
    if (until !== records) throw new Error(`expected ${records} records, the partition ends at ${until}`);

    const samples: Sample[] = [];
    for (let i = 1; i <= runs; i++) {
      const sample = measureOnce({ brokers, topic, records, java, libs });
      log(`run ${i}/${runs}: ${JSON.stringify(sample)}`);
      samples.push(sample);
    }
    const readerRps = median(samples.map((x) => x.readerRps));
    const kcatRps = median(samples.map((x) => x.kcatRps));
    const out = {
      records,
      runs,
      readerRps,
      kcatRps,
      javaRps: median(samples.map((x) => x.javaRps)),
      // The median of the per-run ratios: each run's reader against the kcat of the same run.
      ratioKcat: median(samples.map((x) => x.ratioKcat)),
      ratiosKcat: samples.map((x) => x.ratioKcat),
      peakRssMb: Math.max(...samples.map((x) => x.peakRssMb)),
    };
    log(`goal: readerRps >= kcatRps / 2 and peakRssMb < 256`);
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    if (values['keep-topic']) log(`kept topic ${topic} (${records} records): delete it when done`);
    else await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    if (stack) {
      await stopStack(stack, log);
      rmSync(stack.dir, { recursive: true, force: true });
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`[bench:processor] failed: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exitCode = 1;
});
