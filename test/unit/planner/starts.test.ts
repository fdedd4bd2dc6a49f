/**
 * Where a new partition starts (lib/planner/start/): the rule that places it, told from durable
 * state, and the start from a consumer group's committed offset with its fallback.
 */
import fc from 'fast-check';
import type { NewTopicsStart, StreamConfig } from '../../../lib/config/schema';
import type { PartitionState } from '../../../lib/ports/ledger-state';
import { startContext, startRule, type StartRule } from '../../../lib/planner/start/rule';
import { groupStart } from '../../../lib/planner/start/starting-offsets/from-group';
import { startAt, startLookups, startPosition } from '../../../lib/planner/start/strategies';
import type { Start } from '../../../lib/planner/start/strategy';

const offsets = (earliest: number, latest: number) => ({ topic: 'orders', partition: 0, earliest, latest });
// What a rule's start position asks the run to read, as the planner's look-ups (start/lookups.ts) ask it.
type StartSettings = Pick<StreamConfig, 'startingOffsets' | 'newTopics'>;
const lookupsOf = (stream: StartSettings, rule: StartRule) => startLookups(startPosition(stream, rule));
// The timestamp and the consumer group it looks up, and a newTopics start, told by the strategies.
const startTimestampMs = (stream: StartSettings, rule: StartRule): number | undefined =>
  lookupsOf(stream, rule).flatMap((l) => (l.kind === 'timestamp' ? [l.timestampMs] : []))[0];
const groupLookedUp = (stream: StartSettings, rule: StartRule): string | undefined =>
  lookupsOf(stream, rule).flatMap((l) => (l.kind === 'group' ? [l.group] : []))[0];
const newTopicStart = (spec: NewTopicsStart, o: ReturnType<typeof offsets>, byTimestamp: number | undefined): Start =>
  startAt(startPosition({ startingOffsets: 'earliest', newTopics: spec }, 'newTopics'), {
    topic: o.topic,
    partition: o.partition,
    offsets: o,
    isolationLevel: 'read_committed',
    byTimestamp,
  });
const registered = (topic: string, partition: number): PartitionState => ({
  stream: 's',
  topic,
  partition,
  status: 'active',
  startOffset: 0,
  committed: 0,
  nextFrom: 0,
  firstSeenAtMs: 0,
});

describe('groupStart', () => {
  // [case, committed (undefined: none), high watermark read, earliest, latest, fallback, isolation, expected]
  const cases: Array<
    [string, number | undefined, number | undefined, number, number, 'earliest' | 'latest', 'read_committed' | 'read_uncommitted', Start]
  > = [
    ['no commit, fallback earliest', undefined, undefined, 10, 50, 'earliest', 'read_committed', { offset: 10, note: expect.any(String) }],
    ['no commit, fallback latest', undefined, undefined, 10, 50, 'latest', 'read_committed', { offset: 50, note: expect.any(String) }],
    ['within the log', 30, undefined, 10, 50, 'latest', 'read_committed', { offset: 30, note: 'committed offset 30 of group "g"' }],
    ['at the log start', 10, undefined, 10, 50, 'latest', 'read_committed', { offset: 10, note: expect.any(String) }],
    ['at the end (caught up)', 50, undefined, 10, 50, 'earliest', 'read_committed', { offset: 50, note: expect.any(String) }],
    [
      'below the log start: kept, so the data-loss check sees the span',
      4,
      undefined,
      10,
      50,
      'latest',
      'read_committed',
      { offset: 4, note: 'committed offset 4 of group "g" is below the log start 10' },
    ],
    [
      'past the high watermark: out of range, fallback',
      80,
      60,
      10,
      50,
      'earliest',
      'read_committed',
      { offset: 10, note: 'committed offset 80 of group "g" is past the end 60 (out of range): fallback earliest (10)' },
    ],
    [
      'past the end under read_uncommitted: out of range, fallback latest',
      51,
      undefined,
      10,
      50,
      'latest',
      'read_uncommitted',
      { offset: 50, note: expect.stringContaining('out of range') },
    ],
    [
      'past the last stable offset, within the high watermark: waits',
      55,
      60,
      10,
      50,
      'earliest',
      'read_committed',
      { wait: expect.stringContaining('a transaction is open') },
    ],
    [
      'past the last stable offset, high watermark not read: waits',
      55,
      undefined,
      10,
      50,
      'earliest',
      'read_committed',
      { wait: 'committed offset 55 of group "g" is past the end 50' },
    ],
  ];
  it.each(cases)('%s', (_name, committed, highWatermark, earliest, latest, fallback, isolation, expected) => {
    const read = { ...(committed !== undefined ? { committed } : {}), ...(highWatermark !== undefined ? { highWatermark } : {}) };
    expect(groupStart('g', read, offsets(earliest, latest), fallback, isolation)).toEqual(expected);
  });

  it('waits when the group was not read this run', () => {
    expect(groupStart('g', undefined, offsets(0, 5), 'earliest', 'read_committed')).toEqual({
      wait: 'committed offsets of group "g" not read this run',
    });
  });

  it('property: a committed offset in the log is the start; none or out of range is the fallback; never past the end', () => {
    fc.assert(
      fc.property(
        fc.nat(1000),
        fc.nat(1000),
        fc.nat(1000),
        fc.option(fc.nat(3000), { nil: undefined }),
        fc.constantFrom('earliest' as const, 'latest' as const),
        fc.constantFrom('read_committed' as const, 'read_uncommitted' as const),
        (earliest, width, openTxn, committed, fallback, isolation) => {
          const latest = earliest + width;
          const high = isolation === 'read_committed' ? latest + openTxn : latest;
          const start = groupStart('g', { committed, highWatermark: high }, offsets(earliest, latest), fallback, isolation);
          const fallbackOffset = fallback === 'earliest' ? earliest : latest;
          if (committed === undefined || committed > high) expect(start).toMatchObject({ offset: fallbackOffset });
          else if (committed <= latest) expect(start).toMatchObject({ offset: committed });
          else expect(start).toHaveProperty('wait');
          if ('offset' in start) expect(start.offset).toBeLessThanOrEqual(latest);
        },
      ),
    );
  });
});

