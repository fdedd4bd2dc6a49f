/**
 * The commit coalescer of continuous segments (lib/processor/commit-coalescer.ts) over the in-memory
 * ledger, on jest's fake clock: progress-only commits of one tick in one `commitChunks`, commits with
 * sink writes on their own at the tick, heartbeats of idle ranges, one write at a time per range, close.
 */
import { ValidationError } from '../../../lib/errors';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import type { LeasedRange } from '../../../lib/ports/ledger-state';
import type { SinkWrite } from '../../../lib/ports/sink-write';
import { createCommitCoalescer, type CommitCoalescer } from '../../../lib/processor/commit-coalescer';
import { OPEN_UNTIL } from '../../../lib/ranges';

const S = 's';
const T0 = 1_000_000;
const TICK_MS = 20;
const LEASE_MS = 3_000;
/** When an idle range's heartbeat is due: a third of its lease. */
const THIRD = LEASE_MS / 3;

type MemoryLedger = ReturnType<typeof createMemoryLedger>;
type Progress = { range: LeasedRange; expectProgress: number; to: number; nowMs: number; leaseMs: number };

/** A promise resolved by hand: a write that takes as long as the test wants. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Partitions t/0 .. t/(n-1) at offset 10, each with an open segment range planned there and leased by `A` now. */
async function heldOpenRanges(ledger: MemoryLedger, n: number): Promise<LeasedRange[]> {
  const lease = await ledger.acquirePlannerLease({ stream: S, ownerToken: 'p', nowMs: 0, leaseMs: 1 });
  if (!lease.acquired) throw new Error('planner lease');
  const partitions = Array.from({ length: n }, (_, p) => p);
  const tp = (partition: number) => ({ stream: S, topic: 't', partition });
  await ledger.applyPlan({
    stream: S,
    epoch: lease.epoch,
    ownerToken: 'p',
    writes: partitions.flatMap((p) => [
      {
        kind: 'register-partition' as const,
        partition: { ...tp(p), status: 'active' as const, startOffset: 10, committed: 10, nextFrom: 10, firstSeenAtMs: 0 },
      },
      {
        kind: 'plan-range' as const,
        range: {
          ...tp(p),
          from: 10,
          until: OPEN_UNTIL,
          status: 'planned' as const,
          epoch: lease.epoch,
          plannedAtMs: 0,
          dispatches: 1,
          attempts: 0,
          progress: 10,
        },
      },
    ]),
  });
  const ranges = partitions.map((p) => ({ ...tp(p), from: 10, until: OPEN_UNTIL }));
  const taken = await ledger.takeRangeLeases({ stream: S, ranges, leaseToken: 'A', nowMs: Date.now(), leaseMs: LEASE_MS, maxAttempts: 3 });
  expect(taken.map((o) => o.kind)).toEqual(ranges.map(() => 'taken'));
  return ranges.map((r) => ({ ...r, leaseToken: 'A' }));
}

const sinkWrite = (pk: string): SinkWrite => ({
  update: { table: 'totals', key: { pk }, expression: 'ADD #t :n', names: { '#t': 'total' }, values: { ':n': 1 } },
});

let coalescer: CommitCoalescer | undefined;

