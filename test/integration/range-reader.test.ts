/** The kafkajs RangeReader adapter against the real local broker. */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { CompressionTypes, Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { TimeoutError } from '../../lib/errors';
import { kafkaClientConfig } from '../../lib/kafka/client';
import { KafkajsCluster } from '../../lib/kafka/cluster.kafkajs';
import { registerCodecs } from '../../lib/kafka/protocol/codecs';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../../lib/ports/range-reader';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import type { KafkaRecord, RangeReader, ReadRequest, RecordChunk } from '../../lib/ports/range-reader';
import { createTopicsReady, testKafka, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';
// @ts-expect-error -- kafkajs internal, untyped: its read_committed filter, shown wrong here for contrast.
import filterAbortedMessages from 'kafkajs/src/consumer/filterAbortedMessages';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function readAll(reader: RangeReader, req: ReadRequest): Promise<{ records: KafkaRecord[]; chunks: RecordChunk[] }> {
  const chunks: RecordChunk[] = [];
  for await (const chunk of reader.read(req)) chunks.push(chunk);
  return { records: chunks.flatMap((c) => c.records), chunks };
}

/** The invariants every read keeps: in-range offsets, strictly increasing, chunk bounds, final nextOffset. */
function expectWellFormed(req: ReadRequest, chunks: RecordChunk[]): void {
  let previous = req.from;
  let lastOffset = -1;
  for (const chunk of chunks) {
    expect(chunk.records.length).toBeLessThanOrEqual(req.maxChunkRecords ?? 500);
    for (const r of chunk.records) {
      expect(r.offset).toBeGreaterThanOrEqual(previous);
      expect(r.offset).toBeGreaterThan(lastOffset);
      expect(r.offset).toBeLessThan(chunk.nextOffset);
      lastOffset = r.offset;
    }
    expect(chunk.nextOffset).toBeGreaterThan(previous);
    expect(chunk.nextOffset).toBeLessThanOrEqual(req.until);
    previous = chunk.nextOffset;
  }
  if (req.until > req.from) expect(chunks.at(-1)?.nextOffset).toBe(req.until);
}

const text = (b: Buffer | null): string | null => (b === null ? null : b.toString());

/** A client as a stream's config builds it (kafkaClientConfig: its socket factory included), quiet. */
function streamKafka(clientId: string): Kafka {
  const config = kafkaClientConfig({
    brokers: process.env.KAFKA_BROKERS!.split(','),
    clientId,
    connectionTimeoutMs: 3_000,
    requestTimeoutMs: 30_000,
  });
  return new Kafka({ ...config, logLevel: logLevel.NOTHING });
}

describe('kafkajs RangeReader adapter (real broker)', () => {
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;
  let reader: RangeReader;
  let cluster: KafkajsCluster;

  async function createTopic(topic: string, configEntries: Array<{ name: string; value: string }> = [], numPartitions = 1) {
    await createTopicsReady(admin, [{ topic, numPartitions, configEntries }]);
  }

  async function leaderOf(topic: string, partition = 0): Promise<number> {
    const metadata = await cluster.metadata([topic]);
    return metadata.topicMetadata[0]!.partitionMetadata.find((p) => p.partitionId === partition)!.leader;
  }

  async function highWatermark(topic: string, partition = 0): Promise<number> {
    // read_uncommitted ListOffsets through our wrapper (admin.fetchTopicOffsets reports the LSO).
    const [t] = await cluster.listOffsets(await leaderOf(topic, partition), 0, [{ topic, partitions: [{ partition, timestamp: -1 }] }]);
    return Number(t!.partitions[0]!.offset);
  }

  /** Waits (bounded) until the high watermark (and, with `stable`, the last stable offset) reaches `offset`. */
  async function waitForHighWatermark(topic: string, offset: number, stable = false): Promise<void> {
    const reached = async () => {
      const [lso] = stable ? await admin.fetchTopicOffsets(topic) : []; // read_committed: `high` is the LSO
      return { highWatermark: await highWatermark(topic), lastStable: lso && Number(lso.high) };
    };
    await waitFor(`${topic} to reach offset ${offset}${stable ? ', high watermark and last stable offset' : ''}`, reached, {
      until: (o) => o.highWatermark === offset && (!stable || o.lastStable === offset),
      timeoutMs: 10_000,
      intervalMs: 20,
    });
  }

  beforeAll(async () => {
    registerCodecs();
    kafka = testKafka('range-reader');
    admin = kafka.admin();
    producer = kafka.producer({ allowAutoTopicCreation: false });
    await Promise.all([admin.connect(), producer.connect()]);
    // The reader reads through the client config a stream gets (its whole-response sockets).
    reader = createKafkajsRangeReader(streamKafka('range-reader'));
    cluster = new KafkajsCluster(kafka);
  });

  afterAll(async () => {
    await reader.close();
    await cluster.disconnect();
    await producer.disconnect();
    await admin.disconnect();
  });

  it('reads exactly [from, until) in order, in bounded chunks, fetching lazily; keys, values, headers, timestamps intact', async () => {
    const topic = uniqueName('rr-exact');
    await createTopic(topic);
    const at = Date.now();
    for (let batch = 0; batch < 10; batch++) {
      await producer.send({
        topic,
        messages: Array.from({ length: 100 }, (_, i) => {
          const n = batch * 100 + i;
          return {
            key: n % 10 === 0 ? null : `k${n}`,
            value: n % 13 === 0 ? null : Buffer.from([n & 0xff, 0, 0xff, n >> 8]),
            headers: n % 2 === 0 ? { h: `h${n}`, multi: ['a', 'b'] } : undefined,
            timestamp: String(at + n),
          };
        }),
      });
    }
    // 1 KiB per fetch is less than one 100-record batch: the broker still sends one whole batch (KIP-74).
    const req: ReadRequest = {
      topic,
      partition: 0,
      from: 123,
      until: 877,
      isolationLevel: 'read_committed',
      maxChunkRecords: 64,
      maxFetchBytes: 1024,
    };
    const before = reader.requestCount();
    const iterator = reader.read(req)[Symbol.asyncIterator]();
    const first = await iterator.next();
    // Lazy: the first chunk needed one fetch (and the prefetch of the next), not the whole range.
    expect(reader.requestCount() - before).toBe(2);
    const chunks: RecordChunk[] = [first.value as RecordChunk];
    for (let step = await iterator.next(); !step.done; step = await iterator.next()) chunks.push(step.value);
    expectWellFormed(req, chunks);
    const records = chunks.flatMap((c) => c.records);
    expect(records.map((r) => r.offset)).toEqual(Array.from({ length: 754 }, (_, i) => 123 + i));
    // Bytes are counted per batch consumed (a batch split across chunks counts in the first).
    const valueBytes = records.reduce((n, r) => n + (r.value?.length ?? 0), 0);
    expect(chunks.reduce((n, c) => n + c.bytes, 0)).toBeGreaterThan(valueBytes);
    expect(reader.requestCount() - before).toBe(8); // one per batch: offsets 100-199, ..., 800-899

    for (const r of records) {
      const n = r.offset;
      expect(r.topic).toBe(topic);
      expect(r.partition).toBe(0);
      expect(r.key === null ? null : r.key.toString()).toBe(n % 10 === 0 ? null : `k${n}`);
      expect(r.value).toEqual(n % 13 === 0 ? null : Buffer.from([n & 0xff, 0, 0xff, n >> 8]));
      expect(r.timestampMs).toBe(at + n);
      expect(r.timestampType).toBe('CreateTime');
      if (n % 2 === 0) {
        expect(r.headers.map((h) => [h.key, text(h.value)])).toEqual([
          ['h', `h${n}`],
          ['multi', 'a'],
          ['multi', 'b'],
        ]);
      } else {
        expect(r.headers).toEqual([]);
      }
    }

    // An empty range yields nothing; a range inside one batch yields just its part.
    expect((await readAll(reader, { ...req, from: 500, until: 500 })).chunks).toEqual([]);
    const inner = await readAll(reader, { ...req, from: 205, until: 207 });
    expect(inner.records.map((r) => r.offset)).toEqual([205, 206]);
    expect(inner.chunks.map((c) => c.nextOffset)).toEqual([207]);
  });

  /** A kafkajs client that records every socket it opens. */
  function socketCountingKafka(): { sockets: Socket[]; kafka: Kafka } {
    const sockets: Socket[] = [];
    const kafka = new Kafka({
      clientId: 'range-reader-sockets',
      brokers: process.env.KAFKA_BROKERS!.split(','),
      logLevel: logLevel.NOTHING,
      socketFactory: ({ host, port, onConnect }) => {
        const socket = connect({ host, port }, onConnect);
        sockets.push(socket);
        return socket;
      },
    });
    return { sockets, kafka };
  }

  it("hands each Fetch response to the reader as the socket read it: kafkajs's copy of it is skipped", async () => {
    const topic = uniqueName('rr-whole');
    await createTopic(topic);
    const values = Array.from({ length: 300 }, (_, i) => Buffer.alloc(10_000, i % 251));
    // Batches under the broker's 1 MB message limit; one Fetch response holds several.
    for (let i = 0; i < 300; i += 75) await producer.send({ topic, messages: values.slice(i, i + 75).map((value) => ({ value })) });
    // Responses of ~1.5 MB: two or more on the one Fetch connection (kafkajs copies from its second on).
    const req: ReadRequest = { topic, partition: 0, from: 0, until: 300, isolationLevel: 'read_uncommitted', maxFetchBytes: 1_500_000 };
    /** Bytes of each Buffer.concat of 1 MiB or more while `read` runs. */
    const bigConcats = async (read: () => Promise<KafkaRecord[]>): Promise<{ records: KafkaRecord[]; sizes: number[] }> => {
      const concat = jest.spyOn(Buffer, 'concat');
      try {
        const records = await read();
        const sizes = concat.mock.calls.map(([list]) => list.reduce((n, b) => n + b.length, 0)).filter((n) => n >= 1 << 20);
        return { records, sizes };
      } finally {
        concat.mockRestore();
      }
    };
    const own = createKafkajsRangeReader(streamKafka('range-reader-whole'));
    const plain = createKafkajsRangeReader(testKafka('range-reader-plain'));
    try {
      const whole = await bigConcats(async () => (await readAll(own, req)).records);
      // kafkajs's own sockets: each ~1.5 MB response arrives in 64 KiB reads that kafkajs concatenates.
      const copied = await bigConcats(async () => (await readAll(plain, req)).records);
      expect(copied.sizes.length).toBeGreaterThan(0);
      expect(whole.sizes).toEqual([]);
      // Buffer.equals: jest's deep equality walks 3 MB byte by byte for ~20 s.
      for (const { records } of [whole, copied]) {
        expect(records).toHaveLength(values.length);
        expect(records.filter((r, i) => !r.value?.equals(values[i]!)).map((r) => r.offset)).toEqual([]);
      }
    } finally {
      await Promise.all([own.close(), plain.close()]);
    }
  });

  it('keeps one connection across reads and releases it on close()', async () => {
    const topic = uniqueName('rr-conn');
    await createTopic(topic);
    await producer.send({ topic, messages: Array.from({ length: 50 }, (_, i) => ({ value: `v${i}` })) });
    const { sockets, kafka: counting } = socketCountingKafka();
    const own = createKafkajsRangeReader(counting);
    const read = async (i: number) => {
      const { records } = await readAll(own, { topic, partition: 0, from: i * 10, until: i * 10 + 10, isolationLevel: 'read_uncommitted' });
      expect(records).toHaveLength(10);
    };
    await read(0);
    const opened = sockets.length;
    // kafkajs keeps two connections per broker (one reserved for Fetch long polls); single broker here.
    expect(opened).toBeLessThanOrEqual(2);
    for (let i = 1; i < 5; i++) await read(i);
    expect(own.requestCount()).toBe(5);
    expect(sockets).toHaveLength(opened);
    expect(sockets.some((s) => s.destroyed)).toBe(false);
    await own.close();
    await Promise.all(sockets.map((s) => (s.destroyed ? undefined : once(s, 'close'))));
    expect(sockets.every((s) => s.destroyed)).toBe(true);
  });

  it('opens one socket per connection slot when reads race on a fresh reader', async () => {
    const topic = uniqueName('rr-race');
    await createTopic(topic);
    await producer.send({ topic, messages: Array.from({ length: 40 }, (_, i) => ({ value: `v${i}` })) });
    const { sockets, kafka: counting } = socketCountingKafka();
    const own = createKafkajsRangeReader(counting);
    // Warm the metadata so the four reads below race only on the Fetch connection, which is not
    // open yet (kafkajs alone opens one socket per racing request and leaks all but the last).
    await readAll(own, { topic, partition: 0, from: 0, until: 1, isolationLevel: 'read_uncommitted' });
    await own.close();
    await Promise.all(sockets.map((s) => (s.destroyed ? undefined : once(s, 'close'))));
    sockets.length = 0;
    const results = await Promise.all(
      [0, 1, 2, 3].map((i) => readAll(own, { topic, partition: 0, from: i * 10, until: i * 10 + 10, isolationLevel: 'read_uncommitted' })),
    );
    expect(results.map((r) => r.records.length)).toEqual([10, 10, 10, 10]);
    expect(sockets.length).toBeLessThanOrEqual(2);
    await own.close();
    await Promise.all(sockets.map((s) => (s.destroyed ? undefined : once(s, 'close'))));
    expect(sockets.every((s) => s.destroyed)).toBe(true);
  });

  it.each([
    ['none', CompressionTypes.None],
    ['gzip', CompressionTypes.GZIP],
    ['snappy', CompressionTypes.Snappy],
    ['lz4', CompressionTypes.LZ4],
    ['zstd', CompressionTypes.ZSTD],
  ])(
    'reads %s-compressed batches byte-exact (kafkajs producer; the broker validates them with Java codecs)',
    async (_name, compression) => {
      const topic = uniqueName('rr-codec');
      await createTopic(topic);
      // Random bytes (incompressible) and long repetitive values, batches well over 64 KiB (several
      // LZ4 blocks and snappy chunks).
      const values = Array.from({ length: 300 }, (_, i) =>
        i % 3 === 0
          ? Buffer.from(Array.from({ length: 200 + i }, () => Math.floor(Math.random() * 256)))
          : Buffer.from(`value ${i} `.repeat(50 + i)),
      );
      await producer.send({ topic, compression, messages: values.slice(0, 150).map((value, i) => ({ key: `k${i}`, value })) });
      await producer.send({ topic, compression, messages: values.slice(150).map((value, i) => ({ key: `k${150 + i}`, value })) });
      const req: ReadRequest = { topic, partition: 0, from: 0, until: 300, isolationLevel: 'read_uncommitted', maxChunkRecords: 100 };
      const { records, chunks } = await readAll(reader, req);
      expectWellFormed(req, chunks);
      expect(records.map((r) => r.value)).toEqual(values);
      expect(records.map((r) => text(r.key))).toEqual(values.map((_, i) => `k${i}`));
    },
  );

  it.each(['gzip', 'snappy', 'lz4', 'zstd'])(
    'reads batches the broker compressed with Java codecs (topic compression.type=%s)',
    async (codec) => {
      const topic = uniqueName(`rr-broker-${codec}`);
      await createTopic(topic, [{ name: 'compression.type', value: codec }]);
      const values = Array.from({ length: 400 }, (_, i) => Buffer.from(`broker-compressed ${i} `.repeat(1 + (i % 40))));
      await producer.send({ topic, messages: values.map((value) => ({ value })) });
      const { records } = await readAll(reader, { topic, partition: 0, from: 0, until: 400, isolationLevel: 'read_committed' });
      expect(records.map((r) => r.value)).toEqual(values);
    },
  );

  it('completes a compacted range: offset gaps and empty batches left by the cleaner', async () => {
    const topic = uniqueName('rr-compact');
    await createTopic(topic, [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'segment.ms', value: '100' },
      { name: 'segment.bytes', value: String(1024 * 1024) }, // the smallest this broker accepts
      { name: 'min.cleanable.dirty.ratio', value: '0.01' },
      { name: 'delete.retention.ms', value: '100' },
      { name: 'min.compaction.lag.ms', value: '0' },
    ]);
    // An idempotent producer's last batch is kept by the cleaner (producer state) even when all its
    // records are superseded: that leaves an empty batch. A plain producer then overwrites the same
    // keys round after round (each round in a new segment), plus one key per round that survives.
    const idempotent = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    await idempotent.connect();
    const produced: string[] = [];
    const send = async (p: Producer, tag: string, keys: string[]) => {
      await p.send({ topic, messages: keys.map((key) => ({ key, value: `${tag}:${key}` })) });
      produced.push(...keys.map((key) => `${key}=${tag}:${key}`));
    };
    const dupKeys = Array.from({ length: 10 }, (_, i) => `dup${i}`);
    await send(idempotent, 'i0', dupKeys);
    await send(idempotent, 'i1', dupKeys);
    await idempotent.disconnect();
    for (let round = 0; round < 8; round++) {
      await sleep(120); // past segment.ms: the next append rolls a new segment
      await send(producer, `r${round}`, [...dupKeys, `unique${round}`]);
    }
    await sleep(120); // past segment.ms again: a roll is the point here, and nothing but time makes the broker roll
    await send(producer, 'last', ['last']); // rolls once more, so round 7 becomes cleanable too
    const until = await highWatermark(topic);
    expect(until).toBe(produced.length);

    // Once the cleaner has been over every closed segment, exactly each key's latest record is left.
    const latest = new Map<string, number>();
    produced.forEach((kv, offset) => latest.set(kv.split('=')[0]!, offset));
    const survivors = [...latest.values()].sort((a, b) => a - b);
    const leader = await leaderOf(topic);
    const scan = async () => {
      const batches = [];
      for (let offset = 0; offset < until;) {
        const response = await cluster.fetch(leader, {
          topic,
          partition: 0,
          fetchOffset: offset,
          isolationLevel: 0,
          maxWaitTimeMs: 100,
          minBytes: 1,
          maxBytes: 1 << 20,
        });
        const found = response.partitions[0]!.batches;
        if (found.length === 0) throw new Error(`no batch at ${offset}`);
        batches.push(...found);
        offset = found.at(-1)!.lastOffset + 1;
      }
      return batches;
    };
    // The offsets left first: a timeout shows them before the batches.
    const compacted = async () => {
      const found = await scan();
      const remaining = (await Promise.all(found.map((b) => b.records()))).flat().map((r) => Number(r.offset));
      return { remaining: remaining.join(), batches: found };
    };
    const { batches } = await waitFor(`the cleaner to leave only each key's latest record of ${topic}`, compacted, {
      until: (c) => c.remaining === survivors.join(),
      timeoutMs: 20_000,
      intervalMs: 300,
    });
    const emptyBatch = batches.find((b) => b.recordCount === 0)!;
    expect(emptyBatch).toBeDefined();
    expect(emptyBatch.producerId).not.toBe('-1');

    // kafkajs's own decoder: one fetch of just the empty batch comes back with no records although
    // the offset is far below the high watermark. A reader advancing by records would be stuck here.
    const stuck = await cluster.fetchWithKafkajsDecoder(leader, {
      topic,
      partition: 0,
      fetchOffset: emptyBatch.baseOffset,
      isolationLevel: 0,
      maxWaitTimeMs: 10,
      minBytes: 1,
      maxBytes: 1,
    });
    const stuckPartition = stuck.responses[0]!.partitions[0]!;
    expect(stuckPartition.messages).toEqual([]);
    expect(Number(stuckPartition.highWatermark)).toBe(until);

    const expected = survivors.map((offset) => ({ offset, kv: produced[offset] }));
    for (const maxFetchBytes of [1, 300, 1 << 20]) {
      // maxFetchBytes 1: one batch per fetch, so one fetch returns only the empty batch.
      const req: ReadRequest = {
        topic,
        partition: 0,
        from: 0,
        until,
        isolationLevel: 'read_uncommitted',
        maxFetchBytes,
        maxChunkRecords: 4,
      };
      const { records, chunks } = await readAll(reader, req);
      expectWellFormed(req, chunks);
      expect(records.map((r) => ({ offset: r.offset, kv: `${text(r.key)}=${text(r.value)}` }))).toEqual(expected);
    }

    // A range starting at the empty batch (inside a gap) and ending inside another gap.
    const from = emptyBatch.baseOffset + 3;
    const end = survivors[3]! + 1;
    const sub = await readAll(reader, { topic, partition: 0, from, until: end, isolationLevel: 'read_committed', maxFetchBytes: 1 });
    expect(sub.records.map((r) => r.offset)).toEqual(survivors.filter((o) => o >= from && o < end));
    expect(sub.chunks.at(-1)?.nextOffset).toBe(end);
  });

  describe('transactions', () => {
    async function transactional(id: string): Promise<Producer> {
      const p = kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
      await p.connect();
      return p;
    }

    it('read_committed drops interleaved aborted transactions of two producers; read_uncommitted keeps all data; control records never appear', async () => {
      const topic = uniqueName('rr-txn');
      await createTopic(topic);
      const [p1, p2] = await Promise.all([transactional(uniqueName('tx1')), transactional(uniqueName('tx2'))]);
      const committed: string[] = [];
      const all: string[] = [];
      const send = async (tx: { send: Producer['send'] }, values: string[], commits: boolean) => {
        await tx.send({ topic, messages: values.map((value) => ({ key: value, value })) });
        all.push(...values);
        if (commits) committed.push(...values);
      };
      try {
        await send(producer, ['plain-0'], true);
        // 1: p1 aborts while p2 commits, interleaved.
        let t1 = await p1.transaction();
        let t2 = await p2.transaction();
        await send(t1, ['a1-1', 'a1-2'], false);
        await send(t2, ['c2-1'], true);
        await send(t1, ['a1-3'], false);
        await send(t2, ['c2-2', 'c2-3'], true);
        await t1.abort();
        await t2.commit();
        // 2: both abort, interleaved, p2 started first but aborts last: the broker lists aborted
        // transactions in abort order, not by first offset (kafkajs's own filter then lets a2-4 through).
        t1 = await p1.transaction();
        t2 = await p2.transaction();
        await send(t2, ['a2-4'], false);
        await send(t1, ['a1-4'], false);
        await send(producer, ['plain-1'], true);
        await send(t2, ['a2-5', 'a2-6'], false);
        await send(t1, ['a1-5'], false);
        const beforeMarkers = await highWatermark(topic);
        await t1.abort();
        await waitForHighWatermark(topic, beforeMarkers + 1); // p1's marker first, deterministically
        await t2.abort();
        // 3: p1 commits around p2's abort.
        t1 = await p1.transaction();
        t2 = await p2.transaction();
        await send(t1, ['c1-6'], true);
        await send(t2, ['a2-7'], false);
        await send(t1, ['c1-7'], true);
        await t2.abort();
        await send(t1, ['c1-8'], true);
        await t1.commit();
        await send(producer, ['plain-2'], true);
      } finally {
        await Promise.all([p1.disconnect(), p2.disconnect()]);
      }

      // Data records plus one control record per transaction (6 transactions). EndTxn returns before
      // the coordinator has written the markers, so wait (bounded) for the high watermark and the LSO.
      const until = all.length + 6;
      await waitForHighWatermark(topic, until, true);
      for (const [maxFetchBytes, maxChunkRecords] of [
        [1 << 20, 500],
        [1, 2],
      ] as const) {
        const rc: ReadRequest = { topic, partition: 0, from: 0, until, isolationLevel: 'read_committed', maxFetchBytes, maxChunkRecords };
        const c = await readAll(reader, rc);
        expectWellFormed(rc, c.chunks);
        expect(c.records.map((r) => text(r.value))).toEqual(committed);
        const ru: ReadRequest = { ...rc, isolationLevel: 'read_uncommitted' };
        const u = await readAll(reader, ru);
        expectWellFormed(ru, u.chunks);
        expect(u.records.map((r) => text(r.value))).toEqual(all);
      }
      // kafkajs's own decoder and filter on the same data deliver aborted records (and control records).
      const leader = await leaderOf(topic);
      const viaKafkajs = (
        await cluster.fetchWithKafkajsDecoder(leader, {
          topic,
          partition: 0,
          fetchOffset: 0,
          isolationLevel: 1,
          maxWaitTimeMs: 10,
          minBytes: 1,
          maxBytes: 1 << 20,
        })
      ).responses[0]!.partitions[0]! as unknown as { messages: unknown[]; abortedTransactions: unknown[] };
      const kafkajsKept = (filterAbortedMessages(viaKafkajs) as Array<{ value: Buffer | null; isControlRecord: boolean }>)
        .filter((m) => !m.isControlRecord)
        .map((m) => text(m.value));
      expect(kafkajsKept).toContain('a2-4');

      // A range starting inside an aborted transaction (after its first offset) still drops it.
      const offsets = new Map(
        (await readAll(reader, { topic, partition: 0, from: 0, until, isolationLevel: 'read_uncommitted' })).records.map((r) => [
          text(r.value),
          r.offset,
        ]),
      );
      const from = offsets.get('a1-3')!;
      const inside = await readAll(reader, { topic, partition: 0, from, until, isolationLevel: 'read_committed', maxFetchBytes: 1 });
      expect(inside.records.map((r) => text(r.value))).toEqual(committed.filter((v) => offsets.get(v)! >= from));
    });

    it('read_committed waits at the last stable offset for an open transaction, without spinning', async () => {
      const topic = uniqueName('rr-lso');
      await createTopic(topic);
      await producer.send({ topic, messages: [{ value: 'before' }] });
      const p = await transactional(uniqueName('tx-open'));
      try {
        const tx = await p.transaction();
        await tx.send({ topic, messages: [{ value: 'pending-1' }, { value: 'pending-2' }] });
        const until = await highWatermark(topic);
        expect(until).toBe(3);

        // Abort while waiting: the iteration ends promptly, after handing over what was readable.
        const controller = new AbortController();
        const seen: RecordChunk[] = [];
        const fetchesBefore = reader.requestCount();
        const waiting = (async () => {
          for await (const chunk of reader.read({
            topic,
            partition: 0,
            from: 0,
            until,
            isolationLevel: 'read_committed',
            signal: controller.signal,
          })) {
            seen.push(chunk);
          }
        })();
        // What was readable is handed over first; from then on the read waits at the last stable offset.
        await waitFor('the record before the transaction to be handed over', () => seen.length > 0, { intervalMs: 10 });
        // The window the fetches are counted in: waiting out time is the point here (a spin shows as many fetches in it).
        await sleep(700);
        const fetchesWhileWaiting = reader.requestCount() - fetchesBefore;
        const fetchesAtAbort = reader.requestCount();
        controller.abort();
        // Ends on the abort (else this waits on the open transaction until the test times out), with no Fetch after it.
        await waiting;
        expect(reader.requestCount()).toBe(fetchesAtAbort);
        expect(seen.map((c) => c.records.map((r) => text(r.value)))).toEqual([['before']]);
        expect(seen[0]!.nextOffset).toBe(1);
        // Long-polled by the broker (maxWaitMs 500): a handful of fetches in 700 ms, not a spin.
        expect(fetchesWhileWaiting).toBeLessThanOrEqual(4);

        // A bounded stall ends in TimeoutError.
        const impatient = createKafkajsRangeReader(kafka, { stallTimeoutMs: 800, maxWaitMs: 200 });
        try {
          const t0 = Date.now();
          await expect(
            readAll(impatient, { topic, partition: 0, from: 1, until, isolationLevel: 'read_committed' }),
          ).rejects.toBeInstanceOf(TimeoutError);
          // It waited out the stall (the error is not an early give-up), long-polling, not spinning: ~800 ms / 200 ms polls.
          expect(Date.now() - t0).toBeGreaterThanOrEqual(800);
          expect(impatient.requestCount()).toBeLessThanOrEqual(8);
        } finally {
          await impatient.close();
        }

        // Committing while a read waits lets it complete.
        const fetchesBeforeRead = reader.requestCount();
        const reading = readAll(reader, { topic, partition: 0, from: 0, until, isolationLevel: 'read_committed' });
        // Its second fetch asks at the last stable offset (the first returned "before"): the read now waits.
        await waitFor('the read to wait at the last stable offset', () => reader.requestCount() - fetchesBeforeRead, {
          until: (n) => n >= 2,
          intervalMs: 10,
        });
        await tx.commit();
        const { records, chunks } = await reading;
        expect(records.map((r) => text(r.value))).toEqual(['before', 'pending-1', 'pending-2']);
        expect(chunks.at(-1)?.nextOffset).toBe(until);
      } finally {
        await p.disconnect();
      }
    });
  });

  it('throws OffsetOutOfRangeError with the log start offset once deleteRecords removed the offsets', async () => {
    const topic = uniqueName('rr-oor');
    await createTopic(topic);
    for (let i = 0; i < 10; i++) {
      await producer.send({ topic, messages: Array.from({ length: 10 }, (_, j) => ({ value: `v${i * 10 + j}` })) });
    }
    // Mid-range: the first chunk is read, then retention removes what comes next. Without prefetch,
    // so that the Fetch at 10 is sent after the deletion (a prefetch would have read 10-19 before).
    const notAhead = createKafkajsRangeReader(kafka, { prefetch: false });
    const chunks = notAhead.read({
      topic,
      partition: 0,
      from: 0,
      until: 100,
      isolationLevel: 'read_uncommitted',
      maxFetchBytes: 1,
      maxChunkRecords: 10,
    });
    const iterator = chunks[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect((first.value as RecordChunk).records.map((r) => r.offset)).toEqual(Array.from({ length: 10 }, (_, i) => i));

    await admin.fetchTopicMetadata({ topics: [topic] }); // kafkajs's deleteTopicRecords needs it cached
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '40' }] });

    const error = await iterator.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OffsetOutOfRangeError);
    expect(error).toMatchObject({ topic, partition: 0, fetchOffset: 10, logStartOffset: 40, retriable: false });
    expect((error as Error).message).toMatch(/log start offset to 40/);
    await notAhead.close();

    await expect(readAll(reader, { topic, partition: 0, from: 0, until: 100, isolationLevel: 'read_committed' })).rejects.toMatchObject({
      name: 'OffsetOutOfRangeError',
      logStartOffset: 40,
    });
    const rest = await readAll(reader, { topic, partition: 0, from: 40, until: 100, isolationLevel: 'read_committed' });
    expect(rest.records.map((r) => text(r.value))).toEqual(Array.from({ length: 60 }, (_, i) => `v${40 + i}`));
  });

  it('reads a topic the answering broker learns of a moment late: "not ready" within missingGraceMs, never "deleted"', async () => {
    // The planner saw the topic on one broker; the broker this processor asks has not applied that
    // metadata yet. With one broker, the same view: the read starts before the topic exists (no
    // cached leader), and the topic is created while the reader is retrying.
    const fresh = kafka.producer({ allowAutoTopicCreation: false });
    await fresh.connect();
    try {
      for (const lateMs of [0, 300, 1500]) {
        const topic = uniqueName('rr-young');
        const young = createKafkajsRangeReader(kafka);
        try {
          const read = readAll(young, { topic, partition: 1, from: 0, until: 2, isolationLevel: 'read_committed' });
          read.catch(() => undefined);
          // The delay is the case under test (created at once, while retrying, after several retries), not a stand-in for a condition.
          await sleep(lateMs);
          await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
          await fresh.send({
            topic,
            messages: [
              { value: 'a', partition: 1 },
              { value: 'b', partition: 1 },
            ],
          });
          expect((await read).records.map((r) => text(r.value))).toEqual(['a', 'b']);
        } finally {
          await young.close();
        }
      }
    } finally {
      await fresh.disconnect();
    }
  });

  it('throws PartitionNotFoundError for a missing topic or partition and never creates the topic', async () => {
    const missing = uniqueName('rr-missing');
    await expect(readAll(reader, { topic: missing, partition: 0, from: 0, until: 10, isolationLevel: 'read_committed' })).rejects.toThrow(
      new PartitionNotFoundError(`topic ${missing} does not exist (deleted, or never created)`, { topic: missing, partition: 0 }),
    );
    expect(await admin.listTopics()).not.toContain(missing);

    const topic = uniqueName('rr-parts');
    await createTopic(topic, [], 2);
    const error = await readAll(reader, { topic, partition: 2, from: 0, until: 10, isolationLevel: 'read_committed' }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PartitionNotFoundError);
    expect(error).toMatchObject({ topic, partition: 2, message: expect.stringMatching(/has 2 partitions/) });
  });

  it('throws PartitionNotFoundError when the topic is deleted between reads (leader cached)', async () => {
    const topic = uniqueName('rr-deleted');
    await createTopic(topic);
    await producer.send({ topic, messages: [{ value: 'x' }, { value: 'y' }] });
    expect((await readAll(reader, { topic, partition: 0, from: 0, until: 2, isolationLevel: 'read_committed' })).records).toHaveLength(2);
    await admin.deleteTopics({ topics: [topic] });
    const t0 = Date.now();
    await expect(readAll(reader, { topic, partition: 0, from: 0, until: 2, isolationLevel: 'read_committed' })).rejects.toBeInstanceOf(
      PartitionNotFoundError,
    );
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(await admin.listTopics()).not.toContain(topic);
  });
});
