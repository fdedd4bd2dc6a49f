/**
 * Continuous mode on the real broker and the emulator: the planner plans each partition's open
 * segment range, resident segments read records as they arrive and commit them exactly once into
 * a running-totals sink table, and hand over to the successors they invoke. Segments are short here
 * (4 s) so that each partition hands over several times under load.
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { parseStreamConfig, type StreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createInProcessDispatcher } from '../../lib/dispatch/dispatcher.local';
import { runningTotals } from '../../lib/handlers/running-totals';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import type { Ledger } from '../../lib/ports/ledger';
import { planStream } from '../../lib/planner/run';
import { processRanges, type ProcessorDeps, type ProcessResult } from '../../lib/processor/process-range';
import { isOpenRange, rangesOfPayload, type RangePayload, type RangesPayload } from '../../lib/ranges';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createSinkTable, createTopicsReady, uniqueName } from '../support/env';
import { processorTestBed } from '../support/processor-bed';
import { waitFor } from '../support/wait-for';
import { createOpsContext } from '../../lib/ops/context';
import { rewindStream } from '../../lib/ops/rewind';
import { renderStatus, streamStatus } from '../../lib/ops/status';
import { parseDeploymentConfig } from '../../lib/config/schema';

const bed = processorTestBed('continuous');
const { ddb, kafka, admin, producer, ledger } = bed;
const metadata = createMetadataCache();
afterAll(() => metadata.closeAll());

type Totals = Record<string, { total: number; count: number }>;

async function totalsIn(table: string): Promise<Totals> {
  const res = await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true }));
  return Object.fromEntries(
    (res.Items ?? []).map((i) => unmarshall(i)).map((i) => [i.pk as string, { total: i.total as number, count: i.count as number }]),
  );
}

function expectedTotals(values: ReadonlyArray<{ key: string; amount: number }>): Totals {
  const out: Totals = {};
  for (const v of values) {
    const e = (out[v.key] ??= { total: 0, count: 0 });
    e.total += v.amount;
    e.count += 1;
  }
  return out;
}

/** A continuous stream, its planner, and its segments run in this process as the local runtime runs them. */
async function continuousStream(partitions: number, over: Partial<StreamConfigInput> = {}, ledgerFor?: (n: number) => Ledger) {
  const id = uniqueName('c');
  const topic = `${id}-events`;
  const table = await createSinkTable(ddb, 'ctotals');
  await createTopicsReady(admin, [{ topic, numPartitions: partitions }]);
  const streamInput: StreamConfigInput = {
    id,
    kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
    topics: [topic],
    triggerIntervalMs: 1000,
    handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: table },
    continuous: { segmentMs: 4_000, commitIntervalMs: 50, leaseMs: 3_000, handoverLeadMs: 1_000 },
    ...over,
  };
  // Replaced by `reconfigure` (a redeploy): later invocations and planner runs read the new one.
  let stream: StreamConfig = parseStreamConfig(streamInput, 'test');
  const results: Array<ProcessResult & { invocation: number }> = [];
  const abort = new AbortController();
  const readers: Array<ReturnType<typeof createKafkajsRangeReader>> = [];
  let invocations = 0;
  const invoke = async (payload: RangePayload | RangesPayload): Promise<void> => {
    const n = ++invocations;
    const deps: ProcessorDeps = {
      ledger: ledgerFor?.(n) ?? ledger,
      readerFor: async () => bed.reader,
      createReader: async () => {
        const r = createKafkajsRangeReader(kafka);
        readers.push(r);
        return r;
      },
      handlerFor: () => runningTotals,
      handOver: async (successor) => {
        const ranges = rangesOfPayload(successor);
        return (await dispatcher.dispatch(ranges, { invocations: [ranges.map((_, i) => i)] })).every((r) => r.ok);
      },
    };
    const out = await processRanges(deps, {
      stream,
      ranges: rangesOfPayload(payload),
      deadlineAtMs: Date.now() + 60_000,
      signal: abort.signal,
    });
    results.push(...out.map((r) => ({ ...r, invocation: n })));
  };
  const dispatcher = createInProcessDispatcher(invoke, () => undefined, { maxConcurrency: 32 });
  const plan = () =>
    planStream({ ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 30_000 }, stream, {
      dryRun: false,
      nowMs: Date.now(),
    });
  let ticking = true;
  const ticks = (async () => {
    while (ticking) {
      await plan().catch(() => undefined);
      await new Promise((r) => setTimeout(r, stream.triggerIntervalMs));
    }
  })();
  const stop = async () => {
    ticking = false;
    await ticks;
    abort.abort();
    // A killed segment's invocation ends only once its test buries it (its ledger never answers before): not waited for long.
    await Promise.race([dispatcher.idle(), new Promise((r) => setTimeout(r, 10_000).unref())]);
    await Promise.allSettled(readers.map((r) => r.close()));
  };
  const reconfigure = (change: Partial<StreamConfigInput>) => void (stream = parseStreamConfig({ ...streamInput, ...change }, 'test'));
  return { id, topic, table, stream, input: streamInput, results, stop, dispatcher, invocations: () => invocations, reconfigure };
}

