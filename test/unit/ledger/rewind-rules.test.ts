/** The rewind rules (ports/ledger-rules/rewind.ts): what blocks a rewind, what it removes, how the partition changes. */
import fc from 'fast-check';
import { changed, meets } from '../../../lib/ports/ledger-rules/item-step';
import {
  partitionChangedReason,
  rewindDeadLetters,
  rewindPartitionStep,
  rewindRanges,
  rewindScanFrom,
} from '../../../lib/ports/ledger-rules/rewind';
import type { RewindPartition } from '../../../lib/ports/ledger';
import type { PartitionState, RangeState, RangeStatus } from '../../../lib/ports/ledger-state';
import { partitionState, rangeState } from './states';
import { OPEN_UNTIL } from '../../../lib/ranges';

const range = (from: number, until: number, status: RangeStatus, extra: Partial<RangeState> = {}): RangeState =>
  rangeState(from, until, { status, ...extra });

const rewind = (to: number, committed: number, extra: Partial<RewindPartition> = {}): RewindPartition => ({
  topic: 't',
  partition: 0,
  expect: { committed, nextFrom: committed },
  to,
  ...extra,
});

describe('rewindScanFrom', () => {
  it.each([
    ['back', 10, 50, 10],
    ['forward', 80, 50, 50],
    ['in place', 50, 50, 50],
  ])('a rewind %s looks from the lower of the new cursor and the committed offset', (_what, to, committed, from) => {
    expect(rewindScanFrom(rewind(to, committed))).toBe(from);
  });
});

describe('rewindRanges', () => {
  it.each<[string, RangeStatus]>([
    ['planned', 'planned'],
    ['leased', 'leased'],
    ['failed', 'failed'],
  ])('a %s range at or after the scan start blocks the rewind and is named', (_what, status) => {
    const busy = range(20, 30, status);
    const plan = rewindRanges(rewind(0, 20), [range(0, 20, 'done'), busy]);
    expect(plan).toEqual({ blocked: busy, reason: `range t/0/20-30 is ${status}` });
  });

  it.each<[string, RangeState]>([
    ['before the scan start', range(0, 10, 'leased')],
    ['of another partition', range(20, 30, 'leased', { partition: 1 })],
    ['of another topic', range(20, 30, 'leased', { topic: 'u' })],
    ['of another incarnation', range(20, 30, 'leased', { incarnation: 1 })],
  ])('a range in flight %s does not block', (_what, other) => {
    expect(rewindRanges(rewind(10, 20), [other]).blocked).toBeUndefined();
  });

  it('abandons parked ranges from the scan start and removes finished ones from the new cursor', () => {
    const ranges = [range(0, 10, 'done'), range(10, 20, 'parked'), range(20, 30, 'done'), range(30, 40, 'parked'), range(40, 50, 'done')];
    // Forward from committed 10 to 30: 10-20 and 30-40 parked are abandoned; only 40-50 done lies at or after 30.
    expect(rewindRanges(rewind(30, 10), ranges)).toEqual({
      abandonParked: [ranges[1], ranges[3]],
      removeDone: [ranges[4]],
      endSegments: [],
    });
    // Back from committed 50 to 10: everything from 10 on goes.
    expect(rewindRanges(rewind(10, 50), ranges)).toEqual({
      abandonParked: [ranges[1], ranges[3]],
      removeDone: [ranges[2], ranges[4]],
      endSegments: [],
    });
  });

  it('keeps to the incarnation it names (absent = 0)', () => {
    const old = range(10, 20, 'done');
    const current = range(10, 20, 'done', { incarnation: 2 });
    expect(rewindRanges(rewind(0, 30, { incarnation: 2 }), [old, current])).toEqual({
      abandonParked: [],
      removeDone: [current],
      endSegments: [],
    });
    expect(rewindRanges(rewind(0, 30, { incarnation: 0 }), [old, current])).toEqual({
      abandonParked: [],
      removeDone: [old],
      endSegments: [],
    });
  });

  it('ends an open segment range of its incarnation wherever it starts, whatever its status; it never blocks', () => {
    const segment = (from: number, status: RangeStatus, extra = {}) => range(from, OPEN_UNTIL, status, extra);
    for (const status of ['planned', 'leased', 'failed'] as const) {
      const open = segment(0, status);
      const other = segment(0, status, { incarnation: 2 });
      // Rewound forward past where the segment started, and back before it: ended either way.
      expect(rewindRanges(rewind(500, 300), [open, other])).toEqual({ abandonParked: [], removeDone: [], endSegments: [open] });
      expect(rewindRanges(rewind(0, 300), [open])).toEqual({ abandonParked: [], removeDone: [], endSegments: [open] });
    }
  });

  it('drops the committed offset from its conditions while a segment runs (its commits move it), never the cursor', () => {
    const step = rewindPartitionStep({ ...rewind(10, 300), expect: { committed: 300, nextFrom: OPEN_UNTIL } });
    expect(step.when.some((w) => w.field === 'committed')).toBe(false);
    expect(step.when).toContainEqual({ field: 'nextFrom', is: OPEN_UNTIL });
    expect(rewindPartitionStep(rewind(10, 300)).when.some((w) => w.field === 'committed')).toBe(true);
  });

  it('never removes a range it does not look at, and blocks exactly when an open range lies there (property)', () => {
    const status = fc.constantFrom<RangeStatus>('planned', 'leased', 'done', 'failed', 'parked');
    const ranges = fc.array(fc.record({ from: fc.nat(100), len: fc.integer({ min: 1, max: 20 }), status, partition: fc.nat(1) }), {
      maxLength: 12,
    });
    fc.assert(
      fc.property(ranges, fc.nat(120), fc.nat(120), (specs, to, committed) => {
        const rs = specs.map((s) => range(s.from, s.from + s.len, s.status, { partition: s.partition }));
        const p = rewind(to, committed);
        const lo = rewindScanFrom(p);
        const looked = rs.filter((r) => r.partition === 0 && r.from >= lo);
        const plan = rewindRanges(p, rs);
        const open = looked.some((r) => r.status !== 'done' && r.status !== 'parked');
        expect(plan.blocked !== undefined).toBe(open);
        if (plan.blocked) return;
        for (const r of [...plan.abandonParked, ...plan.removeDone]) expect(looked).toContain(r);
        expect(plan.abandonParked.every((r) => r.status === 'parked')).toBe(true);
        expect(plan.removeDone.every((r) => r.status === 'done' && r.from >= to)).toBe(true);
        expect(plan.abandonParked.length).toBe(looked.filter((r) => r.status === 'parked').length);
      }),
    );
  });
});

