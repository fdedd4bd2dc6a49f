/**
 * A whole continuous segment hand-over on the in-memory ledger and reader (lib/processor/segment.ts
 * through processRanges): records arrive while a segment runs; it invokes its successor before its
 * end and gives its ranges back as handed over; the successor waits for that release, takes every
 * range and reads on from where the predecessor committed, so no record is handled twice or skipped.
 * A duplicate invocation of the successor's payload takes nothing and does not wait.
 */
import { parseStreamConfig, type StreamConfig } from '../../../lib/config/schema';
import { createMemoryRangeReader } from '../../../lib/kafka/range-reader.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import type { LeaseOutcome } from '../../../lib/ports/ledger';
import type { SinkWrite } from '../../../lib/ports/sink-write';
import type { RecordsHandler } from '../../../lib/processor/handler-api';
import { processRanges, type ProcessorDeps, type ProcessResult } from '../../../lib/processor/process-range';
import { OPEN_UNTIL, rangesOfPayload, type RangePayload, type RangesPayload } from '../../../lib/ranges';

const S = 's';
const TOPIC = 't';
const PARTITIONS = [0, 1, 2];

/** Resolves once `check` holds (polled every 10 ms), or fails after `timeoutMs`. */
async function until(what: string, check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Registers the partitions at 0 and plans an open segment range `[0, OPEN_UNTIL)` on each. */
async function planOpenRanges(ledger: ReturnType<typeof createMemoryLedger>): Promise<RangePayload[]> {
  const lease = await ledger.acquirePlannerLease({ stream: S, ownerToken: 'p', nowMs: 0, leaseMs: 1 });
  if (!lease.acquired) throw new Error('planner lease');
  await ledger.applyPlan({
    stream: S,
    epoch: lease.epoch,
    ownerToken: 'p',
    writes: PARTITIONS.flatMap((partition) => {
      const tp = { stream: S, topic: TOPIC, partition };
      return [
        {
          kind: 'register-partition' as const,
          partition: { ...tp, status: 'active' as const, startOffset: 0, committed: 0, nextFrom: 0, firstSeenAtMs: 0 },
        },
        {
          kind: 'plan-range' as const,
          range: {
            ...tp,
            from: 0,
            until: OPEN_UNTIL,
            status: 'planned' as const,
            epoch: lease.epoch,
            plannedAtMs: 0,
            dispatches: 1,
            attempts: 0,
            progress: 0,
          },
        },
      ];
    }),
  });
  return PARTITIONS.map((partition) => ({ stream: S, topic: TOPIC, partition, from: 0, until: OPEN_UNTIL }));
}

/** What a handler mode records: per partition, the offsets applied (exactly once: committed sink writes; at least once: handled). */
type Mode = 'at-least-once' | 'dynamodb-exactly-once';

function rig(mode: Mode, limits: Record<string, unknown> = {}) {
  const stream: StreamConfig = parseStreamConfig(
    {
      id: S,
      kafka: { brokers: ['localhost:9092'] },
      topics: [TOPIC],
      handler: mode === 'at-least-once' ? { module: 'h.js', mode } : { module: 'h.js', mode, sinkTable: 'seen' },
      continuous: { segmentMs: 2_000, commitIntervalMs: 20, leaseMs: 2_000, handoverLeadMs: 600, partitionsPerSegment: 3 },
      ...limits,
    },
    'test',
  );
  const ledger = createMemoryLedger();
  const reader = createMemoryRangeReader();
  /** Offsets the at-least-once handler was given, per partition, in order. */
  const handled = new Map<number, number[]>(PARTITIONS.map((p) => [p, []]));
  const handler: RecordsHandler =
    mode === 'at-least-once'
      ? { mode, handle: (records) => void records.forEach((r) => handled.get(r.partition)!.push(r.offset)) }
      : {
          mode,
          handle: (records) =>
            records.map((r): SinkWrite => ({
              update: {
                table: 'seen',
                key: { pk: `${r.partition}/${r.offset}` },
                expression: 'ADD #n :one',
                names: { '#n': 'n' },
                values: { ':one': 1 },
              },
            })),
        };
  /** The offsets applied per partition, in order: handled (at least once), or committed to the sink (exactly once). */
  const applied = (): Map<number, number[]> => {
    if (mode === 'at-least-once') return handled;
    const out = new Map<number, number[]>(PARTITIONS.map((p) => [p, []]));
    for (const w of ledger.store(S).sinkWrites) {
      if (!('update' in w)) continue;
      const [p, o] = String(w.update.key.pk).split('/').map(Number) as [number, number];
      out.get(p)!.push(o);
    }
    return out;
  };

  /** Every lease take and release, in the order the ledger saw them. */
  const events: Array<{ at: number; token: string; partition: number; what: 'take' | 'release'; outcome: string }> = [];
  const take = ledger.takeRangeLease.bind(ledger);
  ledger.takeRangeLease = async (input) => {
    const o: LeaseOutcome = await take(input);
    events.push({ at: Date.now(), token: input.leaseToken, partition: input.partition, what: 'take', outcome: o.kind });
    return o;
  };
  const release = ledger.releaseRange.bind(ledger);
  ledger.releaseRange = async (input) => {
    const o = await release(input);
    events.push({ at: Date.now(), token: input.range.leaseToken, partition: input.range.partition, what: 'release', outcome: o });
    return o;
  };

  /** The invocations: each segment's results, and when it was invoked. */
  const invocations: Array<{ token: string; invokedAt: number; payload: RangePayload[]; done: Promise<ProcessResult[]> }> = [];
  let n = 0;
  const abort = new AbortController();
  const invoke = (payload: RangePayload[], opts: { successors: number }): Promise<ProcessResult[]> => {
    const token = `seg-${++n}`;
    const deps: ProcessorDeps = {
      ledger,
      readerFor: async () => reader,
      handlerFor: () => handler,
      leaseToken: token,
      // The successor is invoked in the background, as Lambda's asynchronous invocation would run it.
      ...(opts.successors > 0
        ? {
            handOver: async (successor: RangesPayload) => {
              invoke(rangesOfPayload(successor), { successors: opts.successors - 1 });
              return true;
            },
          }
        : {}),
    };
    const done = processRanges(deps, { stream, ranges: payload, deadlineAtMs: Date.now() + 60_000, signal: abort.signal });
    invocations.push({ token, invokedAt: Date.now(), payload, done });
    return done;
  };
  return { stream, ledger, reader, applied, events, invocations, invoke, abort };
}

describe('continuous segment hand-over (in memory)', () => {
  it.each<Mode>(['at-least-once', 'dynamodb-exactly-once'])(
    '%s: the successor takes every range once released, and every record is applied once, in order',
    async (mode) => {
      const t = rig(mode);
      const payload = await planOpenRanges(t.ledger);
      const produced = new Map<number, number>(PARTITIONS.map((p) => [p, 0]));
      const append = () => {
        for (const p of PARTITIONS) {
          t.reader.append(TOPIC, p, [{ value: `v${produced.get(p)}` }]);
          produced.set(p, produced.get(p)! + 1);
        }
      };
      const startedAt = Date.now();
      const first = t.invoke(payload, { successors: 1 });
      // Records arrive all through the first segment and on into its successor's.
      let appending = true;
      const producing = (async () => {
        while (appending) {
          append();
          await new Promise((r) => setTimeout(r, 40));
        }
      })();
      try {
        const predecessor = await first;
        // It ends after its segmentMs (2 s), its last commits and releases within the end margin.
        expect(Date.now() - startedAt).toBeLessThan(2_000 + 1_500);
        expect(predecessor.map((r) => [r.range.partition, r.status])).toEqual(PARTITIONS.map((p) => [p, 'handed-over']));
        expect(t.invocations).toHaveLength(2);
        const successor = t.invocations[1]!;
        expect(successor.payload.map((r) => [r.partition, r.handover?.from])).toEqual(PARTITIONS.map((p) => [p, 'seg-1']));

        await new Promise((r) => setTimeout(r, 300));
        appending = false;
        await producing;
        // The successor reads on to the end of what arrived, and commits it.
        await until('the successor to commit every record', () =>
          PARTITIONS.every((p) => t.ledger.store(S).partitions.get(`${TOPIC}/${p}`)?.committed === produced.get(p)),
        );
        for (const p of PARTITIONS) {
          expect(t.applied().get(p)).toEqual(Array.from({ length: produced.get(p)! }, (_, i) => i));
        }
        // Both segments did some of it: the hand-over happened under load.
        for (const p of PARTITIONS) {
          const handedAt = predecessor[p]!.progress;
          expect(handedAt).toBeGreaterThan(0);
          expect(handedAt).toBeLessThan(produced.get(p)!);
        }

        // The successor waited for the release: invoked before it, it took no lease before it was given back.
        const releasedAt = new Map<number, number>();
        for (const p of PARTITIONS) {
          const byP = t.events.filter((e) => e.partition === p);
          const rel = byP.findIndex((e) => e.what === 'release' && e.token === 'seg-1');
          expect(byP[rel]).toMatchObject({ outcome: 'applied' });
          const taken = byP.findIndex((e) => e.what === 'take' && e.token === 'seg-2' && e.outcome === 'taken');
          expect(taken).toBeGreaterThan(rel);
          // Never two holders: nothing of the successor's was taken before the release, nor refused other than as held.
          expect(
            byP
              .slice(0, rel)
              .filter((e) => e.token === 'seg-2')
              .every((e) => e.outcome === 'held'),
          ).toBe(true);
          releasedAt.set(p, byP[rel]!.at);
        }
        expect(successor.invokedAt).toBeLessThan(Math.min(...releasedAt.values()));
        for (const p of PARTITIONS) expect(t.ledger.store(S).ranges.get(`${TOPIC}/${p}/0`)).toMatchObject({ leaseToken: 'seg-2' });

        // A duplicate delivery of the successor's invocation: held elsewhere at once, not waited for.
        const dupStart = Date.now();
        const dup = await t.invoke(successor.payload, { successors: 0 });
        expect(dup.map((r) => r.status)).toEqual(PARTITIONS.map(() => 'held-elsewhere'));
        // Waiting would last until the successor's lease and the clock slack had passed (3 s).
        expect(Date.now() - dupStart).toBeLessThan(1_000);
        for (const p of PARTITIONS) expect(t.ledger.store(S).ranges.get(`${TOPIC}/${p}/0`)).toMatchObject({ leaseToken: 'seg-2' });
      } finally {
        appending = false;
        await producing;
        t.abort.abort();
        await Promise.allSettled(t.invocations.map((i) => i.done));
      }
      // Ended early (aborted, no successor): the successor's ranges are given back as they stand, nothing applied twice.
      const last = await t.invocations[1]!.done;
      expect(last.map((r) => r.status)).toEqual(PARTITIONS.map(() => 'partial'));
      for (const p of PARTITIONS) expect(t.applied().get(p)).toEqual(Array.from({ length: produced.get(p)! }, (_, i) => i));
    },
    10_000,
  );
});

describe('a segment invoked after its runtime stopped', () => {
  it('ends at once and holds nothing (its signal had aborted before it began)', async () => {
    const t = rig('at-least-once');
    const payload = await planOpenRanges(t.ledger);
    for (const p of PARTITIONS) t.reader.append(TOPIC, p, [{ value: 'v0' }]);
    t.abort.abort();
    const startedAt = Date.now();
    const results = await t.invoke(payload, { successors: 1 });
    // Its segment is 2 s long: ending within a fraction of it means it never ran.
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    expect(t.invocations).toHaveLength(1);
    expect(results.every((r) => r.status !== 'handed-over')).toBe(true);
    for (const p of PARTITIONS) expect(t.ledger.store(S).ranges.get(`${TOPIC}/${p}/0`)?.status).not.toBe('leased');
  });
});

describe("an idle partition's segments", () => {
  it('never use up its attempts: a segment that ends without records or a successor is not a failed attempt', async () => {
    const t = rig('at-least-once', { maxAttempts: 1 });
    const payload = await planOpenRanges(t.ledger);
    // The partitions exist and stay empty.
    for (const p of PARTITIONS) t.reader.append(TOPIC, p, []);
    for (let i = 1; i <= 2; i++) {
      const results = await t.invoke(payload, { successors: 0 });
      expect(results.map((r) => r.status)).toEqual(PARTITIONS.map(() => 'partial'));
      for (const p of PARTITIONS) expect(t.ledger.store(S).ranges.get(`${TOPIC}/${p}/0`)).toMatchObject({ status: 'planned', attempts: 0 });
    }
  }, 10_000);
});

describe('continuous segment rate limits (in memory)', () => {
  /** Runs one 2 s segment (no successor) over a backlog of 1,000 records a partition; records applied per partition and the wall time. */
  async function segmentOver(limits: Record<string, unknown>, payloadFields: Partial<RangePayload>) {
    const t = rig('at-least-once', limits);
    const payload = (await planOpenRanges(t.ledger)).map((r) => ({ ...r, ...payloadFields }));
    for (const p of PARTITIONS)
      t.reader.append(
        TOPIC,
        p,
        Array.from({ length: 1_000 }, (_, i) => ({ value: `v${i}` })),
      );
    const startedAt = Date.now();
    const results = await t.invoke(payload, { successors: 0 });
    const seconds = (Date.now() - startedAt) / 1000;
    expect(results.map((r) => r.status)).toEqual(PARTITIONS.map(() => 'partial'));
    return { applied: PARTITIONS.map((p) => t.applied().get(p)!.length), seconds, results };
  }

  it('maxOffsetsPerTrigger is a stream rate over the trigger interval, shared equally by the partitions the planner counted', async () => {
    // 60 records a 1 s interval over 3 partitions: 20 records/s each, read in chunks of what one 20 ms commit interval allows.
    const { applied, seconds, results } = await segmentOver(
      { maxOffsetsPerTrigger: 60, triggerIntervalMs: 1_000 },
      { streamPartitions: 3 },
    );
    for (const n of applied) {
      expect(n).toBeLessThanOrEqual(Math.ceil(20 * seconds) + 1);
      expect(n).toBeGreaterThanOrEqual(20);
    }
    // Committed as read: the partition's progress is what was applied, the rest of the backlog left for the successor.
    expect(results.map((r) => r.progress)).toEqual(applied);
  });

  it("maxRatePerPartition caps the share, and a payload without the planner's count reads as the only partition", async () => {
    const capped = await segmentOver(
      { maxOffsetsPerTrigger: 600, triggerIntervalMs: 1_000, maxRatePerPartition: 15 },
      { streamPartitions: 3 },
    );
    for (const n of capped.applied) expect(n).toBeLessThanOrEqual(Math.ceil(15 * capped.seconds) + 1);
    const alone = await segmentOver({ maxOffsetsPerTrigger: 60, triggerIntervalMs: 1_000 }, {});
    // Each partition may read the whole stream rate: more than a third of it, never more than all of it.
    for (const n of alone.applied) {
      expect(n).toBeGreaterThan(Math.ceil(20 * alone.seconds) + 1);
      expect(n).toBeLessThanOrEqual(Math.ceil(60 * alone.seconds) + 1);
    }
  });

  it('the rate holds across a hand-over: the successor, invoked ahead of it, does not count its wait as reading time', async () => {
    const t = rig('at-least-once', { maxOffsetsPerTrigger: 60, triggerIntervalMs: 1_000 });
    const payload = (await planOpenRanges(t.ledger)).map((r) => ({ ...r, streamPartitions: 3 }));
    for (const p of PARTITIONS)
      t.reader.append(
        TOPIC,
        p,
        Array.from({ length: 1_000 }, (_, i) => ({ value: `v${i}` })),
      );
    const startedAt = Date.now();
    await t.invoke(payload, { successors: 1 });
    expect(t.invocations).toHaveLength(2);
    await t.invocations[1]!.done;
    const seconds = (Date.now() - startedAt) / 1000;
    // Two segments of 2 s (the successor invoked 0.6 s before the hand-over): at 20 records/s, about 80 a partition.
    for (const p of PARTITIONS) expect(t.applied().get(p)!.length).toBeLessThanOrEqual(Math.ceil(20 * seconds) + 2);
  });

  it("a successor's share follows partitions added meanwhile: the hand-over counts the ledger's active partitions", async () => {
    const t = rig('at-least-once', { maxOffsetsPerTrigger: 60, triggerIntervalMs: 1_000 });
    const payload = (await planOpenRanges(t.ledger)).map((r) => ({ ...r, streamPartitions: 3 }));
    for (const p of PARTITIONS) t.reader.append(TOPIC, p, []);
    const first = t.invoke(payload, { successors: 1 });
    // The planner registers a fourth partition while the segment runs (and a retired one does not count).
    const lease = await t.ledger.acquirePlannerLease({ stream: S, ownerToken: 'p2', nowMs: 10, leaseMs: 1 });
    if (!lease.acquired) throw new Error('planner lease');
    const partition = (n: number, status: 'active' | 'retired') =>
      ({ stream: S, topic: TOPIC, partition: n, status, startOffset: 0, committed: 0, nextFrom: 0, firstSeenAtMs: 0 }) as const;
    await t.ledger.applyPlan({
      stream: S,
      epoch: lease.epoch,
      ownerToken: 'p2',
      writes: [
        { kind: 'register-partition', partition: partition(3, 'active') },
        { kind: 'register-partition', partition: partition(4, 'retired') },
      ],
    });
    try {
      await first;
      expect(t.invocations).toHaveLength(2);
      expect(t.invocations[1]!.payload.map((r) => r.streamPartitions)).toEqual([4, 4, 4]);
    } finally {
      t.abort.abort();
      await Promise.allSettled(t.invocations.map((i) => i.done));
    }
  });

  it('without rate limits a segment reads its whole backlog', async () => {
    const { applied } = await segmentOver({}, { streamPartitions: 3 });
    expect(applied).toEqual(PARTITIONS.map(() => 1_000));
  });
});