describe('start rules', () => {
  const t = (topic: string, topicId?: string) => ({ topic, partitions: [0, 1, 2], ...(topicId ? { topicId } : {}) });

  it('the first run places every partition at startingOffsets', () => {
    const ctx = startContext(true, undefined, [registered('orders', 0)]);
    expect(startRule(ctx, t('orders'), 1)).toBe('startingOffsets');
    expect(startRule(ctx, t('payments'), 0)).toBe('startingOffsets');
  });

  it('later: pending partitions at startingOffsets, new partitions of known or pending topics at newPartition, others at newTopics', () => {
    const ctx = startContext(false, [{ topic: 'pending', partitions: [1], topicId: 'id-1' }], [registered('orders', 0)]);
    expect(startRule(ctx, t('pending', 'id-1'), 1)).toBe('startingOffsets');
    expect(startRule(ctx, t('pending', 'id-1'), 2)).toBe('newPartition');
    // Re-created since the first run (another topic id): appeared after the start.
    expect(startRule(ctx, t('pending', 'id-2'), 1)).toBe('newPartition');
    expect(startRule(ctx, t('orders'), 1)).toBe('newPartition');
    expect(startRule(ctx, t('payments'), 0)).toBe('newTopics');
  });

  it('a retired partition still makes its topic known', () => {
    const ctx = startContext(false, undefined, [{ ...registered('orders', 0), status: 'retired' }]);
    expect(startRule(ctx, t('orders'), 0)).toBe('newPartition');
  });

  it('reads the group only for startingOffsets and newPartition, and timestamps per rule', () => {
    const stream = { startingOffsets: { fromGroup: 'app', fallback: 'latest' as const }, newTopics: { timestampMs: 7 } };
    expect(['startingOffsets', 'newPartition', 'newTopics'].map((r) => groupLookedUp(stream, r as never))).toEqual([
      'app',
      'app',
      undefined,
    ]);
    expect(['startingOffsets', 'newPartition', 'newTopics'].map((r) => startTimestampMs(stream, r as never))).toEqual([
      undefined,
      undefined,
      7,
    ]);
    const byTime = { startingOffsets: { timestampMs: 3 }, newTopics: 'latest' as const };
    expect(startTimestampMs(byTime, 'startingOffsets')).toBe(3);
    expect(groupLookedUp(byTime, 'startingOffsets')).toBeUndefined();
  });

  it('newTopicStart: earliest, latest, or the timestamp look-up (waiting without one)', () => {
    expect(newTopicStart('earliest', offsets(3, 9), undefined)).toEqual({ offset: 3 });
    expect(newTopicStart('latest', offsets(3, 9), undefined)).toMatchObject({ offset: 9 });
    expect(newTopicStart({ timestampMs: 5 }, offsets(3, 9), 6)).toMatchObject({ offset: 6 });
    expect(newTopicStart({ timestampMs: 5 }, offsets(3, 9), undefined)).toEqual({ wait: 'no start offset by timestamp this run' });
  });
});
