/**
 * `npm run bench:processor`: one partition of 1,000,000 records of 1 KB on the local broker, read to
 * the end by (1) this project's RangeReader with a no-op handler, (2) `kcat -C`, (3) Kafka's own
 * consumer performance tool from the broker's jars. The last line printed is one JSON object:
 * {"records","readerRps","kcatRps","javaRps","ratioKcat","peakRssMb"}.
 *
 * Flags: --records N (default 1000000) --size BYTES (default 1024).
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

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { records: { type: 'string', default: '1000000' }, size: { type: 'string', default: '1024' } } });
  const records = Number(values.records);
  const size = Number(values.size);
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
    // Kafka's producer perf tool fills the partition fastest (uncompressed, as the readers will see it).
    const produce = run(
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
    log(`produced ${records} records of ${size} B in ${Math.round(produce.ms)} ms`);
    const [offsets] = await admin.fetchTopicOffsets(topic);
    const until = Number(offsets?.high);
    if (until !== records) throw new Error(`expected ${records} records, the partition ends at ${until}`);

    const reader = run(
      process.execPath,
      ['--import', 'tsx', resolve(__dirname, 'processor-reader.ts'), brokers, topic, String(until)],
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
        `${topic}-perf`,
      ],
      15 * 60_000,
    );
    // CSV: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    const line = perf.stdout.trim().split('\n').at(-1) ?? '';
    const cols = line.split(',').map((c) => c.trim());
    const javaRps = Math.round(Number(cols[9]));
    if (!Number.isFinite(javaRps)) throw new Error(`could not read ConsumerPerformance output: ${perf.stdout}`);
    log(`java ConsumerPerformance: fetch ${javaRps}/s (its own figure, group join excluded); wall ${Math.round(perf.ms)} ms`);

    const out = {
      records,
      readerRps,
      kcatRps,
      javaRps,
      ratioKcat: Math.round((readerRps / kcatRps) * 100) / 100,
      peakRssMb: readerOut.peakRssMb,
    };
    log(`goal: readerRps >= kcatRps / 2 and peakRssMb < 256`);
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
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
