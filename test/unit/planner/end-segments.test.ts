/** endSegments (lib/planner/plan/end-segments.ts): which open ranges a stream back in micro-batches ends, pure. */
import { parseStreamConfig } from '../../../lib/config/schema';
import { endSegments } from '../../../lib/planner/plan/end-segments';
import { ownedOpenRanges } from '../../../lib/planner/plan/plan-index';
import type { PartitionState, RangeState } from '../../../lib/ports/ledger-state';
import { OPEN_UNTIL } from '../../../lib/ranges';

const base = { id: 's1', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], triggerIntervalMs: 1000 };
const MICRO = parseStreamConfig(base, 'test');
const CONTINUOUS = parseStreamConfig({ ...base, continuous: {} }, 'test');

const partition = (over: Partial<PartitionState> = {}): PartitionState => ({
  stream: 's1',
  topic: 'orders',
  partition: 0,
  status: 'active',
  startOffset: 0,
  committed: 40,
  nextFrom: OPEN_UNTIL,
  firstSeenAtMs: 0,
  ...over,
});
const range = (over: Partial<RangeState> = {}): RangeState => ({
  stream: 's1',
  topic: 'orders',
  partition: 0,
  from: 10,
  until: OPEN_UNTIL,
  status: 'leased',
  epoch: 1,
  plannedAtMs: 0,
  dispatches: 1,
  attempts: 1,
  progress: 40,
  ...over,
});

describe('endSegments', () => {
  it.each<[string, { stream?: typeof MICRO; r?: Partial<RangeState>; p?: Partial<PartitionState> }, boolean]>([
    ['a held open range of a micro-batch stream', {}, true],
    ['a planned one (given back)', { r: { status: 'planned' } }, true],
    ['a failed one', { r: { status: 'failed' } }, true],
    ['a continuous stream keeps its segments', { stream: CONTINUOUS }, false],
    ['a folded batch pending: a holder finishes it first', { r: { pendingUntil: 55 } }, false],
    ["a parked one is an operator's", { r: { status: 'parked' } }, false],
    ['a bounded range is a micro-batch already', { r: { until: 90 }, p: { nextFrom: 90 } }, false],
    ["another incarnation's range", { r: { incarnation: 1 } }, false],
    ['a retired partition', { p: { status: 'retired' } }, false],
    ['a partition not at the range progress', { p: { committed: 35 } }, false],
    ['a partition whose cursor is not open', { p: { nextFrom: 40 } }, false],
  ])('%s: ended %s', (_name, c, ended) => {
    const r = range(c.r);
    const out = endSegments({ stream: c.stream ?? MICRO }, ownedOpenRanges([r], [partition(c.p)]));
    expect(out.ended.has(r)).toBe(ended);
    expect(out.writes).toEqual(ended ? [{ kind: 'end-segment', range: r, expect: { progress: 40 } }] : []);
  });
});
