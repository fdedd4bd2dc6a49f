/**
 * The start positions (lib/planner/start/): one strategy per `startingOffsets` / `newTopics` variant,
 * each with the look-ups it asks for and the start it tells from what was read; and which position
 * each start rule takes.
 */
import type { StreamConfig } from '../../../lib/config/schema';
import type { StartRule } from '../../../lib/planner/start/rule';
import { newTopicEarliest } from '../../../lib/planner/start/new-topics/earliest';
import { newTopicLatest } from '../../../lib/planner/start/new-topics/latest';
import { newTopicTimestamp } from '../../../lib/planner/start/new-topics/timestamp';
import { startingEarliest } from '../../../lib/planner/start/starting-offsets/earliest';
import { startingFromGroup } from '../../../lib/planner/start/starting-offsets/from-group';
import { startingLatest } from '../../../lib/planner/start/starting-offsets/latest';
import { startingOffsetsMap } from '../../../lib/planner/start/starting-offsets/offsets';
import { startingTimestamp } from '../../../lib/planner/start/starting-offsets/timestamp';
import {
  START_STRATEGIES,
  startAt,
  startLookups,
  startPosition,
  startsWholeTopic,
  type StartKind,
} from '../../../lib/planner/start/strategies';
import type { Start, StartInputs, StartLookup } from '../../../lib/planner/start/strategy';

/** Partition orders/1 with offsets [10, 50), read under read_committed, with `more` read for it. */
const read = (more: Partial<StartInputs> = {}): StartInputs => ({
  topic: 'orders',
  partition: 1,
  offsets: { topic: 'orders', partition: 1, earliest: 10, latest: 50 },
  isolationLevel: 'read_committed',
  ...more,
});

describe('start strategies', () => {
  it('the table holds each strategy under its own kind', () => {
    for (const [kind, strategy] of Object.entries(START_STRATEGIES)) expect(strategy.kind).toBe(kind);
    expect(Object.keys(START_STRATEGIES)).toHaveLength(8);
  });

  describe.each([
    ['startingOffsets.earliest', () => startingEarliest.start('earliest', read()), { offset: 10 }],
    ['startingOffsets.latest', () => startingLatest.start('latest', read()), { offset: 50 }],
    ['newTopics.earliest', () => newTopicEarliest.start('earliest', read()), { offset: 10 }],
    [
      'newTopics.latest',
      () => newTopicLatest.start('latest', read()),
      { offset: 50, note: 'a topic that appeared after the stream started: newTopics latest' },
    ],
  ] as Array<[string, () => Start, Start]>)('%s: from the offsets every run reads', (_kind, start, expected) => {
    it('starts there', () => expect(start()).toEqual(expected));
  });

  it.each([
    ['no look-up', startingEarliest.lookups('earliest'), []],
    ['no look-up', startingLatest.lookups('latest'), []],
    ['no look-up', startingOffsetsMap.lookups({ offsets: { orders: { '1': 20 } } }), []],
    ['no look-up', newTopicEarliest.lookups('earliest'), []],
    ['no look-up', newTopicLatest.lookups('latest'), []],
    ['its timestamp', startingTimestamp.lookups({ timestampMs: 1_700 }), [{ kind: 'timestamp', timestampMs: 1_700 }]],
    ['its timestamp', newTopicTimestamp.lookups({ timestampMs: 1_800 }), [{ kind: 'timestamp', timestampMs: 1_800 }]],
    ['its group', startingFromGroup.lookups({ fromGroup: 'app', fallback: 'latest' }), [{ kind: 'group', group: 'app' }]],
  ] as Array<[string, StartLookup[], StartLookup[]]>)('look-ups: %s', (_what, lookups, expected) => {
    expect(lookups).toEqual(expected);
  });

  it.each([
    ['startingOffsets.timestampMs, answered', startingTimestamp.start({ timestampMs: 5 }, read({ byTimestamp: 30 })), { offset: 30 }],
    [
      'startingOffsets.timestampMs, not served this run',
      startingTimestamp.start({ timestampMs: 5 }, read()),
      { wait: 'no start offset by timestamp this run' },
    ],
    [
      'newTopics.timestampMs, answered',
      newTopicTimestamp.start({ timestampMs: 5 }, read({ byTimestamp: 30 })),
      { offset: 30, note: 'a topic that appeared after the stream started: newTopics timestampMs 5' },
    ],
    [
      'newTopics.timestampMs, not served this run',
      newTopicTimestamp.start({ timestampMs: 5 }, read()),
      { wait: 'no start offset by timestamp this run' },
    ],
    ['startingOffsets.offsets, named', startingOffsetsMap.start({ offsets: { orders: { '1': 20 } } }, read()), { offset: 20 }],
    [
      'startingOffsets.offsets, past the end: the end',
      startingOffsetsMap.start({ offsets: { orders: { '1': 90 } } }, read()),
      { offset: 50 },
    ],
    [
      'startingOffsets.offsets, not named: earliest',
      startingOffsetsMap.start({ offsets: { orders: { '0': 20 } } }, read()),
      { offset: 10 },
    ],
    [
      'startingOffsets.fromGroup, committed within the log',
      startingFromGroup.start({ fromGroup: 'app', fallback: 'latest' }, read({ group: { committed: 25 } })),
      { offset: 25, note: 'committed offset 25 of group "app"' },
    ],
    [
      'startingOffsets.fromGroup, no committed offset: the fallback',
      startingFromGroup.start({ fromGroup: 'app', fallback: 'latest' }, read({ group: {} })),
      { offset: 50, note: 'group "app" has no committed offset: fallback latest (50)' },
    ],
    [
      'startingOffsets.fromGroup, the group not read this run',
      startingFromGroup.start({ fromGroup: 'app', fallback: 'earliest' }, read()),
      { wait: 'committed offsets of group "app" not read this run' },
    ],
  ] as Array<[string, Start, Start]>)('start: %s', (_case, start, expected) => {
    expect(start).toEqual(expected);
  });

  it('only a new topic starting past earliest registers whole', () => {
    expect(
      Object.values(START_STRATEGIES)
        .filter((s) => s.wholeTopic)
        .map((s) => s.kind),
    ).toEqual(['newTopics.latest', 'newTopics.timestampMs']);
  });
});