let produced = 0;
/** Records produced to each partition of each topic: where the partition's log ends. */
const ends = new Map<string, number[]>();
async function produce(topic: string, n: number, partitions: number, via = producer): Promise<Array<{ key: string; amount: number }>> {
  const values = Array.from({ length: n }, (_, i) => ({
    key: `acct-${(produced + i) % 11}`,
    amount: produced + i + 1,
    partition: i % partitions,
  }));
  produced += n;
  const end = ends.get(topic) ?? [];
  for (const v of values) end[v.partition] = (end[v.partition] ?? 0) + 1;
  ends.set(topic, end);
  await via.send({
    topic,
    messages: values.map((v) => ({ key: v.key, value: JSON.stringify({ amount: v.amount }), partition: v.partition })),
  });
  return values;
}

/** Produces `perBurst` records every 100 ms for `ms`. */
async function produceFor(topic: string, ms: number, perBurst: number, partitions: number, via = producer) {
  const values: Array<{ key: string; amount: number }> = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    values.push(...(await produce(topic, perBurst, partitions, via)));
    await new Promise((r) => setTimeout(r, 100));
  }
  return values;
}

/** Waits until every partition's committed offset (the ledger's) reaches the end of what was produced to it. */
async function committedToEnd(id: string, topic: string) {
  const end = ends.get(topic) ?? [];
  await waitFor(`${id} to commit to the end of ${topic}`, async () => ledger.readPartitions(id), {
    until: (ps) => end.every((n, partition) => ps.find((p) => p.partition === partition)?.committed === n),
    timeoutMs: 30_000,
    intervalMs: 200,
  });
}

