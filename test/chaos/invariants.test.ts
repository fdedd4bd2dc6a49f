/** The ledger invariant checker on hand-made snapshots: a sound ledger, then each violation. */
import { checkInvariants, type LedgerSnapshot } from './invariants';
import type { ClosedIncarnation, DataLossEntry, PartitionState, RangeState } from '../../lib/ports/ledger-state';

const part = (over: Partial<PartitionState> = {}): PartitionState => ({
  stream: 's',
  topic: 't',
  partition: 0,
  status: 'active',
  startOffset: 0,
  committed: 0,
  nextFrom: 0,
  firstSeenAtMs: 1,
  ...over,
});
const range = (from: number, until: number, over: Partial<RangeState> = {}): RangeState => ({
  stream: 's',
  topic: 't',
  partition: 0,
  from,
  until,
  status: 'done',
  epoch: 1,
  plannedAtMs: 1,
  dispatches: 1,
  attempts: 1,
  progress: over.status && over.status !== 'done' ? from : until,
  ...over,
});
const loss = (from: number, until: number): DataLossEntry => ({
  stream: 's',
  topic: 't',
  partition: 0,
  from,
  until,
  detectedAtMs: 1,
  reason: 'retention',
});
const snap = (partitions: PartitionState[], ranges: RangeState[], dataLoss: DataLossEntry[] = []): LedgerSnapshot => ({
  partitions,
  ranges,
  dataLoss,
});

