/** The range reading loop over a fake transport: exact ranges, chunking, retries, waits, errors. */
import { KafkaError, TimeoutError, ValidationError } from '../../../lib/errors';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../../../lib/ports/range-reader';
import { createRangeReader, type RangeReaderOptions } from '../../../lib/kafka/range-reader';
import type { RangeReader, ReadRequest, RecordChunk } from '../../../lib/ports/range-reader';
import { createMemoryRangeReader } from '../../../lib/kafka/range-reader.memory';
import { OPEN_UNTIL } from '../../../lib/ranges';
import { batch, FakeClock, FakeLog, record, type BatchSpec } from './fake-log';

const NOT_LEADER_OR_FOLLOWER = 6;
const LEADER_NOT_AVAILABLE = 5;
const OFFSET_OUT_OF_RANGE = 1;
const UNKNOWN_TOPIC_OR_PARTITION = 3;
const TOPIC_AUTHORIZATION_FAILED = 29;

const range = (from: number, until: number): number[] => Array.from({ length: until - from }, (_, i) => from + i);

function setup(opts: RangeReaderOptions = {}): { log: FakeLog; clock: FakeClock; reader: RangeReader } {
  const clock = new FakeClock();
  const log = new FakeLog(clock);
  const reader = createRangeReader(log, { clock, random: () => 1, ...opts });
  return { log, clock, reader };
}

async function collect(reader: RangeReader, req: Partial<ReadRequest> & Pick<ReadRequest, 'from' | 'until'>): Promise<RecordChunk[]> {
  const chunks: RecordChunk[] = [];
  for await (const c of reader.read({ topic: 't', partition: 0, isolationLevel: 'read_uncommitted', ...req })) chunks.push(c);
  return chunks;
}
const offsetsOf = (chunks: RecordChunk[]): number[] => chunks.flatMap((c) => c.records.map((r) => r.offset));

/** Reads an open range from 0 until a chunk reaches `stopAt`, then aborts: an open read ends only so. */
async function readOpenUntil(reader: RangeReader, stopAt: number, req: Partial<ReadRequest> = {}): Promise<RecordChunk[]> {
  const controller = new AbortController();
  const chunks: RecordChunk[] = [];
  const open = { from: 0, until: OPEN_UNTIL, open: true, signal: controller.signal };
  for await (const c of reader.read({ topic: 't', partition: 0, isolationLevel: 'read_uncommitted', ...open, ...req })) {
    chunks.push(c);
    if (c.nextOffset >= stopAt) controller.abort();
  }
  return chunks;
}

