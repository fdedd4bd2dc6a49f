/**
 * The concurrency cap (decide.ts with concurrency-cap.ts, pure): a stream's `maxConcurrency` and its
 * share of the processor concurrency, which open ranges hold a slot, which due partitions get the
 * free slots, and, over random runs, that the cap holds, no partition starves and nothing is lost.
 */
import fc from 'fast-check';
import { parseStreamConfig, type StreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { ValidationError } from '../../../lib/errors';
import {
  admitPieces,
  bySlotPriority,
  occupiedSlots,
  openRangeCap,
  plannerProcessorConcurrency,
  processorConcurrencyFromEnv,
  processorShare,
  streamProcessorConcurrency,
  type ProcessorConcurrency,
} from '../../../lib/planner/concurrency-cap';
import { decidePlan, type PlanDecision } from '../../../lib/planner/decide';
import type { PartitionState, RangeState } from '../../../lib/ports/ledger-state';
import { prng } from '../../chaos/prng';
import { partitionFixture } from '../../contract/ledger.contract';

const NOW = 1_000_000;
const LEASE_MS = 960_000;

const config = (over: Partial<StreamConfigInput> = {}): StreamConfig =>
  parseStreamConfig({ id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['t'], triggerIntervalMs: 1000, ...over }, 'test');

const partition = (n: number, over: Partial<PartitionState> = {}): PartitionState => ({
  ...partitionFixture('s1', 't', n),
  firstSeenAtMs: 1,
  ...over,
});

const range = (n: number, from: number, until: number, over: Partial<RangeState> = {}): RangeState => ({
  stream: 's1',
  topic: 't',
  partition: n,
  from,
  until,
  status: 'planned',
  epoch: 1,
  plannedAtMs: NOW - 1000,
  dispatchedAtMs: NOW - 1000,
  dispatches: 1,
  attempts: 0,
  progress: from,
  ...over,
});

describe('the cap', () => {
  it.each([
    [16, 4, 4],
    [10, 3, 3],
    [7, 1, 7],
    [2, 5, 1],
    [1, 1, 1],
  ])('a share of %i processors over %i streams is %i', (limit, streams, share) => {
    expect(processorShare({ limit, streams })).toBe(share);
  });

  it.each<[string, number | undefined, ProcessorConcurrency | undefined, number | undefined]>([
    ['neither: no cap', undefined, undefined, undefined],
    ['maxConcurrency alone', 3, undefined, 3],
    ['the share alone', undefined, { limit: 16, streams: 4 }, 4],
    ['maxConcurrency below the share', 3, { limit: 16, streams: 4 }, 3],
    ['the share below maxConcurrency', 8, { limit: 16, streams: 4 }, 4],
  ])('%s', (_name, maxConcurrency, processor, cap) => {
    expect(openRangeCap(maxConcurrency, processor)).toBe(cap);
  });

  it('reads PROCESSOR_RESERVED_CONCURRENCY, and refuses what is not a whole number >= 1', () => {
    expect(processorConcurrencyFromEnv({}, 3)).toBeUndefined();
    expect(processorConcurrencyFromEnv({ PROCESSOR_RESERVED_CONCURRENCY: '' }, 3)).toBeUndefined();
    expect(processorConcurrencyFromEnv({ PROCESSOR_RESERVED_CONCURRENCY: ' 12 ' }, 3)).toEqual({ limit: 12, streams: 3 });
    for (const bad of ['0', '1.5', 'ten', '-2']) {
      expect(() => processorConcurrencyFromEnv({ PROCESSOR_RESERVED_CONCURRENCY: bad }, 3)).toThrow(ValidationError);
      expect(() => processorConcurrencyFromEnv({ PROCESSOR_RESERVED_CONCURRENCY: bad }, 3)).toThrow(/PROCESSOR_RESERVED_CONCURRENCY/);
    }
  });

  it("with a segments function, continuous streams neither share the processor's concurrency nor are capped by it", () => {
    const streams = [config({ id: 'a' }), config({ id: 'b' }), config({ id: 'live', continuous: {} })];
    const reserved = { PROCESSOR_RESERVED_CONCURRENCY: '12' };
    // No segments function (SEGMENT_FUNCTION_NAME unset): every stream runs on the processor, as before.
    const shared = plannerProcessorConcurrency(reserved, streams);
    expect(shared).toEqual({ limit: 12, streams: 3 });
    expect(streamProcessorConcurrency(shared, 'live')).toBe(shared);
    const apart = plannerProcessorConcurrency({ ...reserved, SEGMENT_FUNCTION_NAME: 'svc-dev-segments' }, streams);
    expect(apart).toEqual({ limit: 12, streams: 2, exempt: ['live'] });
    expect(streamProcessorConcurrency(apart, 'a')).toBe(apart);
    expect(processorShare(apart!)).toBe(6);
    expect(streamProcessorConcurrency(apart, 'live')).toBeUndefined();
    expect(plannerProcessorConcurrency({ SEGMENT_FUNCTION_NAME: 'svc-dev-segments' }, streams)).toBeUndefined();
  });
});

describe('slots held by open ranges', () => {
  const at = { nowMs: NOW, leaseMs: LEASE_MS };
  const live = (...ps: PartitionState[]) => new Map(ps.map((p) => [`t/${p.partition}`, p]));
  it.each<[string, RangeState[], PartitionState[], number]>([
    [
      'planned, leased and failed ranges of live partitions',
      [range(0, 0, 10), range(1, 0, 5, { status: 'leased' }), range(2, 0, 5, { status: 'failed' })],
      [partition(0, { nextFrom: 10 }), partition(1, { nextFrom: 5 }), partition(2, { nextFrom: 5 })],
      3,
    ],
    ['a parked range holds none (nothing runs it)', [range(0, 0, 10, { status: 'parked' })], [partition(0, { nextFrom: 10 })], 0],
    [
      'a range at or below the committed offset is done (the index lags)',
      [range(0, 0, 10, { status: 'leased' })],
      [partition(0, { committed: 10, nextFrom: 10 })],
      0,
    ],
    ['a partition in flight holds one while the index does not list its range yet', [], [partition(0, { nextFrom: 10 })], 1],
    [
      'every piece of a split partition',
      [range(0, 0, 5), range(0, 5, 10), range(0, 10, 15, { status: 'leased' })],
      [partition(0, { nextFrom: 15 })],
      3,
    ],
    [
      'a retired partition: only a live lease',
      [range(0, 0, 10, { status: 'leased', leaseExpiresAtMs: NOW + 1 }), range(1, 0, 10, { status: 'leased', leaseExpiresAtMs: NOW - 1 })],
      [],
      1,
    ],
    [
      'a retired partition: a range sent within the lease time',
      [range(0, 0, 10), range(1, 0, 10, { dispatchedAtMs: NOW - LEASE_MS - 1 }), range(2, 0, 10, { status: 'failed' })],
      [],
      1,
    ],
    [
      'a closed incarnation of a live partition counts as another partition',
      [range(0, 0, 10, { status: 'failed' })],
      [partition(0, { incarnation: 1 })],
      0,
    ],
  ])('%s', (_name, open, parts, held) => {
    expect(occupiedSlots(open, live(...parts), at)).toBe(held);
  });
});

describe('slot order', () => {
  it('waiting longest first, then most lag, then by topic and partition', () => {
    const claims = [
      { topic: 'b', partition: 0, waitingSinceMs: 5, lag: 1 },
      { topic: 'a', partition: 2, waitingSinceMs: 5, lag: 1 },
      { topic: 'a', partition: 1, waitingSinceMs: 5, lag: 1 },
      { topic: 'a', partition: 0, waitingSinceMs: 5, lag: 9 },
      { topic: 'c', partition: 0, waitingSinceMs: 1, lag: 1 },
    ];
    expect(bySlotPriority(claims).map((c) => `${c.topic}/${c.partition}`)).toEqual(['c/0', 'a/0', 'a/1', 'a/2', 'b/0']);
  });

  it.each<[number, string[][]]>([
    [0, [[], [], []]],
    [2, [['a1'], ['b1'], []]],
    [4, [['a1', 'a2'], ['b1'], ['c1']]],
    [5, [['a1', 'a2'], ['b1'], ['c1', 'c2']]],
    [9, [['a1', 'a2', 'a3'], ['b1'], ['c1', 'c2']]],
  ])('admits pieces round by round into %i slots', (free, admitted) => {
    expect(admitPieces([['a1', 'a2', 'a3'], ['b1'], ['c1', 'c2']], free)).toEqual(admitted);
  });
});

type Case = {
  name: string;
  stream?: Partial<StreamConfigInput>;
  processor?: ProcessorConcurrency;
  partitions: PartitionState[];
  open?: RangeState[];
  /** Latest offset of every partition. */
  latest?: number;
  planned: Array<[number, number, number]>;
  waiting: number[];
  note?: RegExp;
  redispatched?: number;
};

function decide(c: Pick<Case, 'stream' | 'processor' | 'partitions' | 'open' | 'latest'>): PlanDecision {
  return decidePlan({
    stream: config(c.stream),
    nowMs: NOW,
    epoch: 3,
    initial: false,
    known: c.partitions,
    discovered: [{ topic: 't', partitions: c.partitions.map((p) => p.partition) }],
    offsets: c.partitions.map((p) => ({ topic: 't', partition: p.partition, earliest: 0, latest: c.latest ?? 100 })),
    openRanges: c.open ?? [],
    confirmedEpoch: 2,
    processorConcurrency: c.processor,
  });
}

const six = (over: (n: number) => Partial<PartitionState> = () => ({})) => [0, 1, 2, 3, 4, 5].map((n) => partition(n, over(n)));

describe('decidePlan under a cap', () => {
  it.each<Case>([
    {
      name: 'no cap: every due partition is planned',
      partitions: six(),
      planned: [0, 1, 2, 3, 4, 5].map((n) => [n, 0, 100]),
      waiting: [],
    },
    {
      name: 'maxConcurrency 2, nothing open: the two waiting longest',
      stream: { maxConcurrency: 2 },
      partitions: six((n) => ({ lastPlannedAtMs: [50, 10, 40, 20, 60, 30][n] })),
      planned: [
        [1, 0, 100],
        [3, 0, 100],
      ],
      waiting: [0, 2, 4, 5],
      note: /^0 of 2 ranges open \(maxConcurrency\): planned when a range finishes$/,
    },
    {
      name: 'the same wait: the one with the most lag',
      stream: { maxConcurrency: 1 },
      partitions: six((n) => ({ lastPlannedAtMs: 10, committed: n * 10, nextFrom: n * 10 })),
      planned: [[0, 0, 100]],
      waiting: [1, 2, 3, 4, 5],
    },
    {
      name: 'never planned: waiting since registration',
      stream: { maxConcurrency: 1 },
      partitions: [partition(0, { lastPlannedAtMs: 5 }), partition(1, { firstSeenAtMs: 3 })],
      planned: [[1, 0, 100]],
      waiting: [0],
    },
    {
      name: 'ranges in flight hold their slots: 3 - 2 = 1 free',
      stream: { maxConcurrency: 3 },
      partitions: six((n) => (n < 2 ? { nextFrom: 50 } : { lastPlannedAtMs: 10 - n })),
      open: [range(0, 0, 50), range(1, 0, 50, { status: 'leased', leaseExpiresAtMs: NOW + 1 })],
      planned: [[5, 0, 100]],
      waiting: [2, 3, 4],
      note: /^2 of 3 ranges open/,
    },
    {
      name: 'the share of the processors, lower than maxConcurrency',
      stream: { maxConcurrency: 5 },
      processor: { limit: 6, streams: 3 },
      partitions: six(),
      planned: [
        [0, 0, 100],
        [1, 0, 100],
      ],
      waiting: [2, 3, 4, 5],
      note: /^0 of 2 ranges open \(the stream's share of 6 processors over 3 stream\(s\)\)/,
    },
    {
      name: 'cap reached: nothing new, but a failed range is still sent again',
      stream: { maxConcurrency: 2 },
      partitions: six((n) => (n < 2 ? { nextFrom: 50 } : {})),
      open: [range(0, 0, 50, { status: 'failed', attempts: 1 }), range(1, 0, 50)],
      planned: [],
      waiting: [2, 3, 4, 5],
      redispatched: 1,
    },
    {
      name: 'a parked range holds no slot',
      stream: { maxConcurrency: 1 },
      partitions: [partition(0, { nextFrom: 50 }), partition(1)],
      open: [range(0, 0, 50, { status: 'parked' })],
      planned: [[1, 0, 100]],
      waiting: [],
    },
    {
      name: 'split pieces fill the free slots round by round, each a prefix of its partition',
      stream: { maxConcurrency: 6, split: { orderInsensitive: true, maxRangeSize: 25 } },
      partitions: [partition(0, { lastPlannedAtMs: 1 }), partition(1, { lastPlannedAtMs: 2, nextFrom: 50 })],
      open: [range(1, 0, 50)],
      planned: [
        [0, 0, 25],
        [0, 25, 50],
        [0, 50, 75],
        [1, 50, 75],
        [1, 75, 100],
      ],
      waiting: [],
    },
    {
      name: 'minPartitions asks for no more pieces than free slots',
      stream: { maxConcurrency: 3, split: { orderInsensitive: true, minPartitions: 12 } },
      partitions: [partition(0)],
      latest: 90,
      planned: [
        [0, 0, 30],
        [0, 30, 60],
        [0, 60, 90],
      ],
      waiting: [],
    },
  ])('$name', (c) => {
    const d = decide(c);
    expect(d.newRanges.map((r) => [r.partition, r.from, r.until])).toEqual(c.planned);
    expect(d.recordsPlanned).toBe(c.planned.reduce((s, [, from, until]) => s + until - from, 0));
    const waiting = d.partitions.filter((p) => p.action === 'waiting-for-concurrency');
    expect(waiting.map((p) => p.partition)).toEqual(c.waiting);
    if (c.note) for (const p of waiting) expect(p.note).toMatch(c.note);
    expect(d.redispatch).toHaveLength(c.redispatched ?? 0);
  });

  it('keeps the data-loss note of a partition that waits', () => {
    const d = decidePlan({
      stream: config({ maxConcurrency: 1, failOnDataLoss: false }),
      nowMs: NOW,
      epoch: 3,
      initial: false,
      known: [partition(0, { lastPlannedAtMs: 1 }), partition(1, { lastPlannedAtMs: 2 })],
      discovered: [{ topic: 't', partitions: [0, 1] }],
      offsets: [
        { topic: 't', partition: 0, earliest: 0, latest: 10 },
        { topic: 't', partition: 1, earliest: 5, latest: 10 },
      ],
      openRanges: [],
    });
    expect(d.newRanges.map((r) => r.partition)).toEqual([0]);
    expect(d.writes.filter((w) => w.kind === 'record-data-loss')).toHaveLength(1);
    expect(d.partitions[1]).toMatchObject({
      action: 'waiting-for-concurrency',
      note: expect.stringMatching(/^lost \[0, 5\); 0 of 1 ranges open/),
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Random runs: a planner tick per second, Kafka growing, processors finishing, failing or
// holding ranges at random, under random caps.

type World = { now: number; parts: PartitionState[]; latest: number[]; ranges: RangeState[] };

const isOpen = (r: RangeState) => r.status !== 'done' && r.status !== 'parked';

/** One planner run: the decision applied as the ledger would (ranges written, re-dispatches marked). */
function tick(stream: StreamConfig, processor: ProcessorConcurrency | undefined, w: World): PlanDecision {
  const d = decidePlan({
    stream,
    nowMs: w.now,
    epoch: 1,
    initial: false,
    known: w.parts.map((p) => ({ ...p })),
    discovered: [{ topic: 't', partitions: w.parts.map((p) => p.partition) }],
    offsets: w.parts.map((p) => ({ topic: 't', partition: p.partition, earliest: 0, latest: w.latest[p.partition]! })),
    openRanges: w.ranges.filter((r) => r.status !== 'done').map((r) => ({ ...r })),
    confirmedEpoch: 1,
    processorConcurrency: processor,
  });
  for (const wr of d.writes) {
    if (wr.kind !== 'plan-range') continue;
    const p = w.parts[wr.range.partition]!;
    expect(wr.range.from).toBe(p.nextFrom);
    p.nextFrom = wr.range.until;
    p.lastPlannedAtMs = wr.range.plannedAtMs;
    w.ranges.push({ ...wr.range });
  }
  for (const { range: again } of d.redispatch) {
    const r = w.ranges.find((x) => x.partition === again.partition && x.from === again.from)!;
    Object.assign(r, { dispatchedAtMs: w.now, dispatches: r.dispatches + 1, redispatchedAtAttempts: r.attempts });
  }
  return d;
}

/** Processors: each range one was sent to finishes, fails, or takes its lease and runs on. */
function processors(w: World, roll: () => number, odds: { done: number; fail: number }): void {
  for (const r of w.ranges) {
    const sent = r.status === 'planned' || r.status === 'leased' || (r.status === 'failed' && r.redispatchedAtAttempts === r.attempts);
    if (!sent) continue;
    const x = roll();
    const taking = r.status !== 'leased';
    if (x < odds.done) Object.assign(r, { status: 'done', progress: r.until, attempts: r.attempts + (taking ? 1 : 0) });
    else if (x < odds.done + odds.fail)
      Object.assign(r, { status: 'failed', leaseExpiresAtMs: 0, attempts: r.attempts + (taking ? 1 : 0) });
    else if (taking && x < odds.done + odds.fail + 0.2)
      Object.assign(r, { status: 'leased', leaseExpiresAtMs: w.now + LEASE_MS, attempts: r.attempts + 1 });
  }
  // Committed offsets follow the finished ranges in order (completeRange, or the planner's repair).
  for (const p of w.parts) {
    for (let r = w.ranges.find((x) => x.partition === p.partition && x.from === p.committed && x.status === 'done'); r;) {
      p.committed = r.until;
      r = w.ranges.find((x) => x.partition === p.partition && x.from === p.committed && x.status === 'done');
    }
  }
}

describe('random runs under a cap', () => {
  it('never exceed the cap, serve the longest waiting first, starve no partition and lose nothing', () => {
    fc.assert(
      fc.property(
        fc.record({
          seed: fc.integer(),
          partitions: fc.integer({ min: 1, max: 6 }),
          maxConcurrency: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
          processor: fc.option(fc.record({ limit: fc.integer({ min: 1, max: 12 }), streams: fc.integer({ min: 1, max: 4 }) }), {
            nil: undefined,
          }),
          split: fc.option(fc.integer({ min: 3, max: 40 }), { nil: undefined }),
          ratePerSec: fc.option(fc.integer({ min: 5, max: 60 }), { nil: undefined }),
          ticks: fc.integer({ min: 5, max: 40 }),
          odds: fc.record({ done: fc.double({ min: 0, max: 0.7, noNaN: true }), fail: fc.double({ min: 0, max: 0.2, noNaN: true }) }),
        }),
        (c) => {
          const stream = config({
            maxConcurrency: c.maxConcurrency,
            maxAttempts: 100,
            ...(c.ratePerSec ? { maxRatePerPartition: c.ratePerSec } : {}),
            ...(c.split ? { split: { orderInsensitive: true, maxRangeSize: c.split } } : {}),
          });
          const cap = openRangeCap(c.maxConcurrency, c.processor);
          const roll = prng(c.seed);
          const w: World = {
            now: NOW,
            parts: Array.from({ length: c.partitions }, (_, n) => partition(n)),
            latest: Array.from({ length: c.partitions }, () => 0),
            ranges: [],
          };
          const step = (grow: boolean, odds: { done: number; fail: number }) => {
            w.now += 1000;
            if (grow) w.latest = w.latest.map((l) => l + Math.floor(roll() * 20));
            const openBefore = w.ranges.filter(isOpen).length;
            const d = tick(stream, c.processor, w);
            if (cap !== undefined) {
              expect(d.newRanges.length).toBeLessThanOrEqual(Math.max(0, cap - openBefore));
              expect(w.ranges.filter(isOpen).length).toBeLessThanOrEqual(cap);
            }
            // The slots went to the partitions waiting longest.
            const waiting = d.partitions.filter((p) => p.action === 'waiting-for-concurrency').map((p) => p.partition);
            const granted = [...new Set(d.newRanges.map((r) => r.partition))];
            const longest = Math.min(...waiting.map((n) => waitedFrom.get(n)!));
            for (const g of granted) expect(waitedFrom.get(g)).toBeLessThanOrEqual(longest);
            for (const p of w.parts) waitedFrom.set(p.partition, p.lastPlannedAtMs ?? p.firstSeenAtMs);
            processors(w, roll, odds);
          };
          const waitedFrom = new Map(w.parts.map((p) => [p.partition, p.firstSeenAtMs]));
          for (let i = 0; i < c.ticks; i++) step(true, c.odds);
          // Kafka stops growing and processors finish what they are sent: everything drains.
          let ticks = 0;
          while (w.parts.some((p) => p.committed < w.latest[p.partition]!) && ticks++ < 5_000) step(false, { done: 1, fail: 0 });
          for (const p of w.parts) {
            expect(p.committed).toBe(w.latest[p.partition]);
            const mine = w.ranges.filter((r) => r.partition === p.partition).sort((a, b) => a.from - b.from);
            expect(mine.every((r) => r.status === 'done')).toBe(true);
            // The ranges tile [0, latest): no offset skipped or planned twice.
            expect(mine.map((r) => r.from)).toEqual([0, ...mine.slice(0, -1).map((r) => r.until)]);
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