describe('checkInvariants', () => {
  it('accepts a sound ledger: tiled ranges, a range in flight, a recorded data-loss gap', () => {
    const s = snap(
      [part({ startOffset: 10, committed: 40, nextFrom: 60 }), part({ partition: 1, startOffset: 0, committed: 0, nextFrom: 0 })],
      [
        range(10, 20),
        range(20, 30),
        range(35, 40),
        range(40, 50, { status: 'leased', progress: 45 }),
        range(50, 60, { status: 'planned' }),
      ],
      [loss(30, 35)],
    );
    expect(
      checkInvariants(
        snap(
          s.partitions,
          s.ranges.map((r) => ({ ...r })),
          s.dataLoss,
        ),
      ),
    ).toEqual([]);
  });

  it('accepts a processor-recorded loss inside a done range and a trailing planner loss', () => {
    expect(checkInvariants(snap([part({ committed: 30, nextFrom: 30 })], [range(0, 20)], [loss(5, 8), loss(20, 30)]))).toEqual([]);
  });

  it('I1: a gap without data loss', () => {
    const v = checkInvariants(snap([part({ committed: 10, nextFrom: 30 })], [range(0, 10), range(20, 30, { status: 'planned' })]));
    expect(v).toEqual([expect.objectContaining({ invariant: 'I1', partition: 't/0', message: expect.stringContaining('gap [10, 20)') })]);
  });

  it('I1: overlapping ranges', () => {
    const v = checkInvariants(snap([part({ committed: 30, nextFrom: 30 })], [range(0, 20), range(15, 30)]));
    expect(v.map((x) => x.invariant)).toEqual(['I1']);
    expect(v[0]!.message).toMatch(/overlaps/);
  });

  it('I1: a range past nextFrom, and a cursor past the last range', () => {
    expect(
      checkInvariants(snap([part({ committed: 0, nextFrom: 10 })], [range(0, 20, { status: 'planned' })])).map((x) => x.message),
    ).toEqual([expect.stringContaining('past the planning cursor')]);
    expect(checkInvariants(snap([part({ committed: 10, nextFrom: 25 })], [range(0, 10)])).map((x) => x.message)).toEqual([
      expect.stringContaining('gap [10, 25) below nextFrom'),
    ]);
  });

  it('I1: ranges of an unknown partition', () => {
    expect(checkInvariants(snap([], [range(0, 10)])).map((x) => x.invariant)).toEqual(['I1']);
  });

  it('I2: committed past nextFrom, or below startOffset', () => {
    expect(checkInvariants(snap([part({ committed: 20, nextFrom: 10 })], [range(0, 10)])).map((x) => x.invariant)).toContain('I2');
    expect(checkInvariants(snap([part({ startOffset: 5, committed: 3, nextFrom: 5 })], [])).map((x) => x.message)).toEqual([
      expect.stringContaining('below startOffset'),
    ]);
  });

  it('I2: progress outside the range, done without reaching until', () => {
    expect(
      checkInvariants(snap([part({ nextFrom: 10 })], [range(0, 10, { status: 'leased', progress: 11 })])).map((x) => x.message),
    ).toEqual([expect.stringContaining('progress 11 outside')]);
    expect(checkInvariants(snap([part({ nextFrom: 10 })], [range(0, 10, { status: 'done', progress: 5 })])).map((x) => x.message)).toEqual([
      expect.stringContaining('done with progress 5'),
    ]);
  });

  it('I2: a range below committed that is not done (and I6 for its offsets)', () => {
    const v = checkInvariants(snap([part({ committed: 20, nextFrom: 20 })], [range(0, 10), range(10, 20, { status: 'failed' })]));
    expect(v.map((x) => x.invariant).sort()).toEqual(['I2', 'I6']);
    expect(v.find((x) => x.invariant === 'I6')!.message).toContain('[10, 20)');
  });

  it('I6: committed beyond what was processed or recorded lost', () => {
    const v = checkInvariants(
      snap([part({ committed: 15, nextFrom: 20 })], [range(0, 10), range(10, 20, { status: 'leased', progress: 15 })]),
    );
    expect(v).toEqual([expect.objectContaining({ invariant: 'I6', message: expect.stringContaining('[10, 15)') })]);
  });

  it('a retired partition may stop short of nextFrom with its open ranges left parked', () => {
    const retired = part({ status: 'retired', reason: 'TOPIC_DELETED: the topic no longer exists', committed: 20, nextFrom: 50 });
    const open = [range(20, 35, { status: 'parked', lastError: 'PARTITION_DELETED: gone' }), range(35, 50, { status: 'planned' })];
    expect(checkInvariants(snap([retired], [range(0, 20), ...open]))).toEqual([]);
  });

  it('a retired partition is not exempt: a gap or an unprocessed offset below committed is still reported', () => {
    const retired = part({ status: 'retired', reason: 'TOPIC_DELETED: the topic no longer exists', committed: 20, nextFrom: 40 });
    const v = checkInvariants(snap([retired], [range(0, 10), range(10, 20, { status: 'parked' }), range(30, 40, { status: 'parked' })]));
    expect(v.map((x) => x.invariant).sort()).toEqual(['I1', 'I2', 'I6']);
  });

  it('tolerates gaps after an operator rewind', () => {
    const s = snap([part({ committed: 50, nextFrom: 50 })], [range(0, 10)]);
    expect(checkInvariants(s).length).toBeGreaterThan(0);
    expect(
      checkInvariants({
        ...s,
        meta: { stream: 's', epoch: 3, ownerToken: 'x', leaseExpiresAtMs: 0, lastChange: { by: 'op', atMs: 1, what: 'rewind t/0 to 50' } },
      }),
    ).toEqual([]);
  });

  it('data-loss entries that are empty are reported', () => {
    expect(checkInvariants(snap([part()], [], [loss(5, 5)])).map((x) => x.invariant)).toEqual(['I6']);
  });

  describe('re-created topics (incarnations)', () => {
    const closedRec = (over: Partial<ClosedIncarnation> = {}): ClosedIncarnation => ({
      stream: 's',
      topic: 't',
      partition: 0,
      incarnation: 0,
      topicId: 'A',
      newTopicId: 'B',
      status: 'active',
      startOffset: 0,
      committed: 20,
      nextFrom: 30,
      openRanges: [{ from: 20, until: 30, status: 'leased', progress: 25 }],
      newStartOffset: 0,
      detectedAtMs: 5,
      reason: 'TOPIC_RECREATED: test',
      ...over,
    });
    const current = part({ incarnation: 1, topicId: 'B', committed: 10, nextFrom: 15 });
    const newRanges = [range(0, 10, { incarnation: 1 }), range(10, 15, { incarnation: 1, status: 'planned' })];
    const oldRanges = [range(0, 10), range(10, 20)];

    it('checks each incarnation on its own: the new one from its start, the closed one with the ranges its close removed', () => {
      expect(checkInvariants({ ...snap([current], [...oldRanges, ...newRanges]), closed: [closedRec()] })).toEqual([]);
    });

    it('a closed incarnation is still checked: a gap in its ranges is reported', () => {
      const v = checkInvariants({ ...snap([current], [range(0, 10), ...newRanges]), closed: [closedRec()] });
      expect(v).toEqual([
        expect.objectContaining({ invariant: 'I1', partition: 't/0', message: expect.stringContaining('gap [10, 20)') }),
        expect.objectContaining({ invariant: 'I6' }),
      ]);
    });

    it('I6: an incarnation replaced without a record, and ranges of an incarnation nobody knows', () => {
      const v = checkInvariants(snap([current], [...oldRanges, ...newRanges, range(0, 5, { incarnation: 7 })]));
      expect(v).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ invariant: 'I6', message: 'incarnation 0 was replaced without a closed-incarnation record' }),
          expect.objectContaining({ invariant: 'I1', partition: 't/0#7' }),
          expect.objectContaining({ invariant: 'I1', partition: 't/0' }),
        ]),
      );
    });
  });
});
