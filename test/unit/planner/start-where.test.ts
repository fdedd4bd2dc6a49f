/**
 * What a new partition not registered yet is told about where it will start comes from its start
 * position's strategy (`StartStrategy.whereItWillStart`), not from the plan: each strategy has its
 * words, under each rule that places a partition at it.
 */
import { parseStreamConfig, type StreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { decidePlan, type PlanInput } from '../../../lib/planner/decide';
import type { StartRule } from '../../../lib/planner/start/rule';
import { startingTimestamp } from '../../../lib/planner/start/starting-offsets/timestamp';
import { START_STRATEGIES, startPosition, whereItWillStart, type StartKind } from '../../../lib/planner/start/strategies';

const AT_STARTING_OFFSETS = 'present when the stream started, it will start at startingOffsets';
const AT_NEW_TOPICS = 'a topic that appeared after the stream started, it will start at newTopics';
const group = { fromGroup: 'app', fallback: 'latest' as const };

describe('where a partition not registered yet will start, as its strategy says', () => {
  // [startingOffsets, newTopics, rule, the position's kind, what the partition is told]
  const cases: Array<[StreamConfig['startingOffsets'], StreamConfig['newTopics'], StartRule, StartKind, string]> = [
    ['earliest', 'latest', 'startingOffsets', 'startingOffsets.earliest', AT_STARTING_OFFSETS],
    ['latest', 'latest', 'startingOffsets', 'startingOffsets.latest', AT_STARTING_OFFSETS],
    [{ timestampMs: 3 }, 'latest', 'startingOffsets', 'startingOffsets.timestampMs', AT_STARTING_OFFSETS],
    [{ offsets: { orders: { '0': 1 } } }, 'latest', 'startingOffsets', 'startingOffsets.offsets', AT_STARTING_OFFSETS],
    [group, 'latest', 'startingOffsets', 'startingOffsets.fromGroup', AT_STARTING_OFFSETS],
    ['latest', 'earliest', 'newTopics', 'newTopics.earliest', AT_NEW_TOPICS],
    ['latest', 'latest', 'newTopics', 'newTopics.latest', AT_NEW_TOPICS],
    ['latest', { timestampMs: 7 }, 'newTopics', 'newTopics.timestampMs', AT_NEW_TOPICS],
    // A partition added to a known topic is told the position, which no setting names.
    ['latest', 'latest', 'newPartition', 'startingOffsets.earliest', 'it will start at earliest'],
    [group, 'latest', 'newPartition', 'startingOffsets.fromGroup', 'it will start at the committed offset of group "app", else earliest'],
  ];

  it.each(cases)('startingOffsets %j, newTopics %j, rule %s (%s): %s', (startingOffsets, newTopics, rule, kind, told) => {
    const position = startPosition({ startingOffsets, newTopics }, rule);
    expect(position.kind).toBe(kind);
    expect(whereItWillStart(position, rule)).toBe(told);
  });

  it('every strategy says it, for the rules above', () => {
    expect(new Set(cases.map(([, , , kind]) => kind))).toEqual(new Set(Object.keys(START_STRATEGIES)));
    for (const strategy of Object.values(START_STRATEGIES)) expect(typeof strategy.whereItWillStart).toBe('function');
  });

  it("the plan's report tells what the strategy says", () => {
    const told = jest.spyOn(startingTimestamp, 'whereItWillStart').mockReturnValue('where the strategy says');
    try {
      const config: StreamConfigInput = { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'] };
      const input: PlanInput = {
        stream: parseStreamConfig({ ...config, startingOffsets: { timestampMs: 5 } }, 'test'),
        nowMs: 1_000_000,
        epoch: 1,
        initial: true,
        known: [],
        discovered: [{ topic: 'orders', partitions: [0] }],
        offsets: [{ topic: 'orders', partition: 0, earliest: 10, latest: 50 }],
        openRanges: [],
      };
      expect(decidePlan(input).partitions).toEqual([
        expect.objectContaining({
          partition: 0,
          note: 'not registered yet (no start offset by timestamp this run): where the strategy says',
        }),
      ]);
      expect(told).toHaveBeenCalledWith({ timestampMs: 5 }, 'startingOffsets');
    } finally {
      told.mockRestore();
    }
  });
});
