/**
 * Child process of bench/processor.ts: reads one partition range with the project's RangeReader and
 * a no-op handler, then prints `{"records","ms","peakRssMb","crc32c"}` (its own peak RSS, not the
 * parent's; the CRC-32C implementation that checked 1 MiB batches, `none` with checks off).
 * Usable alone to profile the reader on a kept topic (bench/processor.ts --keep):
 * `node --cpu-prof --import tsx bench/processor-reader.ts <brokers> <topic> <until> [--max-fetch-bytes N] [--no-prefetch] [--no-crc-check]`.
 */
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { kafkaClientConfig } from '../lib/kafka/client';
import { createKafkajsRangeReader } from '../lib/kafka/range-reader.kafkajs';
import { crc32cImplementation } from '../lib/kafka/protocol/crc32c';

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      'max-fetch-bytes': { type: 'string' },
      'no-prefetch': { type: 'boolean', default: false },
      'no-crc-check': { type: 'boolean', default: false },
    },
  });
  const [brokers, topic, untilText] = positionals;
  if (!brokers || !topic || !untilText)
    throw new Error('usage: processor-reader <brokers> <topic> <until> [--max-fetch-bytes N] [--no-prefetch] [--no-crc-check]');
  // The client config a stream gets (its socket factory included), quiet.
  const kafka = new Kafka({
    ...kafkaClientConfig({ brokers: brokers.split(','), clientId: 'bench-reader', connectionTimeoutMs: 3_000, requestTimeoutMs: 30_000 }),
    logLevel: logLevel.NOTHING,
  });
  const reader = createKafkajsRangeReader(kafka, {
    prefetch: !values['no-prefetch'],
    checkCrcs: !values['no-crc-check'],
    ...(values['max-fetch-bytes'] ? { maxFetchBytes: Number(values['max-fetch-bytes']) } : {}),
  });
  const noop = (records: unknown[]): number => records.length;
  let records = 0;
  const t0 = performance.now();
  for await (const chunk of reader.read({
    topic,
    partition: 0,
    from: 0,
    until: Number(untilText),
    isolationLevel: 'read_uncommitted',
    maxChunkRecords: 500,
  })) {
    records += noop(chunk.records);
  }
  const ms = performance.now() - t0;
  await reader.close();
  process.stdout.write(
    `${JSON.stringify({
      records,
      ms: Math.round(ms),
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
      crc32c: values['no-crc-check'] ? 'none' : crc32cImplementation(1 << 20),
    })}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
  process.exitCode = 1;
});