/** The ledger with `n` held open ranges, a coalescer over it holding them all, and spies on the ledger's writes. */
async function rig(n = 3, opts: { storeClock?: () => Promise<number> } = {}) {
  const ledger = createMemoryLedger();
  const ranges = await heldOpenRanges(ledger, n);
  const lost: LeasedRange[] = [];
  /** The ledger's own writes, for spies that slow them down to call. */
  const real = {
    commitChunk: ledger.commitChunk.bind(ledger),
    commitChunks: ledger.commitChunks.bind(ledger),
    failRange: ledger.failRange.bind(ledger),
    releaseRange: ledger.releaseRange.bind(ledger),
  };
  const commitChunks = jest.spyOn(ledger, 'commitChunks');
  const commitChunk = jest.spyOn(ledger, 'commitChunk');
  const c = createCommitCoalescer(ledger, {
    intervalMs: TICK_MS,
    leaseMs: LEASE_MS,
    clock: () => Date.now(),
    storeClock: opts.storeClock ?? (async () => Date.now()),
    onLost: (r) => lost.push(r),
  });
  coalescer = c;
  for (const r of ranges) c.hold(r, 10);
  const progress = (r: LeasedRange, expectProgress: number, to: number): Progress => ({
    range: r,
    expectProgress,
    to,
    nowMs: Date.now(),
    leaseMs: LEASE_MS,
  });
  /** The inputs of every `commitChunks` call so far. */
  const batches = () => commitChunks.mock.calls.map(([inputs]) => inputs);
  /** The heartbeats sent so far (progress kept where it was), as [partition, at ms after T0, progress]. */
  const heartbeats = () =>
    commitChunks.mock.calls.flatMap(([inputs]) =>
      inputs.filter((i) => i.to === i.expectProgress).map((i) => [i.range.partition, i.nowMs - T0, i.to]),
    );
  const stored = (r: LeasedRange) => ledger.store(S).ranges.get(`t/${r.partition}/10`)!;
  const committed = (r: LeasedRange) => ledger.store(S).partitions.get(`t/${r.partition}`)!.committed;
  return { ledger, real, ranges, lost, c, commitChunks, commitChunk, progress, batches, heartbeats, stored, committed };
}

/** Moves the fake clock by `ms`, running the ticks and the promises they start. */
const advance = (ms: number) => jest.advanceTimersByTimeAsync(ms);
const since = () => Date.now() - T0;

beforeEach(() => {
  jest.useFakeTimers({ now: T0 });
});
afterEach(async () => {
  await coalescer?.close();
  coalescer = undefined;
  jest.useRealTimers();
});