describe('createRangeReader: exact ranges', () => {
  it('delivers only [from, until): skips the head of the first batch and leaves the tail of the last', async () => {
    const { log, reader } = setup();
    log.add({ base: 0, offsets: range(0, 10) }, { base: 10, offsets: range(10, 20) }, { base: 20, offsets: range(20, 30) });
    const chunks = await collect(reader, { from: 5, until: 25 });
    expect(offsetsOf(chunks)).toEqual(range(5, 25));
    expect(chunks.map((c) => c.nextOffset)).toEqual([25]);
    expect(chunks[0]!.records[0]).toEqual({
      topic: 't',
      partition: 0,
      offset: 5,
      timestampMs: 1_700_000_000_005,
      timestampType: 'CreateTime',
      key: null,
      value: Buffer.from('v5'),
      headers: [],
    });
  });

  it('splits chunks at maxChunkRecords; a chunk ends at the next record to deliver, the last at until', async () => {
    const { log, reader } = setup();
    log.add({ base: 0, offsets: [0, 1, 2, 3, 4, 5, 6], last: 9 }, { base: 10, offsets: [12, 15], last: 19 });
    const chunks = await collect(reader, { from: 1, until: 20, maxChunkRecords: 3 });
    expect(chunks.map((c) => c.records.map((r) => r.offset))).toEqual([
      [1, 2, 3],
      [4, 5, 6],
      [12, 15],
    ]);
    expect(chunks.map((c) => c.nextOffset)).toEqual([4, 12, 20]);
  });

  it('advances over gaps, empty batches and control batches by batch ends, never offset + 1', async () => {
    const { log, reader } = setup();
    log.add(
      { base: 0, offsets: [0, 3], last: 4 }, // compaction gaps
      { base: 5, offsets: [], last: 9, producerId: 7 }, // empty batch kept for producer state
      { base: 10, offsets: [10], producerId: 7, transactional: true },
      { base: 11, offsets: [], control: 'commit', producerId: 7 },
      { base: 12, offsets: [], last: 40 }, // empty to the end
    );
    // One batch per fetch: some fetches deliver nothing at all and must still move forward.
    const chunks = await collect(reader, { from: 0, until: 41, maxFetchBytes: 1 });
    expect(offsetsOf(chunks)).toEqual([0, 3, 10]);
    expect(chunks.at(-1)!.nextOffset).toBe(41);
    expect(log.fetchOffsets).toEqual([0, 5, 10, 11, 12]);
    expect(log.maxBytesSeen.every((b) => b === 1)).toBe(true);
  });

  it('completes a range whose every batch is filtered, reporting the progress in an empty final chunk', async () => {
    const { log, reader } = setup();
    log.add({ base: 0, offsets: [], last: 99, producerId: 1 });
    expect(await collect(reader, { from: 0, until: 100 })).toEqual([{ records: [], nextOffset: 100, bytes: 100 }]);
  });

  it("counts a batch's bytes once: in the chunk that takes its first record, else in the chunk pending at its end", async () => {
    const { log, reader } = setup();
    // Batch 0 still reaches the fetch offset (compacted tail up to 9) but has no record at or past it.
    log.add({ base: 0, offsets: range(0, 5), last: 9, sizeBytes: 100 }, { base: 10, offsets: range(10, 16), sizeBytes: 60 });
    const chunks = await collect(reader, { from: 5, until: 16, maxChunkRecords: 4 });
    expect(chunks.map((c) => [c.records.map((r) => r.offset), c.bytes])).toEqual([
      [[10, 11, 12, 13], 160],
      [[14, 15], 0],
    ]);
  });

  it('yields nothing and fetches nothing for an empty range', async () => {
    const { log, reader } = setup();
    log.add({ base: 0, offsets: range(0, 5) });
    expect(await collect(reader, { from: 3, until: 3 })).toEqual([]);
    expect(log.fetchOffsets).toEqual([]);
  });

  it('closes a chunk once the batches it consumed reach maxFetchBytes, even with no records (bounded memory)', async () => {
    const { log, reader } = setup();
    for (let i = 0; i < 10; i++) log.add({ base: i * 10, offsets: i % 3 === 0 ? [i * 10] : [], last: i * 10 + 9, sizeBytes: 400 });
    const chunks = await collect(reader, { from: 0, until: 100, maxFetchBytes: 1000 });
    expect(chunks.every((c) => c.bytes <= 1200)).toBe(true);
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    expect(offsetsOf(chunks)).toEqual([0, 30, 60, 90]);
    expect(chunks.at(-1)!.nextOffset).toBe(100);
  });

  it('reads a 1,000,000-record range lazily: never decodes more than a batch ahead of the consumer', async () => {
    const clock = new FakeClock();
    let decoded = 0;
    const perBatch = 1000;
    const total = 1_000_000;
    // Batches generated on demand, as a broker would serve them.
    const log = new FakeLog(clock);
    log.highWatermark = total;
    log.fetch = async (_node, req) => {
      log.fetchOffsets.push(req.fetchOffset);
      const batches = [];
      for (
        let base = Math.floor(req.fetchOffset / perBatch) * perBatch, bytes = 0;
        base < total && bytes < req.maxBytes;
        base += perBatch
      ) {
        const b = batch({ base, offsets: [], last: base + perBatch - 1, sizeBytes: 20_000 });
        const records = async () => {
          decoded += perBatch;
          return range(base, base + perBatch).map((o) => ({ ...record(o), value: null }));
        };
        batches.push({ ...b, recordCount: perBatch, records });
        bytes += 20_000;
      }
      return {
        clientSideThrottleTime: 0,
        errorCode: 0,
        partitions: [
          {
            topic: req.topic,
            partition: req.partition,
            errorCode: 0,
            highWatermark: total,
            lastStableOffset: total,
            logStartOffset: 0,
            abortedTransactions: null,
            batches,
            recordSetBytes: 0,
          },
        ],
      };
    };
    const reader = createRangeReader(log, { clock });
    let consumed = 0;
    let maxAhead = 0;
    let chunks = 0;
    let next = 0;
    for await (const c of reader.read({
      topic: 't',
      partition: 0,
      from: 0,
      until: total,
      isolationLevel: 'read_committed',
      maxChunkRecords: 700,
      maxFetchBytes: 100_000,
    })) {
      expect(c.records.length).toBeLessThanOrEqual(700);
      expect(c.records[0]?.offset ?? next).toBe(next);
      consumed += c.records.length;
      next = c.nextOffset;
      maxAhead = Math.max(maxAhead, decoded - consumed);
      chunks += 1;
    }
    expect(consumed).toBe(total);
    expect(next).toBe(total);
    expect(maxAhead).toBeLessThanOrEqual(perBatch);
    expect(chunks).toBe(Math.ceil(total / 700));
    expect(reader.requestCount()).toBe(total / (5 * perBatch)); // 100 KB per fetch = 5 batches
  });
});

