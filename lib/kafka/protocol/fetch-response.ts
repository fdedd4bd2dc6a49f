/**
 * Decodes a Fetch v11 response batch by batch. kafkajs's own decoder (fetch/v4/decodeMessages)
 * flattens record batches into records, which loses every batch that has no records left: the
 * empty batches that compaction keeps for producer state, so a fetch can come back "empty" while
 * its offset is still below the high watermark, and the reader would never learn where to continue.
 * Here each batch keeps its header (base offset, last offset delta, producer id, transactional and
 * control flags), so the next fetch offset always comes from batch ends. The records inside a batch
 * are decoded on demand by record-batch.ts (headers exactly as written, timestamp type), which
 * decompresses them with the project's codecs.
 *
 * Partition errors are returned, not thrown (kafkajs throws before the partition header, with the
 * log start offset, can be read).
 *
 * CRC-32C checks are deferred from decoding to each batch's `verify()` (called by `records()` and,
 * for every batch it reads, by the range reader), the way Java's consumer checks a batch when its
 * iteration reaches it: the reader learns where the response ends and sends its next Fetch first,
 * so the broker serves it while the checksums are computed (the largest cost of reading).
 */
import type { AbortedTransaction } from './aborted';
import { crc32c, loadCrc32c } from './crc32c';
import type { KafkaRecord } from '../../ports/range-reader';
import { KafkaError } from '../../errors';
import { decodeBatchRecords } from './record-batch';
import { Reader, safeOffset } from './reader';

/** A record batch's header, and its records decoded on demand. */
export type FetchedBatch = {
  baseOffset: number;
  /** `baseOffset + lastOffsetDelta`: the batch's last offset even when compaction removed that record. */
  lastOffset: number;
  /** '-1' when the batch has no producer id (not idempotent, not transactional). */
  producerId: string;
  isTransactional: boolean;
  isControl: boolean;
  /** Records in the batch (0 for the empty batches compaction leaves). */
  recordCount: number;
  /** Bytes of the batch on the wire (header included). */
  sizeBytes: number;
  /**
   * Checks the batch's CRC-32C (unless checks are off) and throws KafkaError when it does not match;
   * the first call only does the work. Nothing read from the batch but its offsets and flags may be
   * trusted before.
   */
  verify(): void;
  /**
   * Decodes (and decompresses) the data records, or the control records of a control batch. Not
   * cached: decoded records live only as long as the caller keeps them, so a response of
   * compressed batches is never inflated all at once.
   */
  records(): Promise<KafkaRecord[]>;
};

export type FetchedPartition = {
  topic: string;
  partition: number;
  errorCode: number;
  /** -1 when the broker sent none (with an error). */
  highWatermark: number;
  lastStableOffset: number;
  logStartOffset: number;
  /** Only under read_committed; null otherwise. */
  abortedTransactions: AbortedTransaction[] | null;
  /** Complete batches in log order; a trailing batch cut by the byte limit is dropped. */
  batches: FetchedBatch[];
  /** Size of the record set the broker sent for this partition. */
  recordSetBytes: number;
};

export type FetchResponse = {
  /** Named as kafkajs's connection expects it, which then throttles this broker's requests (KIP-219). */
  clientSideThrottleTime: number;
  errorCode: number;
  partitions: FetchedPartition[];
};

const RECORD_BATCH_MAGIC = 2;
/** baseOffset (8) + batchLength (4): the part of a batch header outside `batchLength`. */
const LOG_OVERHEAD = 12;
/** Offsets of header fields within a batch (the CRC covers everything from the attributes on). */
const MAGIC_AT = 16;
const CRC_AT = 17;
const ATTRIBUTES_AT = 21;
const LAST_OFFSET_DELTA_AT = 23;
const PRODUCER_ID_AT = 43;
const RECORD_COUNT_AT = 57;
const TRANSACTIONAL_FLAG = 0x10;
const CONTROL_FLAG = 0x20;
/** Smallest v2 batch: the header up to and including the record count. */
const BATCH_HEADER_BYTES = 61;

export type DecodeOptions = {
  /** Verify each batch's CRC32C, as Java's consumer does by default (`check.crcs`). Default true. */
  checkCrcs?: boolean;
};

const noCheck = (): void => undefined;

/** The CRC-32C check of one batch (`batch` from its base offset on), computed on the first call only. */
function crcCheck(batch: Buffer, where: string): () => void {
  let verified = false;
  return () => {
    if (verified) return;
    if (crc32c(batch.subarray(ATTRIBUTES_AT)) !== batch.readUInt32BE(CRC_AT)) {
      throw new KafkaError(`${where}: record batch at offset ${batch.readBigInt64BE(0)} failed its CRC check (corrupt data)`);
    }
    verified = true;
  };
}

