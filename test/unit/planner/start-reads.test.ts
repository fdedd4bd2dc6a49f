/**
 * What the run read for the new partitions' start positions reaches the plan as one map of look-up
 * answers by partition (`PlanInput.startReads`), handed to each partition's strategy as read: the
 * plan has no field per look-up or per strategy.
 */
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { decidePlan, type PlanInput } from '../../../lib/planner/decide';
import type { StartReads } from '../../../lib/planner/start/strategy';
import { partitionKey } from '../../../lib/ranges';

/** A first run of a stream over orders/0 and orders/1 (offsets [10, 50)), with `startReads` as read. */
const firstRun = (over: Partial<StreamConfigInput>, startReads?: Map<string, StartReads>): PlanInput => ({
  stream: parseStreamConfig({ id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], ...over }, 'test'),
  nowMs: 1_000_000,
  epoch: 1,
  initial: true,
  known: [],
  discovered: [{ topic: 'orders', partitions: [0, 1] }],
  offsets: [0, 1].map((partition) => ({ topic: 'orders', partition, earliest: 10, latest: 50 })),
  openRanges: [],
  ...(startReads ? { startReads } : {}),
});

const starts = (input: PlanInput) => decidePlan(input).registrations.map((p) => [p.partition, p.startOffset]);

describe('PlanInput.startReads', () => {
  it('a timestamp answer places its partition; one missing waits, pending its start', () => {
    const input = firstRun({ startingOffsets: { timestampMs: 5 } }, new Map([[partitionKey('orders', 0), { byTimestamp: 30 }]]));
    const decision = decidePlan(input);
    expect(starts(input)).toEqual([[0, 30]]);
    expect(decision.pendingStart).toEqual([{ topic: 'orders', partitions: [1] }]);
    expect(decision.partitions.find((p) => p.partition === 1)?.note).toMatch(
      /^not registered yet \(no start offset by timestamp this run\)/,
    );
  });

  it("a group's committed offsets place their partitions", () => {
    const reads = new Map<string, StartReads>([
      [partitionKey('orders', 0), { group: { committed: 25 } }],
      [partitionKey('orders', 1), { group: {} }],
    ]);
    expect(starts(firstRun({ startingOffsets: { fromGroup: 'app', fallback: 'latest' } }, reads))).toEqual([
      [0, 25],
      [1, 50],
    ]);
  });

  it('a position without look-ups needs none', () => {
    expect(starts(firstRun({ startingOffsets: 'latest' }))).toEqual([
      [0, 50],
      [1, 50],
    ]);
  });
});