describe('createRangeReader: read_committed', () => {
  it('drops aborted transactions and control records; read_uncommitted keeps the data, drops the control records', async () => {
    const { log, reader } = setup();
    log.add(
      { base: 0, offsets: [0, 1], producerId: 1, transactional: true },
      { base: 2, offsets: [2], producerId: 2, transactional: true },
      { base: 3, offsets: [3], producerId: -1, transactional: false },
      { base: 4, offsets: [], control: 'abort', producerId: 1 },
      { base: 5, offsets: [5], producerId: 2, transactional: true },
      { base: 6, offsets: [], control: 'commit', producerId: 2 },
    );
    log.aborted = [{ producerId: '1', firstOffset: 0 }];
    expect(offsetsOf(await collect(reader, { from: 0, until: 7, isolationLevel: 'read_committed' }))).toEqual([2, 3, 5]);
    expect(offsetsOf(await collect(reader, { from: 0, until: 7, isolationLevel: 'read_committed', maxFetchBytes: 1 }))).toEqual([2, 3, 5]);
    expect(offsetsOf(await collect(reader, { from: 0, until: 7 }))).toEqual([0, 1, 2, 3, 5]);
  });

  it('waits at the last stable offset without spinning, handing over what it has first, until the transaction ends', async () => {
    const { log, clock, reader } = setup({ maxWaitMs: 500 });
    log.add(
      { base: 0, offsets: [0, 1] },
      { base: 2, offsets: [2], producerId: 9, transactional: true },
      { base: 3, offsets: [], control: 'commit', producerId: 9 },
    );
    log.lastStableOffset = 2; // offsets 2-3 are an open transaction
    log.afterFetch = (n) => {
      if (n === 4) log.lastStableOffset = 4; // committed while the reader polls
    };
    const seen: Array<{ offsets: number[]; at: number }> = [];
    for await (const c of reader.read({ topic: 't', partition: 0, from: 0, until: 4, isolationLevel: 'read_committed' })) {
      seen.push({ offsets: c.records.map((r) => r.offset), at: clock.now() });
    }
    expect(seen.map((s) => s.offsets)).toEqual([[0, 1], [2]]);
    expect(seen[0]!.at).toBe(500); // handed over after the first empty long poll, before waiting more
    expect(log.fetchOffsets).toEqual([0, 2, 2, 2, 2]);
    expect(clock.sleeps).toEqual([]); // the broker's long poll was the wait: no client-side sleeping needed
  });

  it('sleeps between polls when the broker answers at once, and gives up with TimeoutError after stallTimeoutMs', async () => {
    const { log, clock, reader } = setup({ stallTimeoutMs: 5_000, maxWaitMs: 500 });
    log.add({ base: 0, offsets: [0] });
    log.lastStableOffset = 1;
    log.highWatermark = 10; // the planner's until came from a leader that knew more
    // A broker that does not hold the request (no long poll on this virtual clock).
    log.fetch = (
      (inner) =>
      async (...args: Parameters<FakeLog['fetch']>) => {
        const r = await inner(...args);
        clock.time -= r.partitions[0]!.batches.length === 0 ? args[1].maxWaitTimeMs : 0;
        return r;
      }
    )(log.fetch);
    const chunks: RecordChunk[] = [];
    const error = await (async () => {
      for await (const c of reader.read({ topic: 't', partition: 0, from: 0, until: 10, isolationLevel: 'read_committed' })) chunks.push(c);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as Error).message).toMatch(/last stable offset stayed at 1 \(a transaction is still open\)/);
    expect(offsetsOf(chunks)).toEqual([0]);
    expect(clock.sleeps.length).toBeGreaterThan(2);
    expect(clock.sleeps.slice(0, 4)).toEqual([100, 200, 400, 800]); // exponential, not a spin
    expect(clock.now()).toBeLessThanOrEqual(5_000);
    expect(log.fetchOffsets.length).toBeLessThan(15);
  });
});

