/**
 * The Ledger contract: conditional semantics every adapter must have. Run against the in-memory
 * fake (unit) and the DynamoDB adapter on the emulator (integration).
 */
import { ValidationError } from '../../lib/errors';
import { CommitTooLargeError, fitsOneCommit } from '../../lib/ports/commit-limits';
import { DELIVERY_GRACE_MS, type Ledger, type PlanWrite } from '../../lib/ports/ledger';
import { type ClosedIncarnation, type DestinationKind, type PartitionState, type RangeState } from '../../lib/ports/ledger-state';
import { type SinkWrite } from '../../lib/ports/sink-write';
import { OPEN_UNTIL } from '../../lib/ranges';

export type LedgerFactory = () => Promise<Ledger>;

export const partitionFixture = (stream: string, topic: string, partition: number, at = 0): PartitionState => ({
  stream,
  topic,
  partition,
  status: 'active',
  startOffset: at,
  committed: at,
  nextFrom: at,
  firstSeenAtMs: 1000,
});

export const rangeFixture = (stream: string, topic: string, partition: number, from: number, until: number, epoch: number): RangeState => ({
  stream,
  topic,
  partition,
  from,
  until,
  status: 'planned',
  epoch,
  plannedAtMs: 2000,
  dispatches: 0,
  attempts: 0,
  progress: from,
});

