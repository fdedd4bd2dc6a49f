/**
 * Child process of bench/processor.ts: reads one partition range with the project's RangeReader and
 * a no-op handler, then prints `{"records","ms","peakRssMb","crc32c"}` (its own peak RSS, not the
 * parent's; the CRC-32C implementation that checked 1 MiB batches, `none` with checks off).
 * Usable alone to profile the reader on a kept topic (bench/processor.ts --keep):
 * `node --cpu-prof --import tsx bench/processor-reader.ts <brokers> <topic> <until> [--max-fetch-bytes N] [--no-prefetch] [--no-crc-check]`.
 */
import { Argument, Command } from 'commander';
import { Kafka, logLevel } from 'kafkajs';
import { parseArgv, wholeNumber, wholeNumberOption } from '../lib/cli/args';
import { kafkaClientConfig } from '../lib/kafka/client';
import { createKafkajsRangeReader } from '../lib/kafka/range-reader.kafkajs';
import { crc32cImplementation } from '../lib/kafka/protocol/crc32c';
import { runBench } from './cli';

const program = new Command('processor-reader')
  .description('reads [0, until) of partition 0 with the RangeReader and a no-op handler; prints one JSON line')
  .argument('<brokers>', 'bootstrap brokers, comma-separated')
  .argument('<topic>', 'the topic')
  .addArgument(new Argument('<until>', 'the offset to read up to').argParser((text) => wholeNumber('<until>', text, 0)))
  .addOption(wholeNumberOption('--max-fetch-bytes <n>', "the reader's Fetch size in bytes (default: its own, 4 MiB)"))
  .option('--no-prefetch', 'send the next Fetch only once a response is handled, not as it arrives')
  .option('--no-crc-check', "skip the batches' CRC-32C checks");

type Flags = { maxFetchBytes?: number; prefetch: boolean; crcCheck: boolean };

async function main(): Promise<void> {
  const { opts: flags } = parseArgv<Flags>(program, process.argv.slice(2));
  const [brokers, topic, until] = program.processedArgs as [string, string, number];
  // The client config a stream gets (its socket factory included), quiet.
  const kafka = new Kafka({
    ...kafkaClientConfig({ brokers: brokers.split(','), clientId: 'bench-reader', connectionTimeoutMs: 3_000, requestTimeoutMs: 30_000 }),
    logLevel: logLevel.NOTHING,
  });
  const reader = createKafkajsRangeReader(kafka, {
    prefetch: flags.prefetch,
    checkCrcs: flags.crcCheck,
    ...(flags.maxFetchBytes !== undefined ? { maxFetchBytes: flags.maxFetchBytes } : {}),
  });
  const noop = (records: unknown[]): number => records.length;
  let records = 0;
  const t0 = performance.now();
  for await (const chunk of reader.read({
    topic,
    partition: 0,
    from: 0,
    until,
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
      crc32c: flags.crcCheck ? crc32cImplementation(1 << 20) : 'none',
    })}\n`,
  );
}

runBench('processor-reader', main);