describe('createRangeReader: retries and errors', () => {
  it('retries leader changes and lost connections at the same offset, refreshing metadata, with backoff', async () => {
    const { log, clock, reader } = setup();
    log.add({ base: 0, offsets: range(0, 5) }, { base: 5, offsets: range(5, 10) });
    log.faults = [
      { partitionError: NOT_LEADER_OR_FOLLOWER },
      { throws: Object.assign(new Error('Connection error: ECONNREFUSED'), { name: 'KafkaJSConnectionError', retriable: true }) },
      { throws: Object.assign(new Error('Request Fetch timed out'), { name: 'KafkaJSRequestTimeoutError', retriable: true }) },
      { partitionError: LEADER_NOT_AVAILABLE },
    ];
    const chunks = await collect(reader, { from: 2, until: 10, maxFetchBytes: 1 });
    expect(offsetsOf(chunks)).toEqual(range(2, 10));
    expect(log.fetchOffsets).toEqual([2, 2, 2, 2, 2, 5]);
    expect(log.leaderCalls).toEqual([false, true, true, true, true, false]);
    expect(clock.sleeps).toEqual([100, 200, 400, 800]);
  });

  it('gives up after the retry budget (total time), with a retriable KafkaError', async () => {
    const { log, clock, reader } = setup({ retry: { initialBackoffMs: 100, maxBackoffMs: 1_000, maxElapsedMs: 5_000 } });
    log.add({ base: 0, offsets: [0] });
    log.faults = Array.from({ length: 100 }, () => ({ partitionError: NOT_LEADER_OR_FOLLOWER }));
    const error = await collect(reader, { from: 0, until: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KafkaError);
    expect(error).toMatchObject({ retriable: true, type: 'NOT_LEADER_FOR_PARTITION' });
    expect((error as Error).message).toMatch(/gave up after \d+ attempts/);
    expect(clock.now()).toBeLessThanOrEqual(5_000);
    expect(log.fetchOffsets.length).toBeLessThan(15);
  });

  it('does not retry what retrying cannot fix', async () => {
    const { log, reader } = setup();
    log.add({ base: 0, offsets: [0] });
    log.faults = [{ partitionError: TOPIC_AUTHORIZATION_FAILED }];
    await expect(collect(reader, { from: 0, until: 1 })).rejects.toMatchObject({ name: 'KafkaError', type: 'TOPIC_AUTHORIZATION_FAILED' });
    log.faults = [{ throws: new TypeError('bug') }];
    await expect(collect(reader, { from: 0, until: 1 })).rejects.toThrow(TypeError);
    expect(log.fetchOffsets).toEqual([0, 0]);
  });

  it('turns UNKNOWN_TOPIC_OR_PARTITION into PartitionNotFoundError once fresh metadata no longer has the topic', async () => {
    const { log, reader } = setup();
    log.add({ base: 0, offsets: [0] });
    log.faults = [{ partitionError: UNKNOWN_TOPIC_OR_PARTITION }];
    const original = log.leader;
    log.leader = async (t, p, refresh) => {
      if (refresh) log.missing = true; // deleted meanwhile
      return original(t, p, refresh);
    };
    await expect(collect(reader, { from: 0, until: 1 })).rejects.toBeInstanceOf(PartitionNotFoundError);
    expect(log.fetchOffsets).toEqual([0]);
  });

  it('reads a topic that fresh metadata lacks for a moment (created a moment ago, broker not caught up yet)', async () => {
    const { log, clock, reader } = setup();
    log.add({ base: 0, offsets: range(0, 3) });
    log.faults = [{ partitionError: UNKNOWN_TOPIC_OR_PARTITION }];
    // The planner saw the topic on one broker; the broker this reader asks has not seen it yet.
    log.missing = true;
    let lookups = 0;
    const original = log.leader;
    log.leader = async (t, p, refresh) => {
      if (++lookups === 4) log.missing = false;
      return original(t, p, refresh);
    };
    const chunks = await collect(reader, { from: 0, until: 3 });
    expect(offsetsOf(chunks)).toEqual([0, 1, 2]);
    expect(log.leaderCalls).toEqual([false, true, true, true, true]);
    expect(clock.now()).toBeLessThan(5_000);
  });

  it('gives up with PartitionNotFoundError only once the partition stayed missing for missingGraceMs, refreshing metadata', async () => {
    const { log, clock, reader } = setup({ missingGraceMs: 2_000 });
    log.add({ base: 0, offsets: [0] });
    log.missing = true;
    await expect(collect(reader, { from: 0, until: 1 })).rejects.toBeInstanceOf(PartitionNotFoundError);
    expect(clock.now()).toBeGreaterThanOrEqual(2_000);
    expect(log.leaderCalls.filter(Boolean).length).toBeGreaterThanOrEqual(3);
    expect(log.fetchOffsets).toEqual([]);
  });

  it('a grace longer than the retry budget ends in a retriable error (range retried later), not PartitionNotFoundError', async () => {
    const { log, reader } = setup({ missingGraceMs: 60_000, retry: { maxElapsedMs: 3_000 } });
    log.add({ base: 0, offsets: [0] });
    log.missing = true;
    const error = await collect(reader, { from: 0, until: 1 }).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(PartitionNotFoundError);
    expect(error).toMatchObject({ name: 'KafkaError', retriable: true, type: 'UNKNOWN_TOPIC_OR_PARTITION' });
  });

  it('turns OFFSET_OUT_OF_RANGE into OffsetOutOfRangeError with the log start offset, after handing over what was read', async () => {
    const { log, reader } = setup();
    log.add({ base: 0, offsets: range(0, 5) }, { base: 5, offsets: range(5, 10) });
    const seen: RecordChunk[] = [];
    let fetches = 0;
    log.afterFetch = () => {
      fetches += 1;
      if (fetches === 1) {
        log.logStartOffset = 8; // retention runs between the two fetches
        log.faults = [{ partitionError: OFFSET_OUT_OF_RANGE }];
      }
    };
    const error = await (async () => {
      for await (const c of reader.read({
        topic: 't',
        partition: 0,
        from: 0,
        until: 10,
        isolationLevel: 'read_committed',
        maxFetchBytes: 1,
        maxChunkRecords: 100,
      }))
        seen.push(c);
    })().catch((e: unknown) => e);
    expect(offsetsOf(seen)).toEqual(range(0, 5));
    expect(seen.at(-1)!.nextOffset).toBe(5);
    expect(error).toBeInstanceOf(OffsetOutOfRangeError);
    expect(error).toMatchObject({ topic: 't', partition: 0, fetchOffset: 5, logStartOffset: 8, retriable: false });

    log.logOffsetsFails = true;
    log.afterFetch = undefined;
    log.faults = [{ partitionError: OFFSET_OUT_OF_RANGE }];
    const unknown = await collect(reader, { from: 5, until: 10 }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OffsetOutOfRangeError);
    expect((unknown as OffsetOutOfRangeError).logStartOffset).toBeUndefined();
  });

  it('ends the iteration at once, without an error, when the signal aborts: before reading, in a backoff, in a hung fetch', async () => {
    const log = new FakeLog();
    log.add({ base: 0, offsets: [0, 1] }, { base: 2, offsets: [2, 3] });
    const reader = createRangeReader(log, { retry: { initialBackoffMs: 5_000 } });
    expect(await collect(reader, { from: 0, until: 4, signal: AbortSignal.abort(new Error('deadline')) })).toEqual([]);
    expect(log.fetchOffsets).toEqual([]);

    const controller = new AbortController();
    log.faults = [{ partitionError: NOT_LEADER_OR_FOLLOWER }];
    const t0 = Date.now();
    const pending = collect(reader, { from: 0, until: 4, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    expect(await pending).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(1_000);

    // Records read but not yet yielded (a partial chunk) are dropped; yielded chunks stay valid.
    const hung = new AbortController();
    const fetch = log.fetch;
    log.fetch = async (node, req) => (req.fetchOffset === 0 ? fetch(node, req) : new Promise(() => undefined));
    const waiting = collect(reader, { from: 0, until: 4, maxFetchBytes: 1, maxChunkRecords: 1, signal: hung.signal });
    setTimeout(() => hung.abort(), 20);
    expect((await waiting).map((c) => c.nextOffset)).toEqual([1, 2]);
    const partial = new AbortController();
    const dropped = collect(reader, { from: 0, until: 4, maxFetchBytes: 130, maxChunkRecords: 10, signal: partial.signal });
    setTimeout(() => partial.abort(), 20);
    expect(await dropped).toEqual([]); // offsets 0-1 were read into a chunk that never filled
  });

  it('validates the request before reading', () => {
    const { reader } = setup();
    const base: ReadRequest = { topic: 't', partition: 0, from: 0, until: 1, isolationLevel: 'read_committed' };
    expect(() => reader.read({ ...base, from: 5, until: 4 })).toThrow(ValidationError);
    expect(() => reader.read({ ...base, until: 2 ** 53 })).toThrow(/safe integer/);
    expect(() => reader.read({ ...base, partition: -1 })).toThrow(ValidationError);
    expect(() => reader.read({ ...base, topic: '' })).toThrow(ValidationError);
    expect(() => reader.read({ ...base, isolationLevel: 'serializable' as never })).toThrow(/isolation level/);
    expect(() => reader.read({ ...base, maxChunkRecords: 0 })).toThrow(/maxChunkRecords/);
    expect(() => reader.read({ ...base, maxFetchBytes: 2 ** 31 })).toThrow(/maxFetchBytes/);
  });

  it('close() closes the transport', async () => {
    const { log, reader } = setup();
    await reader.close();
    expect(log.closed).toBe(1);
  });
});

describe('createRangeReader: prefetch', () => {
  const tenBatches = (log: FakeLog): void => {
    for (let b = 0; b < 3; b++) log.add({ base: b * 10, offsets: range(b * 10, b * 10 + 10), sizeBytes: 100 });
  };
  const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const req: ReadRequest = { topic: 't', partition: 0, isolationLevel: 'read_uncommitted', from: 0, until: 30, maxFetchBytes: 100 };

  it.each([
    [true, [0, 10]],
    [false, [0]],
  ])('prefetch %s: the Fetch where a response ends is sent while its chunk is still being handled', async (prefetch, sent) => {
    const { log, reader } = setup({ prefetch });
    tenBatches(log);
    const read = reader.read({ ...req, maxChunkRecords: 10 });
    const chunks = read[Symbol.asyncIterator]();
    const first = await chunks.next();
    expect(first.done ? [] : first.value.records.map((r) => r.offset)).toEqual(range(0, 10));
    await settle();
    expect(log.fetchOffsets).toEqual(sent);
    const rest: number[] = [];
    for (let c = await chunks.next(); !c.done; c = await chunks.next()) rest.push(...c.value.records.map((r) => r.offset));
    expect(rest).toEqual(range(10, 30));
    // Nothing fetched at or past `until`, and every offset fetched once.
    expect(log.fetchOffsets).toEqual([0, 10, 20]);
  });

  it('a consumer that stops early also stops the retries of the prefetch in flight', async () => {
    const { log, reader } = setup();
    tenBatches(log);
    const retriable = new KafkaError('connection lost', { retriable: true });
    log.faults = [{ advance: 0 }, ...Array.from({ length: 100 }, () => ({ throws: retriable }))];
    for await (const chunk of reader.read({
      topic: 't',
      partition: 0,
      isolationLevel: 'read_uncommitted',
      from: 0,
      until: 30,
      maxChunkRecords: 10,
      maxFetchBytes: 100,
    })) {
      expect(chunk.records).toHaveLength(10);
      break;
    }
    const sentAtStop = log.fetchOffsets.length;
    for (let i = 0; i < 20; i++) await settle();
    expect(log.fetchOffsets.length).toBe(sentAtStop);
  });

  it('checks CRCs while the prefetch is out, and fails on a corrupt batch without delivering it', async () => {
    const { log, reader } = setup();
    const sentAtCheck: number[] = [];
    const spy = (spec: BatchSpec) => batch(spec, undefined, () => sentAtCheck.push(log.fetchOffsets.length));
    log.batches = [0, 10, 20, 30].map((base) => spy({ base, offsets: range(base, base + 10), sizeBytes: 100, corrupt: base === 20 }));
    log.highWatermark = 40;
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const c of reader.read({ ...req, until: 40, maxChunkRecords: 5, maxFetchBytes: 200 })) {
          seen.push(...c.records.map((r) => r.offset));
        }
      })(),
    ).rejects.toThrow(/CRC/);
    // Two batches per Fetch: the second batch of the first response is checked once the prefetch
    // (at 20) is out; the corrupt batch at 20 is never delivered.
    expect(sentAtCheck.slice(0, 2)).toEqual([1, 2]);
    expect(seen).toEqual(range(0, 20));
  });

  it('a corrupt batch fails the read even when its records are all before the read start', async () => {
    const { log, reader } = setup();
    log.add({ base: 0, offsets: range(0, 10), sizeBytes: 100, corrupt: true }, { base: 10, offsets: range(10, 20), sizeBytes: 100 });
    await expect(collect(reader, { from: 5, until: 6 })).rejects.toThrow(/CRC/);
  });

  it('a prefetch that fails reports its error after the records read before it', async () => {
    const { log, reader } = setup();
    tenBatches(log);
    log.faults = [{ advance: 0 }, { partitionError: OFFSET_OUT_OF_RANGE }];
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const c of reader.read({
          topic: 't',
          partition: 0,
          isolationLevel: 'read_uncommitted',
          from: 0,
          until: 30,
          maxFetchBytes: 100,
        })) {
          seen.push(...c.records.map((r) => r.offset));
        }
      })(),
    ).rejects.toThrow(OffsetOutOfRangeError);
    expect(seen).toEqual(range(0, 10));
  });
});