/** Defines the contract's tests for one adapter. */
export function ledgerContract(makeLedger: LedgerFactory, opts: { sinkTable?: () => Promise<string> } = {}): void {
  let ledger: Ledger;
  let n = 0;
  const streamName = () => `s${Date.now().toString(36)}${n++}`;
  /** Takes a planner lease for `stream` (owner 'o') and returns the fenced write context. */
  const plannerContext = async (stream: string) => {
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    return { lease, ctx: { stream, epoch: lease.epoch, ownerToken: 'o' } };
  };
  beforeEach(async () => {
    ledger = await makeLedger();
  });

  it('grants the planner lease to one owner at a time and fences the old epoch', async () => {
    const stream = streamName();
    const a = await ledger.acquirePlannerLease({ stream, ownerToken: 'a', nowMs: 10_000, leaseMs: 5000 });
    expect(a).toMatchObject({ acquired: true, epoch: 1 });
    const b = await ledger.acquirePlannerLease({ stream, ownerToken: 'b', nowMs: 11_000, leaseMs: 5000 });
    expect(b).toEqual({ acquired: false, holder: 'a', leaseExpiresAtMs: 15_000 });

    const later = await ledger.acquirePlannerLease({ stream, ownerToken: 'b', nowMs: 16_000, leaseMs: 5000 });
    expect(later).toMatchObject({ acquired: true, epoch: 2 });
    const stale = await ledger.applyPlan({
      stream,
      epoch: 1,
      ownerToken: 'a',
      writes: [{ kind: 'register-partition', partition: partitionFixture(stream, 't', 0) }],
    });
    expect(stale).toEqual(['fenced']);
    expect(await ledger.readPartitions(stream)).toEqual([]);
    expect(await ledger.releasePlannerLease({ stream, epoch: 1, ownerToken: 'a' })).toBe('fenced');
    expect(await ledger.releasePlannerLease({ stream, epoch: 2, ownerToken: 'b' })).toBe('applied');
    const c = await ledger.acquirePlannerLease({ stream, ownerToken: 'c', nowMs: 16_500, leaseMs: 5000 });
    expect(c).toMatchObject({ acquired: true, epoch: 3 });
    expect(c.acquired && c.meta.confirmedEpoch).toBeUndefined();
  });

  it('records the last epoch that confirmed its dispatches, only from the lease holder', async () => {
    const stream = streamName();
    await ledger.acquirePlannerLease({ stream, ownerToken: 'a', nowMs: 1000, leaseMs: 5000 });
    expect(await ledger.releasePlannerLease({ stream, epoch: 1, ownerToken: 'a', confirmDispatches: true })).toBe('applied');
    const b = await ledger.acquirePlannerLease({ stream, ownerToken: 'b', nowMs: 2000, leaseMs: 5000 });
    expect(b).toMatchObject({ acquired: true, epoch: 2, meta: { confirmedEpoch: 1 } });
    // A run that ends without confirming leaves the mark where it was; a stale holder cannot move it.
    expect(await ledger.releasePlannerLease({ stream, epoch: 2, ownerToken: 'b' })).toBe('applied');
    expect(await ledger.releasePlannerLease({ stream, epoch: 9, ownerToken: 'b', confirmDispatches: true })).toBe('fenced');
    expect((await ledger.readMeta(stream))?.confirmedEpoch).toBe(1);
  });

  it("lets a loop's next tick take over the lease its last tick kept, in one take that records the kept tick's confirmation", async () => {
    const stream = streamName();
    const first = await ledger.acquirePlannerLease({ stream, ownerToken: 'loop:1', nowMs: 1000, leaseMs: 60_000 });
    expect(first).toMatchObject({ acquired: true, epoch: 1 });
    const kept = { epoch: 1, ownerToken: 'loop:1', confirmDispatches: true };
    // Held (not expired): another owner waits; the loop's next tick, naming the kept lease, takes it.
    expect(await ledger.acquirePlannerLease({ stream, ownerToken: 'other', nowMs: 2000, leaseMs: 60_000 })).toMatchObject({
      acquired: false,
    });
    const wrong = { ...kept, epoch: 7 };
    expect(await ledger.acquirePlannerLease({ stream, ownerToken: 'loop:2', nowMs: 2000, leaseMs: 60_000, previous: wrong })).toMatchObject(
      {
        acquired: false,
      },
    );
    const second = await ledger.acquirePlannerLease({ stream, ownerToken: 'loop:2', nowMs: 2000, leaseMs: 60_000, previous: kept });
    expect(second).toMatchObject({ acquired: true, epoch: 2, meta: { confirmedEpoch: 1, ownerToken: 'loop:2' } });
    // An operator asks: recorded for the loop to see; the next take clears it.
    await ledger.requestPlannerLease({ stream, ownerToken: 'operator:x' });
    expect((await ledger.readMeta(stream))?.leaseWanted).toBe('operator:x');
    // A take-over of a kept lease leaves the request standing (the loop releases after that tick).
    const fourth = await ledger.acquirePlannerLease({
      stream,
      ownerToken: 'loop:3',
      nowMs: 2500,
      leaseMs: 60_000,
      previous: { ...kept, epoch: 2, ownerToken: 'loop:2' },
    });
    expect(fourth).toMatchObject({ acquired: true, epoch: 3 });
    expect((await ledger.readMeta(stream))?.leaseWanted).toBe('operator:x');
    // The loop died holding the lease: its successor takes over any lease of its ticks (`<owner>:...`), and no other.
    const third = await ledger.acquirePlannerLease({ stream, ownerToken: 'next:1', nowMs: 3000, leaseMs: 60_000, deadLoopOwner: 'loop' });
    expect(third).toMatchObject({ acquired: true, epoch: 4, meta: { confirmedEpoch: 2 } });
    expect((await ledger.readMeta(stream))?.leaseWanted).toBeUndefined();
    expect(
      await ledger.acquirePlannerLease({ stream, ownerToken: 'x', nowMs: 4000, leaseMs: 60_000, deadLoopOwner: 'loop' }),
    ).toMatchObject({
      acquired: false,
      holder: 'next:1',
    });
  });

  it('records the partitions pending their start with the start mark, once and only from the lease holder', async () => {
    const stream = streamName();
    const { ctx } = await plannerContext(stream);
    const pendingStart = [
      { topic: 'orders', partitions: [1, 4], topicId: 'AAAAAAAAAAAAAAAAAAAAAA' },
      { topic: 'orders.eu-west_1', partitions: [0] },
    ];
    expect(await ledger.markStreamStarted({ ...ctx, epoch: 99, nowMs: 1, pendingStart })).toBe('fenced');
    expect((await ledger.readMeta(stream))?.pendingStart).toBeUndefined();
    expect(await ledger.markStreamStarted({ ...ctx, nowMs: 1, pendingStart })).toBe('applied');
    expect(await ledger.markStreamStarted({ ...ctx, nowMs: 2, pendingStart: [{ topic: 'other', partitions: [0] }] })).toBe(
      'condition-failed',
    );
    expect(await ledger.readMeta(stream)).toMatchObject({ startedAtMs: 1, pendingStart });
    // Kept as written across lease takes (the planner reads it from the lease).
    await ledger.releasePlannerLease(ctx);
    const next = await ledger.acquirePlannerLease({ stream, ownerToken: 'p', nowMs: 1, leaseMs: 60_000 });
    expect(next.acquired && next.meta.pendingStart).toEqual(pendingStart);
    // A stream marked started with none pending records none.
    const other = streamName();
    const o = await plannerContext(other);
    expect(await ledger.markStreamStarted({ ...o.ctx, nowMs: 1, pendingStart: [] })).toBe('applied');
    expect(await ledger.readMeta(other)).not.toHaveProperty('pendingStart');
  });

  it('registers a partition once and plans ranges that tile from its start (I1)', async () => {
    const stream = streamName();
    const { lease, ctx } = await plannerContext(stream);
    const reg = { kind: 'register-partition' as const, partition: partitionFixture(stream, 'orders', 3, 5) };
    expect(await ledger.applyPlan({ ...ctx, writes: [reg] })).toEqual(['applied']);
    expect(await ledger.markStreamStarted({ ...ctx, nowMs: 1 })).toBe('applied');
    expect(await ledger.applyPlan({ ...ctx, writes: [reg] })).toEqual(['condition-failed']);
    expect(await ledger.markStreamStarted({ ...ctx, nowMs: 2 })).toBe('condition-failed');
    expect(await ledger.markStreamStarted({ ...ctx, epoch: 99, nowMs: 2 })).toBe('fenced');
    expect((await ledger.readMeta(stream))?.startedAtMs).toBe(1);

    const plan = (from: number, until: number) => ({
      kind: 'plan-range' as const,
      range: rangeFixture(stream, 'orders', 3, from, until, lease.epoch),
    });
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(5, 15)] })).toEqual(['applied']);
    // Replays and overlaps lose their condition.
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(5, 15)] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(10, 20)] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(15, 20)] })).toEqual(['applied']);

    const [p] = await ledger.readPartitions(stream);
    // The last planned time is the newest range's.
    expect(p).toMatchObject({ topic: 'orders', partition: 3, startOffset: 5, committed: 5, nextFrom: 20, lastPlannedAtMs: 2000 });
    const open = (await ledger.readOpenRanges(stream)).sort((x, y) => x.from - y.from);
    expect(open.map((r) => [r.from, r.until, r.status])).toEqual([
      [5, 15, 'planned'],
      [15, 20, 'planned'],
    ]);
  });

  it('marks dispatches and parks ranges only from the state the planner saw', async () => {
    const stream = streamName();
    const { ctx } = await plannerContext(stream);
    await ledger.applyPlan({
      ...ctx,
      writes: [
        { kind: 'register-partition', partition: partitionFixture(stream, 't', 0) },
        { kind: 'plan-range', range: rangeFixture(stream, 't', 0, 0, 100, 1) },
      ],
    });
    const r = { topic: 't', partition: 0, from: 0 };
    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'mark-dispatched', range: r, expect: { dispatches: 0 }, nowMs: 7 }] }),
    ).toEqual(['applied']);
    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'mark-dispatched', range: r, expect: { dispatches: 0 }, nowMs: 8 }] }),
    ).toEqual(['condition-failed']);
    const marked = await ledger.readRange(stream, r);
    expect(marked).toMatchObject({ dispatchedAtMs: 7, dispatches: 1, status: 'planned' });
    expect(marked?.redispatchedAtAttempts).toBeUndefined();
    // A re-dispatch records the attempts it was sent at.
    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'mark-dispatched', range: r, expect: { dispatches: 1 }, nowMs: 8, attempts: 0 }] }),
    ).toEqual(['applied']);
    expect(await ledger.readRange(stream, r)).toMatchObject({ dispatchedAtMs: 8, dispatches: 2, redispatchedAtAttempts: 0 });
    expect(await ledger.applyPlan({ ...ctx, writes: [{ kind: 'unmark-dispatch', range: r, expect: { dispatches: 2 } }] })).toEqual([
      'applied',
    ]);
    // The dispatcher refused it: clear the record (only from the count the planner saw, only while planned).
    const unmark = (dispatches: number): PlanWrite => ({ kind: 'unmark-dispatch', range: r, expect: { dispatches } });
    expect(await ledger.applyPlan({ ...ctx, writes: [unmark(0)] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [unmark(1)] })).toEqual(['applied']);
    const cleared = await ledger.readRange(stream, r);
    expect(cleared).toMatchObject({ dispatches: 0, status: 'planned' });
    expect(cleared?.dispatchedAtMs).toBeUndefined();
    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'mark-dispatched', range: r, expect: { dispatches: 0 }, nowMs: 9 }] }),
    ).toEqual(['applied']);

    expect(
      await ledger.applyPlan({
        ...ctx,
        writes: [{ kind: 'park-range', range: r, expect: { status: 'planned', attempts: 1 }, error: 'x' }],
      }),
    ).toEqual(['condition-failed']);
    expect(
      await ledger.applyPlan({
        ...ctx,
        writes: [{ kind: 'park-range', range: r, expect: { status: 'planned', attempts: 0 }, error: 'boom' }],
      }),
    ).toEqual(['applied']);
    expect(await ledger.readRange(stream, r)).toMatchObject({ status: 'parked', lastError: 'boom' });
    expect((await ledger.readOpenRanges(stream)).map((x) => x.status)).toEqual(['parked']);
  });

  it('retires and fails partitions once, and plans nothing on them afterwards', async () => {
    const stream = streamName();
    const { ctx } = await plannerContext(stream);
    await ledger.applyPlan({
      ...ctx,
      writes: [0, 1].map((p) => ({ kind: 'register-partition' as const, partition: partitionFixture(stream, 'gone', p) })),
    });
    const outcomes = await ledger.applyPlan({
      ...ctx,
      writes: [
        { kind: 'retire-partition', topic: 'gone', partition: 0, reason: 'TOPIC_DELETED', nowMs: 5 },
        { kind: 'fail-partition', topic: 'gone', partition: 1, reason: 'DATA_LOSS [0, 10)', nowMs: 5 },
      ],
    });
    expect(outcomes).toEqual(['applied', 'applied']);
    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'retire-partition', topic: 'gone', partition: 0, reason: 'again', nowMs: 6 }] }),
    ).toEqual(['condition-failed']);
    expect(
      await ledger.applyPlan({
        ...ctx,
        writes: [{ kind: 'plan-range', range: rangeFixture(stream, 'gone', 0, 0, 10, 1) }],
      }),
    ).toEqual(['condition-failed']);
    const parts = (await ledger.readPartitions(stream)).sort((a, b) => a.partition - b.partition);
    expect(parts.map((p) => [p.status, p.reason])).toEqual([
      ['retired', 'TOPIC_DELETED'],
      ['failed', 'DATA_LOSS [0, 10)'],
    ]);
  });

  it('records a data-loss span only when nothing is in flight, and advances past it', async () => {
    const stream = streamName();
    const { ctx } = await plannerContext(stream);
    await ledger.applyPlan({ ...ctx, writes: [{ kind: 'register-partition', partition: partitionFixture(stream, 't', 0, 10) }] });
    const loss = { stream, topic: 't', partition: 0, from: 10, until: 250, detectedAtMs: 9, reason: 'retention' };
    expect(await ledger.applyPlan({ ...ctx, writes: [{ kind: 'record-data-loss', loss, expectFrom: 9 }] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [{ kind: 'record-data-loss', loss, expectFrom: 10 }] })).toEqual(['applied']);
    expect(await ledger.readDataLoss(stream)).toEqual([loss]);
    expect((await ledger.readPartitions(stream))[0]).toMatchObject({ committed: 250, nextFrom: 250 });
  });

  it('advances the committed offset only forward and within the planned cursor (I2)', async () => {
    const stream = streamName();
    const { ctx } = await plannerContext(stream);
    await ledger.applyPlan({
      ...ctx,
      writes: [
        { kind: 'register-partition', partition: partitionFixture(stream, 't', 0) },
        { kind: 'plan-range', range: rangeFixture(stream, 't', 0, 0, 50, 1) },
      ],
    });
    const adv = (expect: number, to: number) => ({ kind: 'advance-committed' as const, topic: 't', partition: 0, expect, to });
    expect(await ledger.applyPlan({ ...ctx, writes: [adv(0, 60)] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [adv(5, 50)] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [adv(0, 50)] })).toEqual(['applied']);
    expect((await ledger.readPartitions(stream))[0]?.committed).toBe(50);
  });

  it('applies hundreds of writes in one call and reports each outcome in order', async () => {
    const stream = streamName();
    const { ctx } = await plannerContext(stream);
    const regs = Array.from({ length: 250 }, (_, i) => ({
      kind: 'register-partition' as const,
      partition: partitionFixture(stream, `t${i % 5}`, i),
    }));
    expect(await ledger.applyPlan({ ...ctx, writes: regs })).toEqual(regs.map(() => 'applied'));
    // One already-planned range in the middle loses; the others still apply.
    const plans = regs.map((r, i) => ({
      kind: 'plan-range' as const,
      range: rangeFixture(stream, r.partition.topic, r.partition.partition, i === 100 ? 1 : 0, 10, 1),
    }));
    const out = await ledger.applyPlan({ ...ctx, writes: plans });
    expect(out.filter((o) => o === 'applied')).toHaveLength(249);
    expect(out[100]).toBe('condition-failed');
    expect((await ledger.readOpenRanges(stream)).length).toBe(249);
  });

  async function plannedRange(stream: string, from = 0, until = 100) {
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'planner', nowMs: 0, leaseMs: 1 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'planner' };
    await ledger.applyPlan({
      ...ctx,
      writes: [
        { kind: 'register-partition', partition: partitionFixture(stream, 't', 0, from) },
        { kind: 'plan-range', range: rangeFixture(stream, 't', 0, from, until, lease.epoch) },
      ],
    });
    return { stream, topic: 't', partition: 0, from, until };
  }
  const take = (
    r: { stream: string; topic: string; partition: number; from: number; until: number },
    leaseToken: string,
    nowMs: number,
    maxAttempts = 3,
  ) => ledger.takeRangeLease({ ...r, leaseToken, nowMs, leaseMs: 1000, maxAttempts });

  it('refuses a lease take naming the wrong until, whatever the range state, and writes nothing', async () => {
    const r = await plannedRange(streamName(), 0, 100);
    const planned = await ledger.readRange(r.stream, r);
    for (const until of [99, 101, 1, Number.MAX_SAFE_INTEGER]) {
      expect(await take({ ...r, until }, 'forged', 10_000, 1)).toMatchObject({ kind: 'mismatch', range: { until: 100 } });
    }
    // Nothing counted, nothing held: the attempt limit of 1 still admits the genuine request.
    expect(await ledger.readRange(r.stream, r)).toEqual(planned);
    expect(await take(r, 'A', 10_000, 1)).toMatchObject({ kind: 'taken', range: { attempts: 1, leaseToken: 'A' } });
    const held = await ledger.readRange(r.stream, r);
    // Held by A, or expired and exhausted: a wrong until is still a mismatch, and still changes nothing.
    expect(await take({ ...r, until: 50 }, 'forged', 10_500)).toMatchObject({ kind: 'mismatch' });
    expect(await take({ ...r, until: 50 }, 'forged', 20_000, 5)).toMatchObject({ kind: 'mismatch' });
    expect(await ledger.readRange(r.stream, r)).toEqual(held);
  });

  it('gives a range lease to one processor at a time and counts attempts (I3)', async () => {
    const r = await plannedRange(streamName());
    const a = await take(r, 'A', 10_000);
    expect(a).toMatchObject({
      kind: 'taken',
      range: { status: 'leased', leaseToken: 'A', attempts: 1, leaseExpiresAtMs: 11_000, firstLeasedAtMs: 10_000 },
    });
    expect(await take(r, 'B', 10_500)).toMatchObject({ kind: 'held', range: { leaseToken: 'A' } });
    const b = await take(r, 'B', 11_001);
    expect(b).toMatchObject({ kind: 'taken', range: { leaseToken: 'B', attempts: 2, firstLeasedAtMs: 10_000 } });
    // A's lease is gone: its writes fail their condition and change nothing.
    expect(await ledger.commitChunk({ range: { ...r, leaseToken: 'A' }, expectProgress: 0, to: 50, nowMs: 11_002, leaseMs: 1000 })).toBe(
      'lease-lost',
    );
    expect(await ledger.failRange({ range: { ...r, leaseToken: 'A' }, status: 'failed', error: 'x', nowMs: 11_002 })).toBe('lease-lost');
    expect(await take(r, 'C', 20_000, 2)).toMatchObject({ kind: 'exhausted' });
    expect(await take({ ...r, from: 999 }, 'C', 20_000)).toEqual({ kind: 'missing' });
  });

  it('commits chunk progress forward only, with the lease token and the progress it replaces (I2)', async () => {
    const r = await plannedRange(streamName(), 10, 110);
    await take(r, 'A', 1000);
    const held = { ...r, leaseToken: 'A' };
    // Headers exactly as written: order across repeated names, null values, names that are
    // Object.prototype properties, an empty name; and the timestamp type.
    const headers = [
      { key: '__proto__', valueBase64: 'cA==' },
      { key: 'constructor', valueBase64: null },
      { key: 'a', valueBase64: 'MQ==' },
      { key: 'b', valueBase64: '' },
      { key: 'a', valueBase64: null },
      { key: '', valueBase64: 'eA==' },
    ];
    const dl = {
      stream: r.stream,
      topic: 't',
      partition: 0,
      offset: 12,
      timestampMs: 5,
      timestampType: 'LogAppendTime' as const,
      keyBase64: null,
      valueBase64: 'eA==',
      valueBytes: 1,
      truncated: true,
      headers,
      headersDropped: 2,
      error: 'bad',
      attempts: 3,
      rangeFrom: 10,
      createdAtMs: 1000,
      kept: 'record' as const,
      expiresAtMs: 4_102_444_800_000,
    };
    // Only where the record is and why it failed: no key, value or headers (personal data).
    const coordinates = {
      ...dl,
      offset: 13,
      keyBase64: null,
      valueBase64: null,
      headers: [],
      headersDropped: undefined,
      truncated: false,
      kept: 'coordinates' as const,
      expiresAtMs: undefined,
    };
    expect(
      await ledger.commitChunk({ range: held, expectProgress: 10, to: 40, nowMs: 1500, leaseMs: 1000, deadLetters: [dl, coordinates] }),
    ).toBe('applied');
    expect(await ledger.commitChunk({ range: held, expectProgress: 10, to: 40, nowMs: 1600, leaseMs: 1000 })).toBe('lease-lost');
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ progress: 40, leaseExpiresAtMs: 2500 });
    expect(await ledger.listDeadLetters(r.stream)).toEqual([dl, coordinates]);

    expect(
      await ledger.completeRange({
        range: held,
        expectProgress: 39,
        nowMs: 1700,
        stats: { records: 90, processingMs: 700, schedulingDelayMs: 5, finishedAtMs: 1700 },
        advancePartition: true,
      }),
    ).toBe('lease-lost');
    expect(await ledger.commitChunk({ range: held, expectProgress: 40, to: 110, nowMs: 1700, leaseMs: 1000 })).toBe('applied');
    const stats = { records: 90, processingMs: 700, schedulingDelayMs: 5, finishedAtMs: 1800 };
    expect(
      await ledger.completeRange({
        range: held,
        expectProgress: 110,
        nowMs: 1800,
        stats,
        observedRecordsPerSec: 128,
        advancePartition: true,
      }),
    ).toBe('applied');
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ status: 'done', progress: 110, records: 90, finishedAtMs: 1800 });
    expect(await ledger.readPartition(r.stream, 't', 0)).toMatchObject({ committed: 110, lastRange: stats, observedRecordsPerSec: 128 });
    expect(await ledger.readOpenRanges(r.stream)).toEqual([]);
    expect(await take(r, 'B', 99_000)).toMatchObject({ kind: 'done', range: { records: 90 } });
  });

  it('refuses progress below the position held, past the range end, or past a pending batch, and writes nothing', async () => {
    const r = await plannedRange(streamName(), 10, 110);
    await take(r, 'A', 1000);
    const held = { ...r, leaseToken: 'A' };
    const commit = (expectProgress: number, to: number) =>
      ledger.commitChunk({ range: held, expectProgress, to, nowMs: 1100, leaseMs: 1000 });
    expect(await commit(10, 40)).toBe('applied');
    const before = await ledger.readRange(r.stream, r);
    // Backwards (I2), beyond the range's end, from a position other than the one stored.
    expect(await commit(40, 39)).toBe('lease-lost');
    expect(await commit(40, 111)).toBe('lease-lost');
    expect(await commit(41, 50)).toBe('lease-lost');
    // A batch must hold an offset and lie inside the range.
    expect(await ledger.beginBatch({ range: held, expectProgress: 40, until: 40, nowMs: 1100, leaseMs: 1000 })).toBe('lease-lost');
    expect(await ledger.beginBatch({ range: held, expectProgress: 40, until: 111, nowMs: 1100, leaseMs: 1000 })).toBe('lease-lost');
    expect(await ledger.readRange(r.stream, r)).toEqual(before);
    expect(await ledger.beginBatch({ range: held, expectProgress: 40, until: 80, nowMs: 1100, leaseMs: 1000 })).toBe('applied');
    // A completion ends a pending batch only at its end: the range's end is not the batch's.
    const stats = { records: 1, processingMs: 1, schedulingDelayMs: 0, finishedAtMs: 1200 };
    const complete = (expectProgress: number) =>
      ledger.completeRange({ range: held, expectProgress, nowMs: 1200, stats, advancePartition: true });
    expect(await complete(40)).toBe('lease-lost');
    expect(await commit(40, 80)).toBe('applied');
    // A completion commits what was handled since the last commit: progress 80 -> 110, done.
    expect(await complete(80)).toBe('applied');
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ status: 'done', progress: 110 });
    expect(await ledger.readPartition(r.stream, 't', 0)).toMatchObject({ committed: 110 });
  });

  it('refuses a commit over its published limits and writes nothing', async () => {
    const r = await plannedRange(streamName(), 0, 10);
    await take(r, 'A', 1000);
    const held = { ...r, leaseToken: 'A' };
    const { limits } = ledger;
    const puts = (n: number): SinkWrite[] => Array.from({ length: n }, (_, i) => ({ put: { table: 'sink', item: { pk: `k${i}` } } }));
    const bump: SinkWrite = {
      update: { table: 'sink', key: { pk: 'k' }, expression: 'ADD #n :one', names: { '#n': 'n' }, values: { ':one': 1 } },
    };
    const tooLarge: SinkWrite[][] = [
      puts(limits.maxSinkWrites + 1),
      [{ put: { table: 'sink', item: { pk: 'big', blob: 'x'.repeat(limits.maxSinkBytes) } } }],
      [bump, bump], // two writes on one item
    ];
    expect(fitsOneCommit(puts(limits.maxSinkWrites), limits)).toBe(true);
    for (const sinkWrites of tooLarge) {
      expect(fitsOneCommit(sinkWrites, limits)).toBe(false);
      await expect(
        ledger.commitChunk({ range: held, expectProgress: 0, to: 5, nowMs: 1500, leaseMs: 1000, sinkWrites }),
      ).rejects.toBeInstanceOf(CommitTooLargeError);
    }
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ status: 'leased', progress: 0 });
    expect(limits.deadLetter.maxValueBytes).toBeGreaterThan(0);
  });

  it('records a pending folded batch: progress then moves only to its end, and the next holder sees it', async () => {
    const r = await plannedRange(streamName(), 0, 100);
    await take(r, 'A', 1000);
    const held = { ...r, leaseToken: 'A' };
    expect(await ledger.beginBatch({ range: { ...r, leaseToken: 'B' }, expectProgress: 0, until: 60, nowMs: 1100, leaseMs: 1000 })).toBe(
      'lease-lost',
    );
    expect(await ledger.beginBatch({ range: held, expectProgress: 5, until: 60, nowMs: 1100, leaseMs: 1000 })).toBe('lease-lost');
    expect(await ledger.beginBatch({ range: held, expectProgress: 0, until: 60, nowMs: 1100, leaseMs: 1000 })).toBe('applied');
    // Idempotent for the same batch, refused for another one.
    expect(await ledger.beginBatch({ range: held, expectProgress: 0, until: 60, nowMs: 1150, leaseMs: 1000 })).toBe('applied');
    expect(await ledger.beginBatch({ range: held, expectProgress: 0, until: 70, nowMs: 1150, leaseMs: 1000 })).toBe('lease-lost');
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ progress: 0, pendingUntil: 60, leaseExpiresAtMs: 2150 });
    // The lease expires; the next holder is told which batch to finish.
    expect(await take(r, 'B', 5000)).toMatchObject({ kind: 'taken', range: { progress: 0, pendingUntil: 60 } });
    const heldB = { ...r, leaseToken: 'B' };
    expect(await ledger.commitChunk({ range: heldB, expectProgress: 0, to: 50, nowMs: 5100, leaseMs: 1000 })).toBe('lease-lost');
    expect(await ledger.commitChunk({ range: heldB, expectProgress: 0, to: 60, nowMs: 5100, leaseMs: 1000 })).toBe('applied');
    const after = await ledger.readRange(r.stream, r);
    expect(after).toMatchObject({ progress: 60 });
    expect(after?.pendingUntil).toBeUndefined();
    expect(await ledger.commitChunk({ range: heldB, expectProgress: 60, to: 70, nowMs: 5200, leaseMs: 1000 })).toBe('applied');
  });

  it('applies a marked sink write once per item and batch end, per partition, incarnation and rewind', async () => {
    const table = opts.sinkTable ? await opts.sinkTable() : 'sink';
    const stream = streamName();
    const bump = (pk: string, n: number): SinkWrite => ({
      update: { table, key: { pk }, expression: 'ADD #n :n SET lastBy = :by', names: { '#n': 'n' }, values: { ':n': n, ':by': 'x' } },
    });
    const mark = { stream, topic: 't', partition: 0, until: 10 };
    const three = ['a', 'b', 'c'].map((k) => bump(k, 1));
    expect(await ledger.applyMarkedSinkWrites({ mark, writes: three })).toEqual({ applied: 3, skipped: 0 });
    expect(await ledger.applyMarkedSinkWrites({ mark, writes: three })).toEqual({ applied: 0, skipped: 3 });
    // One item has the batch, two do not yet (a batch written again after a crash).
    expect(await ledger.applyMarkedSinkWrites({ mark: { ...mark, until: 20 }, writes: [bump('a', 1)] })).toEqual({
      applied: 1,
      skipped: 0,
    });
    expect(await ledger.applyMarkedSinkWrites({ mark: { ...mark, until: 20 }, writes: three })).toEqual({ applied: 2, skipped: 1 });
    expect(await ledger.applyMarkedSinkWrites({ mark: { ...mark, until: 15 }, writes: three })).toEqual({ applied: 0, skipped: 3 });
    for (const other of [{ partition: 1 }, { incarnation: 1 }, { rewinds: 1 }, { stream: `${stream}x` }, { topic: 'u' }]) {
      expect(await ledger.applyMarkedSinkWrites({ mark: { ...mark, ...other }, writes: [bump('a', 1)] })).toEqual({
        applied: 1,
        skipped: 0,
      });
    }
    expect(await ledger.applyMarkedSinkWrites({ mark: { ...mark, until: 30 }, writes: [bump('z', 1)] })).toEqual({
      applied: 1,
      skipped: 0,
    });
    const tooMany = Array.from({ length: ledger.limits.maxMarkedWrites + 1 }, (_, i) => bump(`k${i}`, 1));
    await expect(ledger.applyMarkedSinkWrites({ mark, writes: tooMany })).rejects.toBeInstanceOf(CommitTooLargeError);
    const put: SinkWrite = { put: { table, item: { pk: 'p' } } };
    await expect(ledger.applyMarkedSinkWrites({ mark, writes: [put] })).rejects.toThrow(/updates/);
  });

  it('fails, parks and releases ranges only for the lease holder', async () => {
    const r = await plannedRange(streamName());
    await take(r, 'A', 1000);
    expect(await ledger.failRange({ range: { ...r, leaseToken: 'A' }, status: 'failed', error: 'broker down', nowMs: 1100 })).toBe(
      'applied',
    );
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ status: 'failed', lastError: 'broker down' });
    await take(r, 'B', 1200);
    expect(await ledger.releaseRange({ range: { ...r, leaseToken: 'B' }, nowMs: 1300, progressed: true })).toBe('applied');
    const released = await ledger.readRange(r.stream, r);
    expect(released).toMatchObject({ status: 'planned', attempts: 1 });
    expect(released?.dispatchedAtMs).toBeUndefined();
    await take(r, 'C', 1400);
    expect(await ledger.failRange({ range: { ...r, leaseToken: 'C' }, status: 'parked', error: 'DATA_LOSS', nowMs: 1500 })).toBe('applied');
    expect(await take(r, 'D', 99_000)).toMatchObject({ kind: 'parked', range: { lastError: 'DATA_LOSS' } });
  });

  it('gives back the attempt of a failure that committed progress first, and counts one that did not', async () => {
    const r = await plannedRange(streamName());
    await take(r, 'A', 1000);
    expect(
      await ledger.failRange({ range: { ...r, leaseToken: 'A' }, status: 'failed', error: 'throttled', nowMs: 1100, progressed: true }),
    ).toBe('applied');
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ status: 'failed', attempts: 0, lastError: 'throttled' });
    await take(r, 'B', 1200);
    expect(
      await ledger.failRange({ range: { ...r, leaseToken: 'B' }, status: 'failed', error: 'throttled', nowMs: 1300, progressed: false }),
    ).toBe('applied');
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ status: 'failed', attempts: 1 });
    // Parking is never an attempt given back: the range waits for an operator either way.
    await take(r, 'C', 1400);
    expect(
      await ledger.failRange({ range: { ...r, leaseToken: 'C' }, status: 'parked', error: 'POISON', nowMs: 1500, progressed: true }),
    ).toBe('applied');
    expect(await ledger.readRange(r.stream, r)).toMatchObject({ status: 'parked', attempts: 2 });
  });

  // Continuous mode: open segment ranges `[from, OPEN_UNTIL)`, planned on partitions with nothing in flight.

  /**
   * Partitions t/0 .. t/(n-1) of a new stream, each at `from` with an open segment range planned there
   * (DynamoDB: 7 partitions to a group item, so more than 7 span two groups).
   */
  type OpenRange = { stream: string; topic: string; partition: number; from: number; until: number };
  async function openRanges(stream: string, n: number, from = 10): Promise<OpenRange[]> {
    const { ctx, lease } = await plannerContext(stream);
    const partitions = Array.from({ length: n }, (_, p) => p);
    await ledger.applyPlan({
      ...ctx,
      writes: partitions.map((p) => ({ kind: 'register-partition' as const, partition: partitionFixture(stream, 't', p, from) })),
    });
    const writes = partitions.map((p) => ({
      kind: 'plan-range' as const,
      range: rangeFixture(stream, 't', p, from, OPEN_UNTIL, lease.epoch),
    }));
    expect(await ledger.applyPlan({ ...ctx, writes })).toEqual(writes.map(() => 'applied'));
    return partitions.map((partition) => ({ stream, topic: 't', partition, from, until: OPEN_UNTIL }));
  }
  const openRange = async (stream: string) => (await openRanges(stream, 1))[0]!;
  const stateOf = async (r: { stream: string; topic: string; partition: number; from: number }) => ({
    range: await ledger.readRange(r.stream, r),
    committed: (await ledger.readPartition(r.stream, r.topic, r.partition))?.committed,
  });

  it('a heartbeat renews the lease of a range whose folded batch is pending and leaves the batch to its commit', async () => {
    const stream = streamName();
    const r = await openRange(stream);
    await take(r, 'A', 1000);
    const held = { ...r, leaseToken: 'A' };
    expect(await ledger.beginBatch({ range: held, expectProgress: 10, until: 30, nowMs: 1100, leaseMs: 1000 })).toBe('applied');
    expect(await ledger.commitChunks([{ range: held, expectProgress: 10, to: 10, nowMs: 1900, leaseMs: 1000 }])).toEqual(['applied']);
    expect(await stateOf(r)).toMatchObject({ range: { progress: 10, pendingUntil: 30, leaseExpiresAtMs: 2900 }, committed: 10 });
    // Only the batch's own end moves progress past it.
    expect(await ledger.commitChunk({ range: held, expectProgress: 10, to: 20, nowMs: 2000, leaseMs: 1000 })).toBe('lease-lost');
    expect(await ledger.commitChunk({ range: held, expectProgress: 10, to: 30, nowMs: 2000, leaseMs: 1000 })).toBe('applied');
    expect((await stateOf(r)).range?.pendingUntil).toBeUndefined();
  });

  it("moves an open range's partition committed offset with each commit, recording when; a heartbeat renews the lease", async () => {
    const stream = streamName();
    const r = await openRange(stream);
    await take(r, 'A', 1000);
    const held = { ...r, leaseToken: 'A' };
    expect(await ledger.commitChunk({ range: held, expectProgress: 10, to: 25, nowMs: 1100, leaseMs: 1000 })).toBe('applied');
    expect(await stateOf(r)).toMatchObject({ range: { progress: 25, lastCommitAtMs: 1100, leaseExpiresAtMs: 2100 }, committed: 25 });
    expect(await ledger.readPartition(stream, 't', 0)).toMatchObject({ nextFrom: OPEN_UNTIL });
    // An idle range: progress kept where it is, the lease renewed.
    expect(await ledger.commitChunks([{ range: held, expectProgress: 25, to: 25, nowMs: 1900, leaseMs: 1000 }])).toEqual(['applied']);
    expect(await stateOf(r)).toMatchObject({ range: { progress: 25, leaseExpiresAtMs: 2900, lastCommitAtMs: 1900 }, committed: 25 });
    expect(await take(r, 'B', 2500)).toMatchObject({ kind: 'held', range: { leaseToken: 'A' } });
    expect(await ledger.commitChunks([{ range: held, expectProgress: 25, to: 40, nowMs: 2000, leaseMs: 1000 }])).toEqual(['applied']);
    expect(await stateOf(r)).toMatchObject({ range: { progress: 40, lastCommitAtMs: 2000 }, committed: 40 });

    // A's lease expires and B takes the range: A's commits and heartbeats change neither progress nor committed.
    expect(await take(r, 'B', 4000)).toMatchObject({ kind: 'taken', range: { progress: 40, leaseToken: 'B' } });
    const before = await stateOf(r);
    expect(await ledger.commitChunk({ range: held, expectProgress: 40, to: 50, nowMs: 4100, leaseMs: 1000 })).toBe('lease-lost');
    const stale = [40, 50].map((to) => ({ range: held, expectProgress: 40, to, nowMs: 4100, leaseMs: 1000 }));
    for (const c of stale) expect(await ledger.commitChunks([c])).toEqual(['lease-lost']);
    expect(await stateOf(r)).toEqual(before);

    // The committed offset moved by someone else (the planner's advance): the holder's view is stale, nothing written.
    const { ctx } = await plannerContext(stream);
    const advance = { kind: 'advance-committed' as const, topic: 't', partition: 0, expect: 40, to: 45 };
    expect(await ledger.applyPlan({ ...ctx, writes: [advance] })).toEqual(['applied']);
    const heldB = { ...r, leaseToken: 'B' };
    expect(await ledger.commitChunk({ range: heldB, expectProgress: 40, to: 50, nowMs: 4200, leaseMs: 1000 })).toBe('lease-lost');
    expect(await stateOf(r)).toMatchObject({ range: { progress: 40 }, committed: 45 });
  });

  it('ends an open range where it stands (a stream back in micro-batches): fenced holder, cursor at its progress, conditions as read', async () => {
    const stream = streamName();
    // Partitions 0..7 (DynamoDB: two group items); 0 and 7 are ended, 1 has a folded batch pending, 2 moved since it was read.
    const open = await openRanges(stream, 8);
    for (const r of open) await take(r, 'A', 1000);
    const held = (r: OpenRange) => ({ ...r, leaseToken: 'A' });
    for (const p of [0, 2, 7]) {
      expect(await ledger.commitChunk({ range: held(open[p]!), expectProgress: 10, to: 25, nowMs: 1100, leaseMs: 1000 })).toBe('applied');
    }
    expect(await ledger.beginBatch({ range: held(open[1]!), expectProgress: 10, until: 30, nowMs: 1100, leaseMs: 1000 })).toBe('applied');
    const { ctx } = await plannerContext(stream);
    const end = (r: OpenRange, progress: number) => ({ kind: 'end-segment' as const, range: r, expect: { progress } });
    // Partition 2 was read at 10 and has moved to 25 since; partition 3 was read at the wrong incarnation.
    const writes = [
      end(open[0]!, 25),
      end(open[1]!, 10),
      end(open[2]!, 10),
      end({ ...open[3]!, incarnation: 1 } as OpenRange, 10),
      end(open[7]!, 25),
    ];
    expect(await ledger.applyPlan({ ...ctx, writes })).toEqual([
      'applied',
      'condition-failed',
      'condition-failed',
      'condition-failed',
      'applied',
    ]);
    for (const p of [0, 7]) {
      expect(await ledger.readRange(stream, open[p]!)).toBeUndefined();
      expect(await ledger.readPartition(stream, 't', p)).toMatchObject({ committed: 25, nextFrom: 25 });
      // Its holder is fenced: the range is gone.
      expect(await ledger.commitChunk({ range: held(open[p]!), expectProgress: 25, to: 30, nowMs: 1200, leaseMs: 1000 })).toBe(
        'lease-lost',
      );
    }
    for (const p of [1, 2, 3]) {
      expect(await ledger.readRange(stream, open[p]!)).toMatchObject({ until: OPEN_UNTIL, leaseToken: 'A' });
      expect(await ledger.readPartition(stream, 't', p)).toMatchObject({ nextFrom: OPEN_UNTIL });
    }
    // Ended once: the range is gone and the cursor no longer open.
    expect(await ledger.applyPlan({ ...ctx, writes: [end(open[0]!, 25)] })).toEqual(['condition-failed']);
    // Micro-batches go on from the progress: a range planned there applies.
    const { ctx: next, lease } = await plannerContext(stream);
    expect(
      await ledger.applyPlan({ ...next, writes: [{ kind: 'plan-range', range: rangeFixture(stream, 't', 0, 25, 60, lease.epoch) }] }),
    ).toEqual(['applied']);
  });

  it('commits several ranges of partitions of one group and of two in one call, each outcome its own, in input order', async () => {
    const stream = streamName();
    // Partitions 0..8: open ranges on 0..7, a bounded range on 8 (DynamoDB: groups of 0..6 and of 7..8).
    const open = await openRanges(stream, 8);
    const { ctx, lease } = await plannerContext(stream);
    const bounded = { stream, topic: 't', partition: 8, from: 10, until: 110 };
    await ledger.applyPlan({
      ...ctx,
      writes: [
        { kind: 'register-partition', partition: partitionFixture(stream, 't', 8, 10) },
        { kind: 'plan-range', range: rangeFixture(stream, 't', 8, 10, 110, lease.epoch) },
      ],
    });
    const all = [...open, bounded];
    for (const r of all) expect(await take(r, r.partition === 3 ? 'X' : 'A', 1000)).toMatchObject({ kind: 'taken' });
    // Partition 3 is held by X: A's commit of it is refused, the others apply.
    const commit = (r: OpenRange, to: number) => ({
      range: { ...r, leaseToken: 'A' },
      expectProgress: 10,
      to,
      nowMs: 1500,
      leaseMs: 1000,
    });
    const inputs = [commit(all[8]!, 60), ...[0, 1, 2, 3, 7].map((p) => commit(all[p]!, 20 + p)), commit(all[5]!, 10)];
    expect(await ledger.commitChunks(inputs)).toEqual(['applied', 'applied', 'applied', 'applied', 'lease-lost', 'applied', 'applied']);
    for (const p of [0, 1, 2, 7]) {
      expect(await stateOf(all[p]!)).toMatchObject({
        range: { progress: 20 + p, leaseExpiresAtMs: 2500, lastCommitAtMs: 1500 },
        committed: 20 + p,
      });
    }
    expect(await stateOf(all[3]!)).toMatchObject({ range: { progress: 10, leaseToken: 'X', leaseExpiresAtMs: 2000 }, committed: 10 });
    expect(await stateOf(all[5]!)).toMatchObject({ range: { progress: 10, leaseExpiresAtMs: 2500 }, committed: 10 });
    expect(await stateOf(all[4]!)).toMatchObject({ range: { progress: 10, leaseExpiresAtMs: 2000 }, committed: 10 });
    // A bounded range's commit moves its progress only: its partition advances when it completes.
    const b = await stateOf(bounded);
    expect(b).toMatchObject({ range: { progress: 60, leaseExpiresAtMs: 2500 }, committed: 10 });
    expect(b.range?.lastCommitAtMs).toBeUndefined();
    expect(await ledger.commitChunks([])).toEqual([]);
  });

  it('refuses two commits of one range, or ranges of two streams, in one commitChunks call, and writes nothing', async () => {
    const stream = streamName();
    const [r0, r1] = (await openRanges(stream, 2)) as [OpenRange, OpenRange];
    for (const r of [r0, r1]) await take(r, 'A', 1000);
    const commit = (r: OpenRange, to: number) => ({
      range: { ...r, leaseToken: 'A' },
      expectProgress: 10,
      to,
      nowMs: 1100,
      leaseMs: 1000,
    });
    const before = [await stateOf(r0), await stateOf(r1)];
    await expect(ledger.commitChunks([commit(r0, 20), commit(r1, 20), commit(r0, 30)])).rejects.toBeInstanceOf(ValidationError);
    const other = { ...commit(r1, 20), range: { ...commit(r1, 20).range, stream: `${stream}x` } };
    await expect(ledger.commitChunks([commit(r0, 20), other])).rejects.toBeInstanceOf(ValidationError);
    expect([await stateOf(r0), await stateOf(r1)]).toEqual(before);
  });

  it('hands a range over: progress kept, recorded as dispatched now, the attempt given back, a new holder at once', async () => {
    const stream = streamName();
    const r = await openRange(stream);
    expect(await take(r, 'A', 1000)).toMatchObject({ kind: 'taken', range: { attempts: 1 } });
    const heldA = { ...r, leaseToken: 'A' };
    expect(await ledger.commitChunk({ range: heldA, expectProgress: 10, to: 30, nowMs: 1100, leaseMs: 1000 })).toBe('applied');
    expect(await ledger.releaseRange({ range: { ...r, leaseToken: 'B' }, nowMs: 1200, progressed: true, handover: true })).toBe(
      'lease-lost',
    );
    expect(await ledger.releaseRange({ range: heldA, nowMs: 1200, progressed: true, handover: true })).toBe('applied');
    expect(await stateOf(r)).toMatchObject({
      range: { status: 'planned', progress: 30, attempts: 0, dispatchedAtMs: 1200, dispatches: 0, leaseExpiresAtMs: 0 },
      committed: 30,
    });
    // The successor takes it at once, long before A's lease would have ended; A can no longer write.
    expect(await take(r, 'B', 1201, 1)).toMatchObject({ kind: 'taken', range: { progress: 30, attempts: 1, leaseToken: 'B' } });
    expect(await ledger.commitChunk({ range: heldA, expectProgress: 30, to: 40, nowMs: 1300, leaseMs: 1000 })).toBe('lease-lost');
    // A hand-over that made no progress gives the attempt back too (a plain release would not).
    expect(await ledger.releaseRange({ range: { ...r, leaseToken: 'B' }, nowMs: 1400, progressed: false, handover: true })).toBe('applied');
    expect(await stateOf(r)).toMatchObject({
      range: { status: 'planned', progress: 30, attempts: 0, dispatchedAtMs: 1400 },
      committed: 30,
    });
    expect(await take(r, 'C', 1401, 1)).toMatchObject({ kind: 'taken', range: { attempts: 1, leaseToken: 'C' } });
    expect(await ledger.releaseRange({ range: { ...r, leaseToken: 'C' }, nowMs: 1500, progressed: false })).toBe('applied');
    const released = await ledger.readRange(stream, r);
    expect(released).toMatchObject({ status: 'planned', attempts: 1 });
    expect(released?.dispatchedAtMs).toBeUndefined();
  });

  // Operator side: rewind, change records, bounded-stream completion, dead-letter re-drive.

  /** A stream with partition t/0 whose ranges `[a, b)` ... are finished, each by its own processor. */
  async function finishedRanges(stream: string, bounds: number[]) {
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'planner', nowMs: 0, leaseMs: 1 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'planner' };
    await ledger.applyPlan({ ...ctx, writes: [{ kind: 'register-partition', partition: partitionFixture(stream, 't', 0, bounds[0]) }] });
    for (let i = 0; i + 1 < bounds.length; i++) {
      const [from, until] = [bounds[i] as number, bounds[i + 1] as number];
      await ledger.applyPlan({
        ...ctx,
        writes: [{ kind: 'plan-range', range: rangeFixture(stream, 't', 0, from, until, lease.epoch) }],
      });
      const held = { stream, topic: 't', partition: 0, from, until, leaseToken: `p${i}` };
      await take(held, held.leaseToken, 1000);
      await ledger.commitChunk({ range: held, expectProgress: from, to: until, nowMs: 1001, leaseMs: 1000 });
      const stats = { records: until - from, processingMs: 1, schedulingDelayMs: 0, finishedAtMs: 1002 };
      await ledger.completeRange({ range: held, expectProgress: until, nowMs: 1002, stats, advancePartition: true });
    }
  }
  const deadLetterAt = (stream: string, offset: number) => ({
    stream,
    topic: 't',
    partition: 0,
    offset,
    timestampMs: 5,
    keyBase64: null,
    valueBase64: 'eA==',
    valueBytes: 1,
    truncated: false,
    headers: [],
    error: 'bad',
    attempts: 3,
    rangeFrom: 0,
    createdAtMs: 1000,
    kept: 'record' as const,
  });
  const operatorLease = async (stream: string, nowMs = 50_000) => {
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'operator', nowMs, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    return { stream, epoch: lease.epoch, ownerToken: 'operator' };
  };
  const change = { by: 'alice', atMs: 50_000, what: 'rewind to 40' };

  it('rewinds an idle partition, removing finished ranges and dead letters at or after the new cursor', async () => {
    const stream = streamName();
    await finishedRanges(stream, [0, 50, 100]);
    // Dead letters written by a processor of a later range (one before the target, one after).
    await ledger.acquirePlannerLease({ stream, ownerToken: 'planner', nowMs: 2000, leaseMs: 1 });
    const l = await ledger.acquirePlannerLease({ stream, ownerToken: 'planner2', nowMs: 3000, leaseMs: 1 });
    if (!l.acquired) throw new Error('lease');
    await ledger.applyPlan({
      stream,
      epoch: l.epoch,
      ownerToken: 'planner2',
      writes: [{ kind: 'plan-range', range: rangeFixture(stream, 't', 0, 100, 120, l.epoch) }],
    });
    const held = { stream, topic: 't', partition: 0, from: 100, until: 120, leaseToken: 'dl' };
    await take(held, 'dl', 4000);
    await ledger.commitChunk({
      range: held,
      expectProgress: 100,
      to: 120,
      nowMs: 4001,
      leaseMs: 1000,
      deadLetters: [deadLetterAt(stream, 30), deadLetterAt(stream, 110)],
    });
    await ledger.completeRange({
      range: held,
      expectProgress: 120,
      nowMs: 4002,
      stats: { records: 19, processingMs: 1, schedulingDelayMs: 0, finishedAtMs: 4002 },
      advancePartition: true,
    });

    const ctx = await operatorLease(stream);
    const out = await ledger.rewindPartitions({
      ...ctx,
      partitions: [{ topic: 't', partition: 0, expect: { committed: 120, nextFrom: 120 }, to: 40 }],
      change,
    });
    expect(out).toEqual({ outcome: 'applied', removedRanges: 2, abandonedParkedRanges: 0, removedDeadLetters: 1 });
    expect(await ledger.readPartition(stream, 't', 0)).toMatchObject({ committed: 40, nextFrom: 40, status: 'active' });
    expect((await ledger.readMeta(stream))?.lastChange).toEqual(change);
    expect((await ledger.listDeadLetters(stream)).map((d) => d.offset)).toEqual([30]);
    expect(await ledger.readRange(stream, { topic: 't', partition: 0, from: 0 })).toMatchObject({ status: 'done' });
    expect(await ledger.readRange(stream, { topic: 't', partition: 0, from: 50 })).toBeUndefined();
    // The offsets after the cursor can be planned again, with the same deterministic range keys.
    const again = await ledger.applyPlan({
      ...ctx,
      writes: [{ kind: 'plan-range', range: rangeFixture(stream, 't', 0, 40, 50, ctx.epoch) }],
    });
    expect(again).toEqual(['applied']);
    expect(
      await ledger.applyPlan({
        ...ctx,
        writes: [{ kind: 'plan-range', range: rangeFixture(stream, 't', 0, 50, 100, ctx.epoch) }],
      }),
    ).toEqual(['applied']);
  });

  it('refuses a rewind while a range is in flight, on a stale cursor, or without the planner lease', async () => {
    const stream = streamName();
    const r = await plannedRange(stream, 0, 100);
    const ctx = await operatorLease(stream);
    const at = (committed: number, nextFrom: number, to = 0) => [{ topic: 't', partition: 0, expect: { committed, nextFrom }, to }];
    expect(await ledger.rewindPartitions({ ...ctx, partitions: at(0, 100), change })).toMatchObject({ outcome: 'condition-failed' });
    await take(r, 'A', 60_000);
    expect(await ledger.rewindPartitions({ ...ctx, partitions: at(0, 100), change })).toMatchObject({ outcome: 'condition-failed' });
    expect(await ledger.rewindPartitions({ ...ctx, partitions: at(0, 0), change })).toMatchObject({ outcome: 'condition-failed' });
    expect(await ledger.rewindPartitions({ ...ctx, epoch: ctx.epoch - 1, partitions: at(0, 100), change })).toEqual({ outcome: 'fenced' });
    expect(await ledger.readPartition(stream, 't', 0)).toMatchObject({ committed: 0, nextFrom: 100 });
    expect(await ledger.readRange(stream, r)).toMatchObject({ status: 'leased' });
    expect((await ledger.readMeta(stream))?.lastChange).toBeUndefined();
  });

  it('abandons a parked range and reactivates a failed partition when rewinding past it', async () => {
    const stream = streamName();
    const r = await plannedRange(stream, 0, 100);
    await take(r, 'A', 1000);
    await ledger.failRange({ range: { ...r, leaseToken: 'A' }, status: 'parked', error: 'POISON_RECORD', nowMs: 1100 });
    const ctx = await operatorLease(stream);
    await ledger.applyPlan({
      ...ctx,
      writes: [{ kind: 'fail-partition', topic: 't', partition: 0, reason: 'OFFSET_REGRESSION', nowMs: 2 }],
    });
    const out = await ledger.rewindPartitions({
      ...ctx,
      partitions: [{ topic: 't', partition: 0, expect: { committed: 0, nextFrom: 100 }, to: 1 }],
      change,
    });
    expect(out).toEqual({ outcome: 'applied', removedRanges: 0, abandonedParkedRanges: 1, removedDeadLetters: 0 });
    const p = await ledger.readPartition(stream, 't', 0);
    expect(p).toMatchObject({ status: 'active', committed: 1, nextFrom: 1 });
    expect(p?.reason).toBeUndefined();
    expect(await ledger.readOpenRanges(stream)).toEqual([]);
  });

  it('records operator changes and marks a bounded stream finished once, fenced by the planner epoch', async () => {
    const stream = streamName();
    const ctx = await operatorLease(stream);
    expect(await ledger.recordChange({ ...ctx, change })).toBe('applied');
    expect(await ledger.recordChange({ ...ctx, epoch: ctx.epoch + 1, change })).toBe('fenced');
    expect(await ledger.markStreamFinished({ ...ctx, nowMs: 77 })).toBe('applied');
    expect(await ledger.markStreamFinished({ ...ctx, nowMs: 78 })).toBe('condition-failed');
    expect(await ledger.markStreamFinished({ ...ctx, ownerToken: 'other', nowMs: 79 })).toBe('fenced');
    expect(await ledger.readMeta(stream)).toMatchObject({ lastChange: change, finishedAtMs: 77 });
  });

  it('keeps a stop offset on a registered partition', async () => {
    const stream = streamName();
    const ctx = await operatorLease(stream);
    const partition = { ...partitionFixture(stream, 't', 0, 10), stopOffset: 25 };
    expect(await ledger.applyPlan({ ...ctx, writes: [{ kind: 'register-partition', partition }] })).toEqual(['applied']);
    expect(await ledger.readPartition(stream, 't', 0)).toMatchObject({ startOffset: 10, stopOffset: 25 });
  });

  it('re-drives a dead letter once', async () => {
    const r = await plannedRange(streamName());
    await take(r, 'A', 1000);
    await ledger.commitChunk({
      range: { ...r, leaseToken: 'A' },
      expectProgress: 0,
      to: 20,
      nowMs: 1001,
      leaseMs: 1000,
      deadLetters: [deadLetterAt(r.stream, 12)],
    });
    const dl = { stream: r.stream, topic: 't', partition: 0, offset: 12 };
    expect(await ledger.redriveDeadLetter({ ...dl, nowMs: 5000 })).toBe('applied');
    expect(await ledger.redriveDeadLetter({ ...dl, nowMs: 6000 })).toBe('condition-failed');
    expect(await ledger.redriveDeadLetter({ ...dl, offset: 13, nowMs: 6000 })).toBe('condition-failed');
    expect((await ledger.listDeadLetters(r.stream))[0]).toMatchObject({ offset: 12, redrivenAtMs: 5000 });
  });

  it('writes a pending delivery per destination with its dead letter, due after the grace period', async () => {
    const r = await plannedRange(streamName());
    await take(r, 'A', 1000);
    const held = { ...r, leaseToken: 'A' };
    const letter = {
      ...deadLetterAt(r.stream, 12),
      deliveries: ['sqs', 's3', 'kafka'] as DestinationKind[],
      expiresAtMs: 4_102_444_800_000,
    };
    const without = deadLetterAt(r.stream, 13);
    expect(
      await ledger.commitChunk({ range: held, expectProgress: 0, to: 20, nowMs: 1001, leaseMs: 1000, deadLetters: [letter, without] }),
    ).toBe('applied');
    // A commit that lost its lease writes no deliveries either.
    const lost = { ...deadLetterAt(r.stream, 14), deliveries: ['sns'] as DestinationKind[] };
    expect(await ledger.commitChunk({ range: held, expectProgress: 0, to: 20, nowMs: 1002, leaseMs: 1000, deadLetters: [lost] })).toBe(
      'lease-lost',
    );
    const due = 1000 + DELIVERY_GRACE_MS;
    const pending = { stream: r.stream, topic: 't', partition: 0, offset: 12, attempts: 0, nextAttemptAtMs: due, createdAtMs: 1000 };
    // Key order: by destination name after the dead letter's coordinates.
    expect(await ledger.readPendingDeliveries({ stream: r.stream })).toEqual(
      (['kafka', 's3', 'sqs'] as const).map((destination) => ({ ...pending, destination, expiresAtMs: 4_102_444_800_000 })),
    );
    expect(await ledger.readPendingDeliveries({ stream: r.stream, dueAtMs: due - 1 })).toEqual([]);
    expect(await ledger.readPendingDeliveries({ stream: r.stream, dueAtMs: due, limit: 2 })).toHaveLength(2);
    expect(await ledger.readDeadLetter(r.stream, { topic: 't', partition: 0, offset: 12 })).toEqual(letter);
    expect(await ledger.readDeadLetter(r.stream, { topic: 't', partition: 0, offset: 12, incarnation: 1 })).toBeUndefined();
    expect(await ledger.readDeadLetter(r.stream, { topic: 't', partition: 0, offset: 14 })).toBeUndefined();
  });

  it('counts a failed delivery only on the attempts it read, and removes a made delivery once', async () => {
    const r = await plannedRange(streamName());
    await take(r, 'A', 1000);
    const letter = { ...deadLetterAt(r.stream, 12), deliveries: ['sqs', 's3'] as DestinationKind[], incarnation: 2 };
    await ledger.commitChunk({
      range: { ...r, leaseToken: 'A' },
      expectProgress: 0,
      to: 20,
      nowMs: 1001,
      leaseMs: 1000,
      deadLetters: [letter],
    });
    const ref = { topic: 't', partition: 0, offset: 12, incarnation: 2 };
    const sqs = { stream: r.stream, ref, destination: 'sqs' as const };
    expect(await ledger.postponeDelivery({ ...sqs, expectAttempts: 0, nextAttemptAtMs: 90_000, error: 'down' })).toBe('applied');
    expect(await ledger.postponeDelivery({ ...sqs, expectAttempts: 0, nextAttemptAtMs: 95_000, error: 'again' })).toBe('condition-failed');
    expect(await ledger.readPendingDeliveries({ stream: r.stream, dueAtMs: 1000 + DELIVERY_GRACE_MS })).toEqual([
      expect.objectContaining({ destination: 's3', incarnation: 2, attempts: 0 }),
    ]);
    expect(await ledger.readPendingDeliveries({ stream: r.stream, dueAtMs: 90_000 })).toEqual([
      expect.objectContaining({ destination: 's3' }),
      expect.objectContaining({ destination: 'sqs', attempts: 1, nextAttemptAtMs: 90_000, lastError: 'down' }),
    ]);
    expect(await ledger.completeDelivery(sqs)).toBe('applied');
    expect(await ledger.completeDelivery(sqs)).toBe('condition-failed');
    expect(await ledger.postponeDelivery({ ...sqs, expectAttempts: 1, nextAttemptAtMs: 99_000, error: 'x' })).toBe('condition-failed');
    expect(await ledger.completeDelivery({ ...sqs, ref: { ...ref, incarnation: undefined }, destination: 's3' })).toBe('condition-failed');
    expect(await ledger.completeDelivery({ ...sqs, destination: 's3' })).toBe('applied');
    expect(await ledger.readPendingDeliveries({ stream: r.stream })).toEqual([]);
    // The dead letter itself stays: the ledger is the record of what was dead-lettered.
    expect(await ledger.listDeadLetters(r.stream)).toEqual([letter]);
  });

  it('closes a partition incarnation atomically: record, open ranges removed, the next incarnation apart from the old', async () => {
    const stream = streamName();
    const { lease, ctx } = await plannerContext(stream);
    const old: PartitionState = { ...partitionFixture(stream, 't', 0, 0), topicId: 'OLD' };
    const plan = (from: number, until: number, incarnation?: number, topicId = 'OLD') => ({
      kind: 'plan-range' as const,
      range: { ...rangeFixture(stream, 't', 0, from, until, lease.epoch), ...(incarnation ? { incarnation } : {}), topicId },
    });
    expect(await ledger.applyPlan({ ...ctx, writes: [{ kind: 'register-partition', partition: old }, plan(0, 10), plan(10, 20)] })).toEqual(
      ['applied', 'applied', 'applied'],
    );
    // [0, 10) done by its processor; [10, 20) still open when the topic is re-created.
    await ledger.takeRangeLease({
      stream,
      topic: 't',
      partition: 0,
      from: 0,
      until: 10,
      leaseToken: 'P',
      nowMs: 1,
      leaseMs: 1000,
      maxAttempts: 3,
    });
    const held0 = { stream, topic: 't', partition: 0, from: 0, until: 10, leaseToken: 'P' };
    await ledger.commitChunk({ range: held0, expectProgress: 0, to: 10, nowMs: 2, leaseMs: 1000 });
    const stats = { records: 10, processingMs: 1, schedulingDelayMs: 0, finishedAtMs: 3 };
    expect(await ledger.completeRange({ range: held0, expectProgress: 10, nowMs: 3, stats, advancePartition: true })).toBe('applied');
    await ledger.takeRangeLease({
      stream,
      topic: 't',
      partition: 0,
      from: 10,
      until: 20,
      leaseToken: 'Q',
      nowMs: 4,
      leaseMs: 1000,
      maxAttempts: 3,
    });

    const closed: ClosedIncarnation = {
      stream,
      topic: 't',
      partition: 0,
      incarnation: 0,
      topicId: 'OLD',
      newTopicId: 'NEW',
      status: 'active',
      startOffset: 0,
      committed: 10,
      nextFrom: 20,
      openRanges: [{ from: 10, until: 20, status: 'leased', progress: 10 }],
      newStartOffset: 0,
      detectedAtMs: 5,
      reason: 'TOPIC_RECREATED: test',
    };
    const next: PartitionState = { ...partitionFixture(stream, 't', 0, 0), topicId: 'NEW', incarnation: 1 };
    const finished = await ledger.readRange(stream, { topic: 't', partition: 0, from: 0 });
    expect(finished).toMatchObject({ status: 'done', topicId: 'OLD' });
    // The planner archives the closed incarnation's finished ranges with the close.
    const close = { kind: 'close-incarnation' as const, closed, next, archive: [finished as RangeState] };
    // Conditional on what was read: a stale topic id or cursor changes nothing.
    expect(await ledger.applyPlan({ ...ctx, writes: [{ ...close, closed: { ...closed, topicId: 'OTHER' } }] })).toEqual([
      'condition-failed',
    ]);
    expect(await ledger.applyPlan({ ...ctx, writes: [{ ...close, closed: { ...closed, committed: 0 } }] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, epoch: 999, writes: [close] })).toEqual(['fenced']);
    expect(await ledger.applyPlan({ ...ctx, writes: [close] })).toEqual(['applied']);
    expect(await ledger.applyPlan({ ...ctx, writes: [close] })).toEqual(['condition-failed']);
    expect(await ledger.readClosedIncarnations(stream)).toEqual([closed]);
    expect(await ledger.readPartition(stream, 't', 0)).toMatchObject({ incarnation: 1, topicId: 'NEW', committed: 0, nextFrom: 0 });
    expect(await ledger.readOpenRanges(stream)).toEqual([]);
    // The old range's processor lost its lease with the item; its completion cannot touch the new incarnation.
    const held10 = { stream, topic: 't', partition: 0, from: 10, until: 20, leaseToken: 'Q' };
    expect(await ledger.commitChunk({ range: held10, expectProgress: 10, to: 20, nowMs: 6, leaseMs: 1000 })).toBe('lease-lost');

    // The new incarnation plans [0, 10) again: a distinct item from the old finished [0, 10).
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(0, 10)] })).toEqual(['condition-failed']); // incarnation 0 is closed
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(0, 10, 1, 'NEW')] })).toEqual(['applied']);
    // The old incarnation's finished range is in the history; the new one's [0, 10) is another range.
    expect(await ledger.readRange(stream, { topic: 't', partition: 0, from: 0 })).toBeUndefined();
    expect(await ledger.readRangeHistory(stream)).toEqual([expect.objectContaining({ from: 0, until: 10, status: 'done', records: 10 })]);
    expect(await ledger.readRange(stream, { topic: 't', partition: 0, from: 0, incarnation: 1 })).toMatchObject({
      status: 'planned',
      topicId: 'NEW',
    });
    // A stale payload of incarnation 0 names a range that left with its incarnation, never the new one.
    expect(
      await ledger.takeRangeLease({
        stream,
        topic: 't',
        partition: 0,
        from: 0,
        until: 10,
        leaseToken: 'R',
        nowMs: 7,
        leaseMs: 1000,
        maxAttempts: 3,
      }),
    ).toMatchObject({ kind: 'missing' });
    const taken = await ledger.takeRangeLease({
      stream,
      topic: 't',
      partition: 0,
      from: 0,
      until: 10,
      incarnation: 1,
      leaseToken: 'S',
      nowMs: 7,
      leaseMs: 1000,
      maxAttempts: 3,
    });
    expect(taken).toMatchObject({ kind: 'taken', range: { incarnation: 1 } });
    const held1 = { stream, topic: 't', partition: 0, from: 0, until: 10, leaseToken: 'S', incarnation: 1 };
    const loss = { stream, topic: 't', partition: 0, from: 0, until: 4, detectedAtMs: 8, reason: 'retention', incarnation: 1 };
    expect(await ledger.commitChunk({ range: held1, expectProgress: 0, to: 4, nowMs: 8, leaseMs: 1000, dataLoss: loss })).toBe('applied');
    expect(await ledger.commitChunk({ range: held1, expectProgress: 4, to: 10, nowMs: 8, leaseMs: 1000 })).toBe('applied');
    expect(await ledger.completeRange({ range: held1, expectProgress: 10, nowMs: 9, stats, advancePartition: true })).toBe('applied');
    expect(await ledger.readPartition(stream, 't', 0)).toMatchObject({ incarnation: 1, committed: 10 });
    expect(await ledger.readDataLoss(stream)).toEqual([loss]);

    // Dead letters at the same offset in two incarnations are two items, re-driven one by one.
    await ledger.applyPlan({ ...ctx, writes: [plan(10, 20, 1, 'NEW')] });
    await ledger.takeRangeLease({
      stream,
      topic: 't',
      partition: 0,
      from: 10,
      until: 20,
      incarnation: 1,
      leaseToken: 'T',
      nowMs: 10,
      leaseMs: 1000,
      maxAttempts: 3,
    });
    const held2 = { stream, topic: 't', partition: 0, from: 10, until: 20, leaseToken: 'T', incarnation: 1 };
    const dead = { stream, topic: 't', partition: 0, offset: 12, timestampMs: 5, keyBase64: null, valueBase64: 'eA==', valueBytes: 1 };
    const letter = {
      ...dead,
      truncated: false,
      headers: [],
      error: 'bad',
      attempts: 3,
      rangeFrom: 10,
      createdAtMs: 10,
      kept: 'record' as const,
    };
    expect(
      await ledger.commitChunk({
        range: held2,
        expectProgress: 10,
        to: 20,
        nowMs: 11,
        leaseMs: 1000,
        deadLetters: [{ ...letter, incarnation: 1 }],
      }),
    ).toBe('applied');
    expect(await ledger.redriveDeadLetter({ stream, topic: 't', partition: 0, offset: 12, nowMs: 12 })).toBe('condition-failed');
    expect(await ledger.redriveDeadLetter({ stream, topic: 't', partition: 0, offset: 12, incarnation: 1, nowMs: 12 })).toBe('applied');
    expect(await ledger.listDeadLetters(stream)).toEqual([expect.objectContaining({ offset: 12, incarnation: 1, redrivenAtMs: 12 })]);
  });

  it('records a topic id on a partition that has none, once', async () => {
    const stream = streamName();
    const { ctx } = await plannerContext(stream);
    await ledger.applyPlan({ ...ctx, writes: [{ kind: 'register-partition', partition: partitionFixture(stream, 't', 0, 0) }] });
    const rec = { kind: 'record-topic-id' as const, topic: 't', partition: 0, topicId: 'ID1' };
    expect(await ledger.applyPlan({ ...ctx, writes: [{ ...rec, incarnation: 2 }] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [rec] })).toEqual(['applied']);
    expect(await ledger.applyPlan({ ...ctx, writes: [{ ...rec, topicId: 'ID2' }] })).toEqual(['condition-failed']);
    expect((await ledger.readPartition(stream, 't', 0))?.topicId).toBe('ID1');
  });
}