describe('commit coalescer: the commits of one tick', () => {
  it('sends the progress-only commits of several ranges made within one tick as one commitChunks call, each with its outcome', async () => {
    const t = await rig(3);
    const [r0, r1, r2] = t.ranges as [LeasedRange, LeasedRange, LeasedRange];
    const outcomes = Promise.all([
      t.c.ledger.commitChunk(t.progress(r0, 10, 15)),
      t.c.ledger.commitChunk(t.progress(r1, 10, 12)),
      // A stale view of r2 (it stands at 10): refused by the ledger, the others applied all the same.
      t.c.ledger.commitChunk(t.progress(r2, 11, 20)),
    ]);
    await advance(TICK_MS - 1);
    expect(t.commitChunks).not.toHaveBeenCalled();
    await advance(1);
    expect(await outcomes).toEqual(['applied', 'applied', 'lease-lost']);
    expect(t.batches()).toEqual([
      [t.progress(r0, 10, 15), t.progress(r1, 10, 12), t.progress(r2, 11, 20)].map((p) => ({ ...p, nowMs: T0 })),
    ]);
    expect([t.stored(r0).progress, t.stored(r1).progress, t.stored(r2).progress]).toEqual([15, 12, 10]);
    expect([t.committed(r0), t.committed(r1), t.committed(r2)]).toEqual([15, 12, 10]);
    expect(t.stored(r0).leaseExpiresAtMs).toBe(T0 + LEASE_MS);
    expect(t.c.stats).toMatchObject({ batches: 1, commits: 3, heartbeats: 0 });
  });

  it('sends commits made in different ticks in different calls, and a range commits again once its commit went out', async () => {
    const t = await rig(2);
    const [r0, r1] = t.ranges as [LeasedRange, LeasedRange];
    const first = t.c.ledger.commitChunk(t.progress(r0, 10, 11));
    await advance(TICK_MS);
    const second = [t.c.ledger.commitChunk(t.progress(r0, 11, 12)), t.c.ledger.commitChunk(t.progress(r1, 10, 13))];
    await advance(TICK_MS);
    expect(await Promise.all([first, ...second])).toEqual(['applied', 'applied', 'applied']);
    expect(t.batches().map((b) => b.map((i) => [i.range.partition, i.to]))).toEqual([
      [[0, 11]],
      [
        [0, 12],
        [1, 13],
      ],
    ]);
  });

  it('refuses a second commit of a range while its first is queued (a range commits one batch at a time)', async () => {
    const t = await rig(1);
    const [r0] = t.ranges as [LeasedRange];
    const first = t.c.ledger.commitChunk(t.progress(r0, 10, 15));
    await expect(t.c.ledger.commitChunk(t.progress(r0, 15, 20))).rejects.toBeInstanceOf(ValidationError);
    await advance(TICK_MS);
    expect(await first).toBe('applied');
    expect(t.batches()).toHaveLength(1);
    expect(t.stored(r0).progress).toBe(15);
  });

  it('rejects every commit of a tick whose commitChunks call fails', async () => {
    const t = await rig(2);
    const [r0, r1] = t.ranges as [LeasedRange, LeasedRange];
    t.commitChunks.mockRejectedValueOnce(new Error('throttled'));
    const outcomes = [t.c.ledger.commitChunk(t.progress(r0, 10, 15)), t.c.ledger.commitChunk(t.progress(r1, 10, 15))];
    const settled = Promise.allSettled(outcomes);
    await advance(TICK_MS);
    expect((await settled).map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect(t.stored(r0).progress).toBe(10);
  });

  it('sends a commit with sink writes at once on its own through commitChunk; progress commits wait for the tick', async () => {
    const t = await rig(2);
    const [r0, r1] = t.ranges as [LeasedRange, LeasedRange];
    const withWrites = t.c.ledger.commitChunk({ ...t.progress(r0, 10, 14), sinkWrites: [sinkWrite('a'), sinkWrite('b')] });
    const plain = t.c.ledger.commitChunk(t.progress(r1, 10, 11));
    await advance(TICK_MS - 1);
    // A transaction of its own either way: waiting for the tick would only add latency.
    expect(t.commitChunk).toHaveBeenCalledTimes(1);
    expect(await withWrites).toBe('applied');
    expect(t.commitChunks).not.toHaveBeenCalled();
    await advance(1);
    expect(await Promise.all([withWrites, plain])).toEqual(['applied', 'applied']);
    const own = t.commitChunk.mock.calls.map(([input]) => input).filter((i) => i.sinkWrites?.length);
    expect(own).toEqual([{ ...t.progress(r0, 10, 14), nowMs: T0, sinkWrites: [sinkWrite('a'), sinkWrite('b')] }]);
    // The batch holds r1's progress alone: r0's commit is neither in it nor given a heartbeat.
    expect(t.batches().map((b) => b.map((i) => i.range.partition))).toEqual([[1]]);
    expect(t.ledger.store(S).sinkWrites).toEqual([sinkWrite('a'), sinkWrite('b')]);
    expect([t.stored(r0).progress, t.committed(r0)]).toEqual([14, 14]);
    expect(t.c.stats).toMatchObject({ ownCommits: 1, commits: 1, batches: 1 });
  });
});

describe('commit coalescer: heartbeats', () => {
  it('renews the leases of idle held ranges a third of the lease after their last write, and not before, in one call', async () => {
    const t = await rig(3);
    await advance(THIRD - TICK_MS);
    expect(t.heartbeats()).toEqual([]);
    await advance(TICK_MS);
    expect(t.batches()).toEqual([t.ranges.map((r) => ({ range: r, expectProgress: 10, to: 10, nowMs: T0 + THIRD, leaseMs: LEASE_MS }))]);
    for (const r of t.ranges) expect(t.stored(r).leaseExpiresAtMs).toBe(T0 + THIRD + LEASE_MS);
    // The next one a third of the lease after this one.
    await advance(THIRD - TICK_MS);
    expect(t.batches()).toHaveLength(1);
    await advance(TICK_MS);
    expect(t.batches()).toHaveLength(2);
    expect(t.c.stats.heartbeats).toBe(6);
    expect(t.lost).toEqual([]);
  });

  it('counts a commit as a write: a held range that commits keeps its heartbeat a third of the lease after its last commit', async () => {
    const t = await rig(2);
    const [r0, r1] = t.ranges as [LeasedRange, LeasedRange];
    await advance(THIRD / 2);
    const c = t.c.ledger.commitChunk(t.progress(r0, 10, 17));
    await advance(TICK_MS);
    expect(await c).toBe('applied');
    const committedAt = since();
    await advance(THIRD - committedAt);
    // r1 (idle since it was held) is due; r0 wrote half a third ago.
    expect(t.heartbeats()).toEqual([[1, THIRD, 10]]);
    await advance(committedAt + THIRD - since() - 1);
    expect(t.heartbeats().filter(([p]) => p === 0)).toEqual([]);
    await advance(TICK_MS);
    // With the progress it committed.
    expect(t.heartbeats().filter(([p]) => p === 0)).toEqual([[0, expect.any(Number), 17]]);
    expect(t.stored(r0).progress).toBe(17);
    expect(t.stored(r1).leaseExpiresAtMs).toBeGreaterThan(T0 + LEASE_MS);
    expect(t.lost).toEqual([]);
  });

  it('a busy range that commits more often than a third of its lease gets no heartbeat at all', async () => {
    const t = await rig(1);
    const [r0] = t.ranges as [LeasedRange];
    let at = 10;
    for (let i = 0; i < 10; i++) {
      const c = t.c.ledger.commitChunk(t.progress(r0, at, at + 1));
      await advance(THIRD / 2);
      expect(await c).toBe('applied');
      at += 1;
    }
    expect(t.heartbeats()).toEqual([]);
    expect(t.c.stats.heartbeats).toBe(0);
  });

  it.each([
    {
      write: 'a commit with sink writes',
      slow: 'commitChunk' as const,
      send: (t: Awaited<ReturnType<typeof rig>>, r: LeasedRange) =>
        t.c.ledger.commitChunk({ ...t.progress(r, 10, 20), sinkWrites: [sinkWrite('a')] }),
      progressAfter: 20,
    },
    {
      write: 'a failure record (failRange)',
      slow: 'failRange' as const,
      send: (t: Awaited<ReturnType<typeof rig>>, r: LeasedRange) =>
        t.c.ledger.failRange({ range: r, status: 'failed', error: 'x', nowMs: Date.now() }),
      progressAfter: undefined,
    },
  ])('sends no heartbeat of a range while $write of it is in flight', async ({ slow, send, progressAfter }) => {
    const t = await rig(2);
    const [r0] = t.ranges as [LeasedRange];
    const g = gate();
    const original = t.real[slow] as (input: unknown) => Promise<'applied' | 'lease-lost'>;
    const slowed = jest.spyOn(t.ledger, slow) as unknown as jest.SpyInstance<
      Promise<'applied' | 'lease-lost'>,
      [{ sinkWrites?: unknown[] }]
    >;
    slowed.mockImplementation(async (input) => {
      if (slow === 'commitChunk' && !input.sinkWrites?.length) return original(input);
      await g.opened;
      return original(input);
    });
    await advance(THIRD / 2);
    const write = send(t, r0);
    await advance(3 * THIRD);
    // r1 keeps getting its heartbeats meanwhile; r0 none, its write being out.
    expect(t.heartbeats().filter(([p]) => p === 1).length).toBeGreaterThanOrEqual(3);
    expect(t.heartbeats().filter(([p]) => p === 0)).toEqual([]);
    g.open();
    await advance(0);
    expect(await write).toBe('applied');
    const doneAt = since();
    if (progressAfter === undefined) {
      // A failed range is the segment's to drop: no heartbeat either way once it is dropped.
      t.c.drop(r0);
      await advance(2 * THIRD);
      expect(t.heartbeats().filter(([p]) => p === 0)).toEqual([]);
    } else {
      await advance(THIRD);
      expect(t.heartbeats().filter(([p]) => p === 0)).toEqual([[0, expect.any(Number), progressAfter]]);
      expect(t.heartbeats().find(([p]) => p === 0)![1]).toBeGreaterThanOrEqual(doneAt + THIRD - TICK_MS);
    }
    expect(t.lost).toEqual([]);
  });

  it('holds a write of a range back while its heartbeat is out, and sends it after', async () => {
    const t = await rig(1);
    const [r0] = t.ranges as [LeasedRange];
    const g = gate();
    const original = t.real.commitChunks;
    t.commitChunks.mockImplementation(async (inputs) => {
      await g.opened;
      return original(inputs);
    });
    const release = jest.spyOn(t.ledger, 'releaseRange');
    await advance(THIRD);
    expect(t.commitChunks).toHaveBeenCalledTimes(1);
    const released = t.c.ledger.releaseRange({ range: r0, nowMs: Date.now(), progressed: false, handover: true });
    await advance(TICK_MS * 3);
    expect(release).not.toHaveBeenCalled();
    g.open();
    expect(await released).toBe('applied');
    expect(release).toHaveBeenCalledTimes(1);
    expect(t.stored(r0)).toMatchObject({ status: 'planned', leaseExpiresAtMs: 0 });
    expect(t.lost).toEqual([]);
  });

  it('holds a write back that starts while the tick asks the store clock for its heartbeats', async () => {
    const clockGate = gate();
    const t = await rig(1, {
      storeClock: async () => {
        await clockGate.opened;
        return Date.now();
      },
    });
    const [r0] = t.ranges as [LeasedRange];
    /** Starts and ends of the ledger's writes of r0, in order. */
    const events: string[] = [];
    const releaseGate = gate();
    const release = t.real.releaseRange;
    jest.spyOn(t.ledger, 'releaseRange').mockImplementation(async (input) => {
      events.push('release');
      await releaseGate.opened;
      events.push('release done');
      return release(input);
    });
    const commits = t.real.commitChunks;
    t.commitChunks.mockImplementation(async (inputs) => {
      events.push('heartbeat');
      const out = await commits(inputs);
      events.push('heartbeat done');
      return out;
    });
    await advance(THIRD);
    // The tick that owes r0 a heartbeat waits for the store clock; the segment releases r0 meanwhile.
    const released = t.c.ledger.releaseRange({ range: r0, nowMs: Date.now(), progressed: false, handover: true });
    await advance(0);
    clockGate.open();
    await advance(0);
    releaseGate.open();
    expect(await released).toBe('applied');
    await advance(TICK_MS);
    // One write of r0 at a time: the heartbeat (due first) then the release, or the release alone.
    expect([
      ['heartbeat', 'heartbeat done', 'release', 'release done'],
      ['release', 'release done'],
    ]).toContainEqual(events);
    expect(t.stored(r0)).toMatchObject({ status: 'planned', leaseExpiresAtMs: 0 });
    expect(t.lost).toEqual([]);
  });

  it('a store clock that fails at a tick owing heartbeats fails that tick’s commits, leaving none waiting', async () => {
    let fail = false;
    const t = await rig(2, {
      storeClock: async () => {
        if (fail) throw new Error('store clock unreachable');
        return Date.now();
      },
    });
    const [r0] = t.ranges as [LeasedRange];
    await advance(THIRD - TICK_MS);
    fail = true;
    const settled = Promise.allSettled([t.c.ledger.commitChunk(t.progress(r0, 10, 15))]);
    let done = false;
    void settled.then(() => (done = true));
    await advance(TICK_MS);
    expect(done).toBe(true);
    expect((await settled)[0]?.status).toBe('rejected');
  });

  it('a range dropped while its heartbeat waits for the store clock is not reported lost', async () => {
    const clockGate = gate();
    const t = await rig(2, {
      storeClock: async () => {
        await clockGate.opened;
        return Date.now();
      },
    });
    const [r0] = t.ranges as [LeasedRange];
    await advance(THIRD);
    // Given up meanwhile (its partition stopped): the heartbeat goes out, but the range is no longer held.
    expect(await t.ledger.releaseRange({ range: r0, nowMs: Date.now(), progressed: false })).toBe('applied');
    t.c.drop(r0);
    clockGate.open();
    await advance(TICK_MS);
    expect(t.heartbeats().map(([p]) => p)).toEqual([0, 1]);
    expect(t.lost).toEqual([]);
    await advance(2 * THIRD);
    expect(t.heartbeats().map(([p]) => p)).toEqual([0, 1, 1, 1]);
  });

  it('reports a range whose lease a heartbeat finds taken to onLost, and stops keeping it', async () => {
    const t = await rig(2);
    const [r0, r1] = t.ranges as [LeasedRange, LeasedRange];
    // B takes r0 once A's lease has run out in the store's eyes (A's holder stalled).
    const b = await t.ledger.takeRangeLease({
      stream: S,
      topic: 't',
      partition: 0,
      from: 10,
      until: OPEN_UNTIL,
      leaseToken: 'B',
      nowMs: T0 + LEASE_MS + 1,
      leaseMs: LEASE_MS,
      maxAttempts: 3,
    });
    expect(b.kind).toBe('taken');
    await advance(THIRD);
    expect(t.lost).toEqual([r0]);
    expect(t.stored(r0)).toMatchObject({ leaseToken: 'B', leaseExpiresAtMs: T0 + 2 * LEASE_MS + 1, progress: 10 });
    await advance(3 * THIRD);
    expect(t.heartbeats().filter(([p]) => p === 0)).toHaveLength(1);
    expect(t.heartbeats().filter(([p]) => p === 1)).toHaveLength(4);
    expect(t.lost).toEqual([r0]);
    expect(t.stored(r1).leaseToken).toBe('A');
  });

  it('sends no heartbeat for a range dropped', async () => {
    const t = await rig(2);
    t.c.drop(t.ranges[0]!);
    await advance(2 * THIRD);
    expect(t.heartbeats().map(([p]) => p)).toEqual([1, 1]);
  });

  // A heartbeat renews the lease whatever batch is pending (commitChunkSteps): a segment that took a
  // range over with a batch pending, or whose marked writes take long, keeps its lease meanwhile.
  it('keeps the lease of a range with a folded batch pending, rather than reporting it lost', async () => {
    const t = await rig(1);
    const [r0] = t.ranges as [LeasedRange];
    expect(await t.c.ledger.beginBatch({ range: r0, expectProgress: 10, until: 20, nowMs: Date.now(), leaseMs: LEASE_MS })).toBe('applied');
    await advance(THIRD + TICK_MS);
    expect(t.lost).toEqual([]);
    expect(t.stored(r0).leaseExpiresAtMs).toBeGreaterThan(T0 + LEASE_MS);
  });
});

describe('commit coalescer: close', () => {
  it('sends what is queued at once, then stops ticking', async () => {
    const t = await rig(3);
    const [r0, r1, r2] = t.ranges as [LeasedRange, LeasedRange, LeasedRange];
    const outcomes = Promise.all([
      t.c.ledger.commitChunk(t.progress(r0, 10, 12)),
      t.c.ledger.commitChunk(t.progress(r1, 10, 13)),
      t.c.ledger.commitChunk({ ...t.progress(r2, 10, 14), sinkWrites: [sinkWrite('a')] }),
    ]);
    await advance(TICK_MS / 2);
    await t.c.close();
    expect(await outcomes).toEqual(['applied', 'applied', 'applied']);
    expect(t.batches().map((b) => b.map((i) => [i.range.partition, i.to]))).toEqual([
      [
        [0, 12],
        [1, 13],
      ],
    ]);
    expect([t.stored(r0).progress, t.stored(r1).progress, t.stored(r2).progress]).toEqual([12, 13, 14]);
    const ticks = t.c.stats.ticks;
    await advance(5 * LEASE_MS);
    // No tick, no heartbeat of the ranges it held.
    expect(t.c.stats.ticks).toBe(ticks);
    expect(t.batches()).toHaveLength(1);
  });

  it('waits for the write of a tick in flight, and a commit after close goes out at once on its own', async () => {
    const t = await rig(1);
    const [r0] = t.ranges as [LeasedRange];
    const g = gate();
    const original = t.real.commitChunks;
    t.commitChunks.mockImplementationOnce(async (inputs) => {
      await g.opened;
      return original(inputs);
    });
    const first = t.c.ledger.commitChunk(t.progress(r0, 10, 12));
    await advance(TICK_MS);
    let closed = false;
    const closing = t.c.close().then(() => (closed = true));
    await advance(TICK_MS);
    expect(closed).toBe(false);
    g.open();
    await closing;
    expect(await first).toBe('applied');
    expect(await t.c.ledger.commitChunk(t.progress(r0, 12, 13))).toBe('applied');
    expect(t.stored(r0).progress).toBe(13);
  });
});