describe('continuous mode on the real broker and emulator', () => {
  it('hands segments over under load, several times per partition, and the exactly-once sink is exact', async () => {
    const s = await continuousStream(3);
    try {
      const values = await produceFor(s.topic, 11_000, 30, 3);
      await committedToEnd(s.id, s.topic);
      expect(await totalsIn(s.table)).toEqual(expectedTotals(values));
      const open = (await ledger.readOpenRanges(s.id)).filter(isOpenRange);
      expect(open).toHaveLength(3);
      const handedOver = s.results.filter((r) => r.status === 'handed-over');
      for (const p of [0, 1, 2]) expect(handedOver.filter((r) => r.range.partition === p).length).toBeGreaterThanOrEqual(2);
    } finally {
      await s.stop();
    }
  }, 90_000);

  it('a duplicate segment invocation takes nothing: one holder, the sink exact', async () => {
    const s = await continuousStream(2, { continuous: { segmentMs: 6_000, commitIntervalMs: 50, leaseMs: 3_000, handoverLeadMs: 1_000 } });
    try {
      await waitFor('the segments to run', async () => ledger.readOpenRanges(s.id), {
        until: (rs) => rs.length === 2 && rs.every((r) => r.status === 'leased'),
        timeoutMs: 15_000,
        intervalMs: 100,
      });
      const held = await ledger.readOpenRanges(s.id);
      // The same segment again, as a duplicate delivery of its invocation would bring it.
      await s.dispatcher.dispatch(
        held.map((r) => ({
          stream: s.id,
          topic: r.topic,
          partition: r.partition,
          from: r.from,
          until: r.until,
          ...(r.shard ? { shard: r.shard } : {}),
        })),
        { invocations: [[0, 1]] },
      );
      const values = await produceFor(s.topic, 3_000, 20, 2);
      await committedToEnd(s.id, s.topic);
      expect(await totalsIn(s.table)).toEqual(expectedTotals(values));
      expect(s.results.filter((r) => r.status === 'held-elsewhere').length).toBeGreaterThanOrEqual(2);
    } finally {
      await s.stop();
    }
  }, 60_000);

  it('a segment killed mid-batch is replaced within its lease, and nothing is applied twice', async () => {
    let killed: (() => void) | undefined;
    let buried: (() => void) | undefined;
    const killedAt: number[] = [];
    /** The first invocation's ledger: after kill(), nothing it sends arrives and it never hears back (a process gone). */
    const ledgerFor = (n: number): Ledger => {
      if (n !== 1) return ledger;
      let dead = false;
      killed = () => {
        dead = true;
        killedAt.push(Date.now());
      };
      // Once the test is over, the calls left unanswered fail, so that the dead invocation unwinds and stops its timers.
      const unanswered: Array<(err: Error) => void> = [];
      let gone = false;
      buried = () => {
        gone = true;
        unanswered.splice(0).forEach((fail) => fail(new Error('the killed segment was buried')));
      };
      return new Proxy(ledger, {
        get(target, prop, receiver) {
          const v: unknown = Reflect.get(target, prop, receiver);
          if (typeof v !== 'function') return v;
          return (...args: unknown[]) =>
            gone
              ? Promise.reject(new Error('the killed segment was buried'))
              : dead
                ? new Promise((_, reject) => unanswered.push(reject))
                : (v as (...a: unknown[]) => unknown).apply(target, args);
        },
      });
    };
    const s = await continuousStream(
      2,
      { continuous: { segmentMs: 30_000, commitIntervalMs: 50, leaseMs: 3_000, handoverLeadMs: 1_000 } },
      ledgerFor,
    );
    try {
      const first = await produceFor(s.topic, 1_500, 20, 2);
      const deadToken = (await ledger.readOpenRanges(s.id))[0]?.leaseToken;
      expect(deadToken).toBeDefined();
      killed!();
      const producing = produceFor(s.topic, 2_000, 20, 2);
      // Another holder takes every range once the dead one's lease (3 s) ran out and a planner tick sent them again.
      await waitFor('a new holder of both ranges', async () => ledger.readOpenRanges(s.id), {
        until: (rs) => rs.length === 2 && rs.every((r) => r.status === 'leased' && r.leaseToken !== deadToken),
        timeoutMs: 20_000,
        intervalMs: 100,
      });
      const replacedMs = Date.now() - (killedAt[0] as number);
      const second = await producing;
      await committedToEnd(s.id, s.topic);
      expect(await totalsIn(s.table)).toEqual(expectedTotals([...first, ...second]));
      expect(s.invocations()).toBeGreaterThanOrEqual(2);
      // The lease (3 s), the planner's next tick (1 s) and the new segment's start, with room for a loaded machine.
      expect(replacedMs).toBeLessThan(10_000);
    } finally {
      buried?.();
      await s.stop();
    }
  }, 60_000);

  it('a partition added mid-run gets a segment within a planner tick or two', async () => {
    const s = await continuousStream(2);
    try {
      const before = await produceFor(s.topic, 1_000, 10, 2);
      await admin.createPartitions({ topicPartitions: [{ topic: s.topic, count: 3 }] });
      const addedAt = Date.now();
      const leased = await waitFor('a segment for the new partition', async () => ledger.readOpenRanges(s.id), {
        until: (rs) => rs.some((r) => r.partition === 2 && r.status === 'leased'),
        timeoutMs: 20_000,
        intervalMs: 100,
      });
      expect(leased.find((r) => r.partition === 2)).toMatchObject({ from: 0 });
      // kafkajs's producer drops records for a partition its metadata does not know yet: a new one asks afresh.
      const fresh = kafka.producer();
      await fresh.connect();
      const values = await produceFor(s.topic, 1_500, 30, 3, fresh).finally(() => fresh.disconnect());
      await committedToEnd(s.id, s.topic);
      expect(await totalsIn(s.table)).toEqual(expectedTotals([...before, ...values]));
      expect(Date.now() - addedAt).toBeLessThan(30_000);
      // The old partitions' successors count the added one for their share of the stream's rate.
      await waitFor('a successor of partition 0 to count 3 partitions', async () => s.results.filter((r) => r.range.partition === 0), {
        until: (rs) => rs.some((r) => r.range.streamPartitions === 3),
        timeoutMs: 15_000,
        intervalMs: 100,
      });
    } finally {
      await s.stop();
    }
  }, 60_000);

  it('maxOffsetsPerTrigger paces the segments as a stream rate, across hand-overs, and the backlog still drains exactly', async () => {
    // 600 records waiting on 2 partitions; 100 records a 1 s trigger interval: 50 records/s a partition.
    const s = await continuousStream(2, { maxOffsetsPerTrigger: 100 });
    // Its planner has just begun: no segment has read anything yet.
    const startedAt = Date.now();
    const values = await produce(s.topic, 600, 2);
    const samples: Array<{ atMs: number; committed: number }> = [];
    try {
      await waitFor(`${s.id} to commit the backlog`, async () => ledger.readPartitions(s.id), {
        until: (ps) => {
          const committed = ps.reduce((n, p) => n + p.committed, 0);
          samples.push({ atMs: Date.now() - startedAt, committed });
          return ps.length === 2 && committed === 600;
        },
        timeoutMs: 30_000,
        intervalMs: 100,
      });
      expect(await totalsIn(s.table)).toEqual(expectedTotals(values));
    } finally {
      await s.stop();
    }
    // Never ahead of the stream rate since the stream started (a paced chunk of 5 a partition of slack);
    // without the limit the backlog is committed within the first segment's first second.
    for (const { atMs, committed } of samples) expect(committed).toBeLessThanOrEqual(Math.ceil((100 * atMs) / 1000) + 10);
    expect(samples.at(-1)!.atMs).toBeGreaterThan(5_000);
    // Handed over on the way: the rate held across segments (4 s each).
    expect(new Set(s.results.filter((r) => r.status === 'handed-over').map((r) => r.range.partition))).toEqual(new Set([0, 1]));
  }, 60_000);

  it('switched back to micro-batches: the planner ends the running segments, micro-batches go on from their progress, the sink exact', async () => {
    const s = await continuousStream(2, { continuous: { segmentMs: 30_000, commitIntervalMs: 50, leaseMs: 3_000, handoverLeadMs: 1_000 } });
    try {
      const first = await produceFor(s.topic, 1_500, 20, 2);
      await committedToEnd(s.id, s.topic);
      expect((await ledger.readOpenRanges(s.id)).map((r) => [isOpenRange(r), r.status])).toEqual([
        [true, 'leased'],
        [true, 'leased'],
      ]);
      s.reconfigure({ continuous: undefined, maxOffsetsPerTrigger: 30 });
      await waitFor('the planner to end the open ranges', async () => ledger.readOpenRanges(s.id), {
        until: (open) => !open.some(isOpenRange),
        timeoutMs: 10_000,
        intervalMs: 100,
      });
      const cursors = await ledger.readPartitions(s.id);
      expect(cursors.map((p) => p.nextFrom)).toEqual(ends.get(s.topic));
      const second = await produce(s.topic, 120, 2);
      await committedToEnd(s.id, s.topic);
      expect(await totalsIn(s.table)).toEqual(expectedTotals([...first, ...second]));
      // In micro-batches of at most maxOffsetsPerTrigger, from where the segments ended; the segments were fenced.
      const batches = s.results.filter((r) => r.status === 'done' && !isOpenRange(r.range));
      expect(batches.length).toBeGreaterThanOrEqual(4);
      expect(batches.every((r) => r.range.until - r.range.from <= 30)).toBe(true);
      expect(Math.min(...batches.filter((r) => r.range.partition === 0).map((r) => r.range.from))).toBe(ends.get(s.topic)![0]! - 60);
      await waitFor('the old segments to stop', async () => s.results.filter((r) => r.status === 'lease-lost' && r.invocation === 1), {
        until: (lost) => lost.length === 2,
        timeoutMs: 10_000,
        intervalMs: 100,
      });
    } finally {
      await s.stop();
    }
  }, 60_000);

  it('an operator rewind ends the running segments and the stream reads again from the new cursor, each record applied once more', async () => {
    const s = await continuousStream(2, { continuous: { segmentMs: 30_000, commitIntervalMs: 50, leaseMs: 3_000, handoverLeadMs: 1_000 } });
    const ctx = createOpsContext(parseDeploymentConfig({ ledgerTable: bed.ledgerTable, streams: [s.input] }, 'test'), process.env);
    try {
      const values = await produceFor(s.topic, 1_500, 20, 2);
      await committedToEnd(s.id, s.topic);
      const once = expectedTotals(values);
      expect(await totalsIn(s.table)).toEqual(once);
      // Segments hold both partitions, leased: micro-batch rewinds would be refused here.
      expect((await ledger.readOpenRanges(s.id)).every((r) => isOpenRange(r) && r.status === 'leased')).toBe(true);
      // status names each segment's holder and its last commit.
      const status = await streamStatus(ctx, s.stream, Date.now());
      const holders = new Map((await ledger.readOpenRanges(s.id)).map((r) => [r.partition, r.leaseToken]));
      for (const row of status.partitions) {
        expect(row.segment).toMatchObject({ holder: holders.get(row.partition), status: 'leased', committed: row.committed });
        expect(row.segment?.lastCommitAtMs).toBeGreaterThan(Date.now() - 10_000);
        expect(row.openRanges).toEqual([expect.objectContaining({ open: true, status: 'leased' })]);
      }
      expect(renderStatus(status)).toMatch(/segments \(continuous\): 2 of 2 held\n.*\/0: held by \S+ \(lease for/);
      const out = await rewindStream(ctx, {
        stream: s.stream,
        target: { kind: 'earliest' },
        dryRun: false,
        who: 'test',
        nowMs: Date.now(),
      });
      expect(out.partitions.map((r) => r.to)).toEqual([0, 0]);
      expect(out.removedRanges).toBe(2);
      await committedToEnd(s.id, s.topic);
      const twice = Object.fromEntries(Object.entries(once).map(([k, v]) => [k, { total: v.total * 2, count: v.count * 2 }]));
      expect(await totalsIn(s.table)).toEqual(twice);
      // The segment that held the old ranges stopped at its next write (a heartbeat at the latest): the ranges were gone.
      await waitFor('the old segment to stop', async () => s.results.filter((r) => r.status === 'lease-lost' && r.invocation === 1), {
        until: (lost) => lost.length === 2,
        timeoutMs: 10_000,
        intervalMs: 100,
      });
    } finally {
      await s.stop();
      await ctx.close();
    }
  }, 60_000);
});
