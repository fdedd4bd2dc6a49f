/** An in-memory partition log behind the reader's FetchTransport, with fault injection. */
import type { AbortedTransaction } from '../../../lib/kafka/protocol/aborted';
import { KafkaError } from '../../../lib/errors';
import { PartitionNotFoundError } from '../../../lib/ports/range-reader';
import type { FetchPartitionRequest } from '../../../lib/kafka/cluster.kafkajs';
import type { FetchedBatch, FetchResponse } from '../../../lib/kafka/protocol/fetch-response';
import type { KafkaRecord } from '../../../lib/ports/range-reader';
import type { FetchTransport } from '../../../lib/kafka/range-reader';
import type { Clock } from '../../../lib/retry';

export type BatchSpec = {
  base: number;
  /** Offsets of the records still in the batch (compaction may have removed some or all). */
  offsets: number[];
  /** Default: the last offset in `offsets` (base when empty). */
  last?: number;
  producerId?: number;
  transactional?: boolean;
  control?: 'abort' | 'commit';
  sizeBytes?: number;
  /** The batch fails its CRC check. */
  corrupt?: boolean;
};

export const record = (offset: number): KafkaRecord => ({
  topic: 't',
  partition: 0,
  offset,
  timestampMs: 1_700_000_000_000 + offset,
  timestampType: 'CreateTime',
  key: null,
  value: Buffer.from(`v${offset}`),
  headers: [],
});

export function batch(spec: BatchSpec, onDecode?: (n: number) => void, onVerify?: () => void): FetchedBatch {
  const controlKey = Buffer.from([0, 0, 0, spec.control === 'commit' ? 1 : 0]);
  const count = spec.control ? 1 : spec.offsets.length;
  return {
    baseOffset: spec.base,
    lastOffset: spec.last ?? spec.offsets.at(-1) ?? spec.base,
    producerId: String(spec.producerId ?? -1),
    isTransactional: spec.transactional ?? spec.control !== undefined,
    isControl: spec.control !== undefined,
    recordCount: count,
    sizeBytes: spec.sizeBytes ?? 100 + 10 * count,
    verify: () => {
      onVerify?.();
      if (spec.corrupt) throw new KafkaError(`batch at offset ${spec.base} failed its CRC check`);
    },
    records: async () => {
      onDecode?.(count);
      if (spec.control) return [{ ...record(spec.base), key: controlKey }];
      return spec.offsets.map(record);
    },
  };
}

/** A virtual clock: sleeps advance time at once (and are recorded); abort still interrupts. */
export class FakeClock implements Clock {
  time = 0;
  sleeps: number[] = [];
  now = (): number => this.time;
  sleep = async (ms: number, signal?: AbortSignal): Promise<void> => {
    if (signal?.aborted) throw signal.reason;
    this.sleeps.push(ms);
    this.time += ms;
  };
}

export type Fault = { throws: unknown } | { partitionError: number } | { advance: number };

export class FakeLog implements FetchTransport {
  batches: FetchedBatch[] = [];
  highWatermark = 0;
  lastStableOffset: number | undefined;
  logStartOffset = 0;
  aborted: AbortedTransaction[] = [];
  /** Applied one per fetch, in order, before answering. */
  faults: Fault[] = [];
  /** Called after each fetch (e.g. to let a transaction commit after a few polls). */
  afterFetch?: (fetches: number) => void;
  leaderCalls: boolean[] = [];
  fetchOffsets: number[] = [];
  maxBytesSeen: number[] = [];
  missing = false;
  logOffsetsFails = false;
  closed = 0;
  /** With a clock, a fetch that finds nothing readable takes its long poll (maxWaitTimeMs) of virtual time. */
  constructor(private readonly clock?: FakeClock) {}

  add(...specs: BatchSpec[]): this {
    for (const s of specs) this.batches.push(batch(s));
    const last = this.batches.at(-1);
    this.highWatermark = last ? last.lastOffset + 1 : 0;
    return this;
  }

  leader = async (topic: string, partition: number, refresh: boolean): Promise<number> => {
    this.leaderCalls.push(refresh);
    if (this.missing) throw new PartitionNotFoundError(`topic ${topic} does not exist`, { topic, partition });
    return 1;
  };

  fetch = async (_nodeId: number, req: FetchPartitionRequest): Promise<FetchResponse> => {
    this.fetchOffsets.push(req.fetchOffset);
    this.maxBytesSeen.push(req.maxBytes);
    const fault = this.faults.shift();
    try {
      if (fault && 'throws' in fault) throw fault.throws;
      if (fault && 'advance' in fault && this.clock) this.clock.time += fault.advance;
      const base = { topic: req.topic, partition: req.partition, highWatermark: this.highWatermark, logStartOffset: this.logStartOffset };
      const lso = this.lastStableOffset ?? this.highWatermark;
      if (fault && 'partitionError' in fault) {
        return {
          clientSideThrottleTime: 0,
          errorCode: 0,
          partitions: [
            {
              ...base,
              errorCode: fault.partitionError,
              highWatermark: -1,
              lastStableOffset: -1,
              logStartOffset: -1,
              abortedTransactions: null,
              batches: [],
              recordSetBytes: 0,
            },
          ],
        };
      }
      const end = req.isolationLevel === 1 ? lso : this.highWatermark;
      const out: FetchedBatch[] = [];
      let bytes = 0;
      for (const b of this.batches) {
        if (b.lastOffset < req.fetchOffset || b.baseOffset >= end) continue;
        if (out.length > 0 && bytes + b.sizeBytes > req.maxBytes) break;
        out.push(b);
        bytes += b.sizeBytes;
      }
      if (out.length === 0 && this.clock) this.clock.time += req.maxWaitTimeMs; // long poll
      const aborted =
        req.isolationLevel === 1 && out.length > 0
          ? this.aborted.filter((a) => a.firstOffset <= out.at(-1)!.lastOffset)
          : req.isolationLevel === 1
            ? []
            : null;
      return {
        clientSideThrottleTime: 0,
        errorCode: 0,
        partitions: [{ ...base, errorCode: 0, lastStableOffset: lso, abortedTransactions: aborted, batches: out, recordSetBytes: bytes }],
      };
    } finally {
      this.afterFetch?.(this.fetchOffsets.length);
    }
  };

  logOffsets = async (): Promise<{ earliest: number; latest: number }> => {
    if (this.logOffsetsFails) throw new Error('ListOffsets failed');
    return { earliest: this.logStartOffset, latest: this.highWatermark };
  };

  close = async (): Promise<void> => {
    this.closed += 1;
  };
}