/**
 * Splits a record set into its complete v2 record batches and reads their headers (empty batches
 * kept); CRCs are checked and records decoded on demand. A trailing partial batch (the broker cuts
 * at the byte limit) is ignored.
 */
export function decodeRecordBatches(
  records: Buffer,
  { topic, partition }: { topic: string; partition: number },
  options: DecodeOptions = {},
): FetchedBatch[] {
  const where = `${topic}/${partition}`;
  const checkCrcs = options.checkCrcs ?? true;
  const batches: FetchedBatch[] = [];
  let pos = 0;
  while (pos + LOG_OVERHEAD <= records.length) {
    const batchLength = records.readInt32BE(pos + 8);
    const end = pos + LOG_OVERHEAD + batchLength;
    if (end > records.length) break; // partial batch at the end of the response
    if (batchLength < BATCH_HEADER_BYTES - LOG_OVERHEAD) {
      throw new KafkaError(`${where}: corrupt record batch at byte ${pos} (length ${batchLength})`);
    }
    const magic = records.readInt8(pos + MAGIC_AT);
    if (magic !== RECORD_BATCH_MAGIC) {
      // Message formats v0/v1 (before Kafka 0.11) carry no batch header; Kafka 4 no longer writes them.
      throw new KafkaError(`${where}: message format v${magic} (Kafka < 0.11) is not supported; only record batches (v2)`);
    }
    const batchBytes = records.subarray(pos, end);
    const verify = checkCrcs ? crcCheck(batchBytes, where) : noCheck;
    const baseOffset = safeOffset(batchBytes.readBigInt64BE(0), `${where}: batch base offset`);
    const lastOffset = baseOffset + batchBytes.readInt32BE(LAST_OFFSET_DELTA_AT);
    if (!Number.isSafeInteger(lastOffset)) {
      throw new KafkaError(`${where}: batch last offset is beyond Number.MAX_SAFE_INTEGER`);
    }
    const attributes = batchBytes.readInt16BE(ATTRIBUTES_AT);
    batches.push({
      baseOffset,
      lastOffset,
      producerId: batchBytes.readBigInt64BE(PRODUCER_ID_AT).toString(),
      isTransactional: (attributes & TRANSACTIONAL_FLAG) !== 0,
      isControl: (attributes & CONTROL_FLAG) !== 0,
      recordCount: batchBytes.readInt32BE(RECORD_COUNT_AT),
      sizeBytes: batchBytes.length,
      verify,
      records: async () => {
        verify();
        return decodeBatchRecords(batchBytes, { topic, partition, baseOffset, where });
      },
    });
    pos = end;
  }
  return batches;
}

/** Decodes a raw Fetch v11 response (after the correlation id). */
export async function decodeFetchResponseV11(raw: Buffer, options: DecodeOptions = {}): Promise<FetchResponse> {
  // The faster checksum for large batches starts once per process (a settled promise after that).
  if (options.checkCrcs ?? true) await loadCrc32c();
  const r = new Reader(raw, 'Fetch');
  const clientSideThrottleTime = r.int32('throttle time');
  const errorCode = r.int16('error code');
  r.int32('session id'); // session id: sessionless fetches (id 0, epoch -1) only
  const partitions: FetchedPartition[] = [];
  const topicCount = r.int32('topic count');
  for (let t = 0; t < topicCount; t++) {
    const topic = r.string('topic name');
    const partitionCount = r.int32(`${topic}: partition count`);
    for (let p = 0; p < partitionCount; p++) {
      const partition = r.int32(`${topic}: partition index`);
      const where = `${topic}/${partition}`;
      const partitionError = r.int16(`${where}: error code`);
      const highWatermark = r.int64(`${where}: high watermark`);
      const lastStableOffset = r.int64(`${where}: last stable offset`);
      const logStartOffset = r.int64(`${where}: log start offset`);
      const abortedCount = r.int32(`${where}: aborted transaction count`);
      let abortedTransactions: AbortedTransaction[] | null = null;
      if (abortedCount >= 0) {
        abortedTransactions = [];
        for (let i = 0; i < abortedCount; i++) {
          const producerId = r.int64String(`${where}: aborted transaction producer id`);
          const firstOffset = r.int64(`${where}: aborted transaction first offset`);
          abortedTransactions.push({ producerId, firstOffset });
        }
      }
      r.int32(`${where}: preferred read replica`); // preferred read replica: -1 unless the request named a rack (it never does)
      const recordSet = r.bytes(`${where}: records`);
      const batches = recordSet ? decodeRecordBatches(recordSet, { topic, partition }, options) : [];
      partitions.push({
        topic,
        partition,
        errorCode: partitionError,
        highWatermark,
        lastStableOffset,
        logStartOffset,
        abortedTransactions,
        batches,
        recordSetBytes: recordSet?.length ?? 0,
      });
    }
  }
  return { clientSideThrottleTime, errorCode, partitions };
}