describe('rewindDeadLetters', () => {
  const dead = (offset: number, extra: { topic?: string; partition?: number; incarnation?: number } = {}) => ({
    topic: 't',
    partition: 0,
    offset,
    ...extra,
  });

  it.each([
    ['before the new cursor', dead(9), false],
    ['at the new cursor', dead(10), true],
    ['after it', dead(99), true],
    ['of another partition', dead(20, { partition: 1 }), false],
    ['of another incarnation', dead(20, { incarnation: 1 }), false],
    ['of incarnation 0 written as 0', dead(20, { incarnation: 0 }), true],
  ])('a dead letter %s goes: %s', (_what, d, goes) => {
    expect(rewindDeadLetters(rewind(10, 50), [d])).toEqual(goes ? [d] : []);
  });
});

describe('rewindPartitionStep', () => {
  const partition = (extra: Partial<PartitionState> = {}): PartitionState => partitionState({ committed: 50, nextFrom: 50, ...extra });

  it.each<[string, PartitionState | undefined, boolean]>([
    ['active, as read', partition(), true],
    ['failed, as read', partition({ status: 'failed', reason: 'DATA_LOSS' }), true],
    ['retired', partition({ status: 'retired' }), false],
    ['committed moved', partition({ committed: 40 }), false],
    ['cursor moved', partition({ nextFrom: 60 }), false],
    ['another incarnation', partition({ incarnation: 1 }), false],
    ['missing', undefined, false],
  ])('a partition %s: the rewind may apply = %s', (_what, p, ok) => {
    expect(meets(p, rewindPartitionStep(rewind(10, 50)).when)).toBe(ok);
  });

  it('moves both cursors, reactivates, counts the rewind and clears the reason', () => {
    const before = partition({ status: 'failed', reason: 'DATA_LOSS', rewinds: 2 });
    expect(changed(before, rewindPartitionStep(rewind(10, 50)).change)).toEqual({
      ...partition({ committed: 10, nextFrom: 10 }),
      rewinds: 3,
    });
    expect(changed(partition(), rewindPartitionStep(rewind(10, 50)).change).rewinds).toBe(1);
  });

  it('names the partition when refused', () => {
    expect(partitionChangedReason(rewind(1, 2))).toBe('partition t/0 changed since it was read');
  });
});
