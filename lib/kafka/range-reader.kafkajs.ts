/**
 * The kafkajs `RangeReader`: a group-less Fetch (v11) from the partition leader, like Spark's
 * KafkaRDD (assign + seek, never a consumer group, so no rebalance and no
 * `group.initial.rebalance.delay.ms`): the reading algorithm (range-reader.ts) over the kafkajs
 * transport (fetch-transport.kafkajs.ts).
 */
import type { Kafka } from 'kafkajs';
import type { RangeReader } from '../ports/range-reader';
import { registerCodecs } from './protocol/codecs';
import { createKafkajsTransport } from './fetch-transport.kafkajs';
import { createRangeReader, type RangeReaderOptions } from './range-reader';

export type KafkajsRangeReaderOptions = RangeReaderOptions & {
  /** Cached partition leaders older than this are looked up again. Default 5 minutes. */
  metadataMaxAgeMs?: number;
  /** Verify record batch CRC32C checksums (Java's `check.crcs`). Default true. */
  checkCrcs?: boolean;
};

/**
 * A `RangeReader` reading with kafkajs (group-less Fetch v11 from the leader); registers the
 * snappy/lz4/zstd codecs on first use.
 */
export function createKafkajsRangeReader(kafka: Kafka, opts: KafkajsRangeReaderOptions = {}): RangeReader {
  registerCodecs();
  return createRangeReader(
    createKafkajsTransport(kafka, { metadataMaxAgeMs: opts.metadataMaxAgeMs, checkCrcs: opts.checkCrcs, clock: opts.clock }),
    opts,
  );
}
