/** In-memory RangeReader for processor unit tests: records per partition, gaps and injected faults. */
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../ports/range-reader';
import type { KafkaRecord, RangeReader, ReadRequest, RecordChunk, RecordHeader } from '../ports/range-reader';

export type MemoryRangeReader = RangeReader & {
  /** Appends records with the given values at the next offsets (or at explicit offsets for gaps). */
  append(
    topic: string,
    partition: number,
    values: Array<{
      /** Text as UTF-8, or bytes as they are. */
      key?: string | Buffer;
      value: string | Buffer | null;
      offset?: number;
      headers?: RecordHeader[];
      timestampType?: KafkaRecord['timestampType'];
      /** Default 1,000 + offset. */
      timestampMs?: number;
    }>,
  ): void;
  /** Retention: offsets below `earliest` are gone. */
  truncate(topic: string, partition: number, earliest: number): void;
  deletePartition(topic: string, partition: number): void;
  /** Fails the next `n` reads with `error` (then reads work again). */
  failNext(n: number, error: Error): void;
};

/**
 * Creates the reader; chunks hold at most `maxChunkRecords` records. An open read (`open`) yields
 * what the log holds, then, caught up at its end, waits for the next change (an append, or
 * truncate, deletePartition, failNext) until its signal aborts; there is no broker, so `maxWaitMs`
 * means nothing here. The signal is observed by open reads only.
 */
export function createMemoryRangeReader(): MemoryRangeReader {
  const logs = new Map<string, { records: KafkaRecord[]; earliest: number; end: number }>();
  let failures: { n: number; error?: Error } = { n: 0 };
  let requests = 0;
  const k = (t: string, p: number) => `${t}/${p}`;
  /** Open reads waiting at the end of a log: woken by every change, each then looks again. */
  const waiters = new Set<() => void>();
  const changed = (): void => {
    for (const wake of [...waiters]) wake();
  };
  /** Resolves at the next change to any log, or once `signal` aborts. */
  const nextChange = (signal: AbortSignal | undefined): Promise<void> =>
    new Promise((resolve) => {
      const wake = (): void => {
        waiters.delete(wake);
        signal?.removeEventListener('abort', wake);
        resolve();
      };
      if (signal?.aborted) {
        resolve();
        return;
      }
      waiters.add(wake);
      signal?.addEventListener('abort', wake, { once: true });
    });
  return {
    requestCount: () => requests,
    async close() {},
    append(topic, partition, values) {
      const log = logs.get(k(topic, partition)) ?? { records: [], earliest: 0, end: 0 };
      logs.set(k(topic, partition), log);
      for (const v of values) {
        const offset = v.offset ?? log.end;
        log.records.push({
          topic,
          partition,
          offset,
          timestampMs: v.timestampMs ?? 1_000 + offset,
          timestampType: v.timestampType ?? 'CreateTime',
          key: v.key === undefined ? null : Buffer.from(v.key),
          value: v.value === null ? null : Buffer.from(v.value),
          headers: v.headers ?? [],
        });
        log.end = offset + 1;
      }
      changed();
    },
    truncate(topic, partition, earliest) {
      const log = logs.get(k(topic, partition));
      if (log) log.earliest = earliest;
      changed();
    },
    deletePartition(topic, partition) {
      logs.delete(k(topic, partition));
      changed();
    },
    failNext(n, error) {
      failures = { n, error };
      changed();
    },
    async *read(req: ReadRequest): AsyncGenerator<RecordChunk> {
      let at = req.from;
      while (at < req.until) {
        if (req.open && req.signal?.aborted) return;
        requests++;
        if (failures.n > 0) {
          failures.n--;
          throw failures.error;
        }
        const log = logs.get(k(req.topic, req.partition));
        if (!log) throw new PartitionNotFoundError(`partition ${req.topic}/${req.partition} does not exist`, req);
        if (at < log.earliest) {
          throw new OffsetOutOfRangeError(`offset ${at} is below the log start ${log.earliest}`, {
            ...req,
            fetchOffset: at,
            logStartOffset: log.earliest,
          });
        }
        // Caught up: an open read waits for records to arrive, as a broker's long poll would.
        if (req.open && at === log.end) {
          await nextChange(req.signal);
          continue;
        }
        const max = req.maxChunkRecords ?? 500;
        const records = log.records.filter((r) => r.offset >= at && r.offset < req.until).slice(0, max);
        const last = records.at(-1);
        // A full chunk continues after its last record; otherwise the rest of the range is consumed.
        const nextOffset = records.length === max && last ? last.offset + 1 : Math.min(req.until, Math.max(log.end, at));
        if (nextOffset <= at) throw new Error(`memory reader: nothing to read at ${at} (log ends at ${log.end})`);
        yield { records, nextOffset, bytes: records.reduce((s, r) => s + (r.value?.length ?? 0), 0) };
        at = nextOffset;
      }
    },
  };
}