/** A chunk as [offsets, nextOffset], to compare sequences of chunks at a glance. */
const shapeOf = (c: RecordChunk): [number[], number] => [c.records.map((r) => r.offset), c.nextOffset];
/** Lets every pending promise and timer-free step run (setImmediate rounds). */
async function settleAll(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A broker that does not hold an empty Fetch (no long poll): it answers after `answerMs` of virtual time. */
function answerEmptyAfter(log: FakeLog, clock: FakeClock, answerMs: number): void {
  const inner = log.fetch;
  log.fetch = async (node, req) => {
    const r = await inner(node, req);
    if (r.partitions[0]!.batches.length === 0) clock.time += answerMs - req.maxWaitTimeMs;
    return r;
  };
}

describe('createRangeReader: open reads', () => {
  /** Holds every Fetch after the first until the returned release() (a slow broker, or records not produced yet). */
  function holdFetchesAfterFirst(log: FakeLog): () => void {
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const inner = log.fetch;
    let calls = 0;
    log.fetch = async (node, req) => {
      calls += 1;
      if (calls > 1) await released;
      return inner(node, req);
    };
    return release;
  }

  type Row = {
    case: string;
    open: boolean;
    isolationLevel: ReadRequest['isolationLevel'];
    /** The readable end the broker reports before the release (everything up to 6 after it). */
    readable: { highWatermark: number; lastStableOffset?: number };
    maxFetchBytes?: number;
    /** The first chunk, or 'waiting' when the read holds it back for the next (held) response. */
    first: [number[], number] | 'waiting';
    rest: Array<[number[], number]>;
  };
  const rows: Row[] = [
    {
      case: 'open, caught up with the high watermark: the short chunk is yielded at once',
      open: true,
      isolationLevel: 'read_uncommitted',
      readable: { highWatermark: 3 },
      first: [[0, 1, 2], 3],
      rest: [[[3, 4], 6]],
    },
    {
      case: 'open, read_committed, caught up with the last stable offset (high watermark beyond it): yielded at once',
      open: true,
      isolationLevel: 'read_committed',
      readable: { highWatermark: 6, lastStableOffset: 3 },
      first: [[0, 1, 2], 3],
      rest: [[[3, 4], 6]],
    },
    {
      case: 'open, not caught up (the response stopped at maxFetchBytes): the chunk keeps filling',
      open: true,
      isolationLevel: 'read_uncommitted',
      readable: { highWatermark: 6 },
      maxFetchBytes: 200,
      first: 'waiting',
      rest: [
        [[0, 1, 2, 3, 4], 5], // closed by maxFetchBytes
        [[], 6], // the commit marker: progress handed over once caught up
      ],
    },
    {
      case: 'closed read of [0, 6): merged with the next response',
      open: false,
      isolationLevel: 'read_uncommitted',
      readable: { highWatermark: 3 },
      first: 'waiting',
      rest: [[[0, 1, 2, 3, 4], 6]],
    },
    {
      case: 'closed read of [0, 6), read_committed: merged with the next response',
      open: false,
      isolationLevel: 'read_committed',
      readable: { highWatermark: 6, lastStableOffset: 3 },
      first: 'waiting',
      rest: [[[0, 1, 2, 3, 4], 6]],
    },
  ];

  it.each(rows)('$case', async (row) => {
    const { log, reader } = setup();
    // 0-2 plain records, 3-4 a transaction, 5 its commit marker; readable at first: up to `row.readable`.
    log.add(
      { base: 0, offsets: [0, 1, 2] },
      { base: 3, offsets: [3, 4], producerId: 9, transactional: true },
      { base: 5, offsets: [], control: 'commit', producerId: 9 },
    );
    Object.assign(log, row.readable);
    const release = holdFetchesAfterFirst(log);
    const controller = new AbortController();
    const read = reader.read({
      topic: 't',
      partition: 0,
      from: 0,
      until: row.open ? OPEN_UNTIL : 6,
      isolationLevel: row.isolationLevel,
      open: row.open,
      maxFetchBytes: row.maxFetchBytes,
      signal: controller.signal,
    });
    const chunks = read[Symbol.asyncIterator]();
    let next = chunks.next();
    const first = await Promise.race([next, settleAll().then(() => 'waiting' as const)]);
    expect(first === 'waiting' || first.done ? first : shapeOf(first.value)).toEqual(row.first);
    if (first !== 'waiting') next = chunks.next();

    // The rest of the log becomes readable (produced, or the transaction committed).
    Object.assign(log, { highWatermark: 6, lastStableOffset: undefined });
    release();
    const rest: Array<[number[], number]> = [];
    for (let c = await next; !c.done; c = await chunks.next()) {
      rest.push(shapeOf(c.value));
      if (c.value.nextOffset >= 6) controller.abort(); // an open read ends only so
    }
    expect(rest).toEqual(row.rest);
  });

  it.each([
    ['a broker that holds an empty Fetch for maxWaitMs (long poll)', false],
    ['a broker that answers an empty Fetch at once', true],
  ])('waits past stallTimeoutMs without an error, then yields the records appended later: %s', async (_, early) => {
    const { log, clock, reader } = setup({ stallTimeoutMs: 5_000, maxWaitMs: 500 });
    log.add({ base: 0, offsets: [0, 1] });
    if (early) answerEmptyAfter(log, clock, 0);
    log.afterFetch = (n) => {
      if (n === 30) log.add({ base: 2, offsets: [2, 3] }); // produced after 29 empty polls
    };
    const chunks = await readOpenUntil(reader, 4);
    expect(chunks.map(shapeOf)).toEqual([
      [[0, 1], 2],
      [[2, 3], 4],
    ]);
    expect(log.fetchOffsets.slice(0, 31)).toEqual([0, ...Array.from({ length: 30 }, () => 2)]);
    expect(clock.now()).toBeGreaterThan(5_000 * 2);
    if (early) {
      // Never a spin: exponential backoff between polls, capped at the retry policy's 2 s.
      expect(clock.sleeps.slice(0, 6)).toEqual([100, 200, 400, 800, 1_600, 2_000]);
      expect(Math.max(...clock.sleeps)).toBe(2_000);
    } else {
      expect(clock.sleeps).toEqual([]); // the broker's long poll was the wait
    }
  });

  it.each([
    ['in a long poll (a Fetch in flight)', () => new Promise<never>(() => undefined)],
    ['in the backoff between early answers', undefined],
  ])('ends without an error when the signal aborts while it waits for records: %s', async (_, hang) => {
    const log = new FakeLog(); // real clock; without one, the fake answers an empty Fetch at once
    log.add({ base: 0, offsets: [0, 1] });
    const inner = log.fetch;
    if (hang) log.fetch = async (node, req) => (req.fetchOffset === 0 ? inner(node, req) : hang());
    const reader = createRangeReader(log);
    const controller = new AbortController();
    const t0 = Date.now();
    const pending = collect(reader, { from: 0, until: OPEN_UNTIL, open: true, signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    expect((await pending).map(shapeOf)).toEqual([[[0, 1], 2]]);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });

  it.each([
    [undefined, false, 500],
    [2_000, false, 2_000],
    [2_000, true, 2_000],
    [0, true, 0],
  ])('maxWaitMs %s on the request (open %s): every Fetch long-polls for %s ms', async (maxWaitMs, open, expected) => {
    const { log, reader } = setup({ maxWaitMs: 500 });
    log.add({ base: 0, offsets: [0] }, { base: 1, offsets: [1] });
    const waits: number[] = [];
    const inner = log.fetch;
    log.fetch = async (node, req) => {
      waits.push(req.maxWaitTimeMs);
      return inner(node, req);
    };
    expect(offsetsOf(await collect(reader, { from: 0, until: 2, open, maxWaitMs, maxFetchBytes: 1 }))).toEqual([0, 1]);
    expect(waits).toEqual([expected, expected]);
  });

  it.each([
    ['the reader default, 500', undefined, []],
    ['2000 on the request', 2_000, [100, 200, 400]],
  ])('an empty answer after 600 ms: for a long poll of maxWaitMs %s, client-side sleeps %j', async (_, maxWaitMs, sleeps) => {
    const { log, clock, reader } = setup({ maxWaitMs: 500 });
    log.add({ base: 0, offsets: [0] });
    answerEmptyAfter(log, clock, 600);
    log.afterFetch = (n) => {
      if (n === 4) log.add({ base: 1, offsets: [1] });
    };
    expect(offsetsOf(await readOpenUntil(reader, 2, { maxWaitMs }))).toEqual([0, 1]);
    expect(clock.sleeps).toEqual(sleeps);
  });

  it('validates maxWaitMs', () => {
    const { reader } = setup();
    const base: ReadRequest = { topic: 't', partition: 0, from: 0, until: OPEN_UNTIL, isolationLevel: 'read_committed', open: true };
    for (const maxWaitMs of [-1, 1.5, 2 ** 31]) expect(() => reader.read({ ...base, maxWaitMs })).toThrow(/maxWaitMs/);
    expect(() => reader.read({ ...base, maxWaitMs: 0 })).not.toThrow();
  });
});

describe('createMemoryRangeReader: open reads', () => {
  const openRead = (signal?: AbortSignal, extra: Partial<ReadRequest> = {}): ReadRequest => ({
    topic: 't',
    partition: 0,
    from: 0,
    until: OPEN_UNTIL,
    isolationLevel: 'read_committed',
    open: true,
    signal,
    ...extra,
  });

  it('yields what the log holds, then waits (without polling) for each append, until the signal aborts', async () => {
    const reader = createMemoryRangeReader();
    reader.append('t', 0, [{ value: 'a' }, { value: 'b' }, { value: 'c' }]);
    const controller = new AbortController();
    const chunks = reader.read(openRead(controller.signal, { maxChunkRecords: 2 }))[Symbol.asyncIterator]();
    const next = async (): Promise<[number[], number] | 'done'> => {
      const c = await chunks.next();
      return c.done ? 'done' : shapeOf(c.value);
    };
    expect(await next()).toEqual([[0, 1], 2]);
    expect(await next()).toEqual([[2], 3]);

    const waiting = next();
    await settleAll();
    const requests = reader.requestCount();
    await settleAll();
    expect(reader.requestCount()).toBe(requests); // waiting, not spinning
    expect(await Promise.race([waiting, settleAll().then(() => 'still waiting')])).toBe('still waiting');
    reader.append('t', 0, [{ value: 'd' }]);
    expect(await waiting).toEqual([[3], 4]);

    const last = next();
    await settleAll();
    controller.abort();
    expect(await last).toBe('done');
  });

  it('ends at once when already aborted, and at until; a closed read still fails past the log end', async () => {
    const reader = createMemoryRangeReader();
    reader.append('t', 0, [{ value: 'a' }, { value: 'b' }]);
    const chunks = async (req: ReadRequest): Promise<Array<[number[], number]>> => {
      const out: Array<[number[], number]> = [];
      for await (const c of reader.read(req)) out.push(shapeOf(c));
      return out;
    };
    expect(await chunks(openRead(AbortSignal.abort()))).toEqual([]);
    expect(await chunks(openRead(undefined, { until: 2 }))).toEqual([[[0, 1], 2]]);
    await expect(chunks(openRead(undefined, { until: 3, open: false }))).rejects.toThrow(/nothing to read at 2/);
  });

  it('an open read waiting at the end of the log fails once the partition is deleted', async () => {
    const reader = createMemoryRangeReader();
    reader.append('t', 0, [{ value: 'a' }]);
    const chunks = reader.read(openRead(new AbortController().signal))[Symbol.asyncIterator]();
    await chunks.next();
    const waiting = chunks.next();
    await settleAll();
    reader.deletePartition('t', 0);
    await expect(waiting).rejects.toBeInstanceOf(PartitionNotFoundError);
  });
});