describe('the start position of each rule', () => {
  const group = { fromGroup: 'app', fallback: 'latest' as const };
  // [startingOffsets, newTopics, rule, expected kind, expected spec]
  const cases: Array<[StreamConfig['startingOffsets'], StreamConfig['newTopics'], StartRule, StartKind, unknown]> = [
    ['earliest', 'latest', 'startingOffsets', 'startingOffsets.earliest', 'earliest'],
    ['latest', 'earliest', 'startingOffsets', 'startingOffsets.latest', 'latest'],
    [{ timestampMs: 3 }, 'earliest', 'startingOffsets', 'startingOffsets.timestampMs', { timestampMs: 3 }],
    [{ offsets: { orders: { '0': 1 } } }, 'earliest', 'startingOffsets', 'startingOffsets.offsets', { offsets: { orders: { '0': 1 } } }],
    [group, 'earliest', 'startingOffsets', 'startingOffsets.fromGroup', group],
    ['latest', 'earliest', 'newTopics', 'newTopics.earliest', 'earliest'],
    [group, 'latest', 'newTopics', 'newTopics.latest', 'latest'],
    ['latest', { timestampMs: 7 }, 'newTopics', 'newTopics.timestampMs', { timestampMs: 7 }],
    // A partition added to a known topic: earliest, or the group's offset with fallback earliest.
    ['latest', 'latest', 'newPartition', 'startingOffsets.earliest', 'earliest'],
    [{ timestampMs: 3 }, { timestampMs: 7 }, 'newPartition', 'startingOffsets.earliest', 'earliest'],
    [group, 'latest', 'newPartition', 'startingOffsets.fromGroup', { fromGroup: 'app', fallback: 'earliest' }],
  ];
  it.each(cases)('startingOffsets %j, newTopics %j, rule %s: %s', (startingOffsets, newTopics, rule, kind, spec) => {
    expect(startPosition({ startingOffsets, newTopics }, rule)).toEqual({ kind, spec });
  });

  it('dispatches to the position own strategy', () => {
    const position = startPosition({ startingOffsets: 'earliest', newTopics: { timestampMs: 7 } }, 'newTopics');
    expect(startLookups(position)).toEqual([{ kind: 'timestamp', timestampMs: 7 }]);
    expect(startAt(position, read({ byTimestamp: 12 }))).toMatchObject({ offset: 12 });
    expect(startsWholeTopic(position)).toBe(true);
  });
});
