/**
 * The Ledger contract: conditional semantics every adapter must have. Run against the in-memory
 * fake (unit) and the DynamoDB adapter on the emulator (integration).
 */
import type { Ledger, PartitionState, RangeState } from '../../lib/ports/ledger';

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
export function ledgerContract(makeLedger: LedgerFactory): void {
  let ledger: Ledger;
  let n = 0;
  const streamName = () => `s${Date.now().toString(36)}${n++}`;
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
  });

  it('registers a partition once and plans ranges that tile from its start (I1)', async () => {
    const stream = streamName();
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'o' };
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
      partitionUpdate: { lastPlannedAtMs: 3000 },
    });
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(5, 15)] })).toEqual(['applied']);
    // Replays and overlaps lose their condition.
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(5, 15)] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(10, 20)] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [plan(15, 20)] })).toEqual(['applied']);

    const [p] = await ledger.readPartitions(stream);
    expect(p).toMatchObject({ topic: 'orders', partition: 3, startOffset: 5, committed: 5, nextFrom: 20, lastPlannedAtMs: 3000 });
    const open = (await ledger.readOpenRanges(stream)).sort((x, y) => x.from - y.from);
    expect(open.map((r) => [r.from, r.until, r.status])).toEqual([
      [5, 15, 'planned'],
      [15, 20, 'planned'],
    ]);
  });

  it('marks dispatches and parks ranges only from the state the planner saw', async () => {
    const stream = streamName();
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'o' };
    await ledger.applyPlan({
      ...ctx,
      writes: [
        { kind: 'register-partition', partition: partitionFixture(stream, 't', 0) },
        { kind: 'plan-range', range: rangeFixture(stream, 't', 0, 0, 100, 1), partitionUpdate: { lastPlannedAtMs: 1 } },
      ],
    });
    const r = { topic: 't', partition: 0, from: 0 };
    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'mark-dispatched', range: r, expect: { dispatches: 0 }, nowMs: 7 }] }),
    ).toEqual(['applied']);
    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'mark-dispatched', range: r, expect: { dispatches: 0 }, nowMs: 8 }] }),
    ).toEqual(['condition-failed']);
    expect(await ledger.readRange(stream, r)).toMatchObject({ dispatchedAtMs: 7, dispatches: 1, status: 'planned' });

    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'park-range', range: r, expect: { status: 'planned', attempts: 1 }, error: 'x' }] }),
    ).toEqual(['condition-failed']);
    expect(
      await ledger.applyPlan({ ...ctx, writes: [{ kind: 'park-range', range: r, expect: { status: 'planned', attempts: 0 }, error: 'boom' }] }),
    ).toEqual(['applied']);
    expect(await ledger.readRange(stream, r)).toMatchObject({ status: 'parked', lastError: 'boom' });
    expect((await ledger.readOpenRanges(stream)).map((x) => x.status)).toEqual(['parked']);
  });

  it('retires and fails partitions once, and plans nothing on them afterwards', async () => {
    const stream = streamName();
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'o' };
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
        writes: [{ kind: 'plan-range', range: rangeFixture(stream, 'gone', 0, 0, 10, 1), partitionUpdate: { lastPlannedAtMs: 1 } }],
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
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'o' };
    await ledger.applyPlan({ ...ctx, writes: [{ kind: 'register-partition', partition: partitionFixture(stream, 't', 0, 10) }] });
    const loss = { stream, topic: 't', partition: 0, from: 10, until: 250, detectedAtMs: 9, reason: 'retention' };
    expect(await ledger.applyPlan({ ...ctx, writes: [{ kind: 'record-data-loss', loss, expectFrom: 9 }] })).toEqual(['condition-failed']);
    expect(await ledger.applyPlan({ ...ctx, writes: [{ kind: 'record-data-loss', loss, expectFrom: 10 }] })).toEqual(['applied']);
    expect(await ledger.readDataLoss(stream)).toEqual([loss]);
    expect((await ledger.readPartitions(stream))[0]).toMatchObject({ committed: 250, nextFrom: 250 });
  });

  it('advances the committed offset only forward and within the planned cursor (I2)', async () => {
    const stream = streamName();
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'o' };
    await ledger.applyPlan({
      ...ctx,
      writes: [
        { kind: 'register-partition', partition: partitionFixture(stream, 't', 0) },
        { kind: 'plan-range', range: rangeFixture(stream, 't', 0, 0, 50, 1), partitionUpdate: { lastPlannedAtMs: 1 } },
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
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'o' };
    const regs = Array.from({ length: 250 }, (_, i) => ({ kind: 'register-partition' as const, partition: partitionFixture(stream, `t${i % 5}`, i) }));
    expect(await ledger.applyPlan({ ...ctx, writes: regs })).toEqual(regs.map(() => 'applied'));
    // One already-planned range in the middle loses; the others still apply.
    const plans = regs.map((r, i) => ({
      kind: 'plan-range' as const,
      range: rangeFixture(stream, r.partition.topic, r.partition.partition, i === 100 ? 1 : 0, 10, 1),
      partitionUpdate: { lastPlannedAtMs: 5 },
    }));
    const out = await ledger.applyPlan({ ...ctx, writes: plans });
    expect(out.filter((o) => o === 'applied')).toHaveLength(249);
    expect(out[100]).toBe('condition-failed');
    expect((await ledger.readOpenRanges(stream)).length).toBe(249);
  });
}
