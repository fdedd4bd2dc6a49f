/**
 * decidePlan stays linear in its input: every look-up by partition goes through an index, never a
 * scan of another list per partition. Measured as array elements scanned, not time: four times the
 * partitions must cost about four times the scans (a scan per partition would cost sixteen).
 */
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { decidePlan, type PlanInput } from '../../../lib/planner/decide';
import type { PartitionOffsets, TopicPartitions } from '../../../lib/ports/kafka-metadata';
import type { PartitionState, RangeState } from '../../../lib/ports/ledger-state';

const NOW = 10_000_000;
const PER_TOPIC = 50;

const config = (topics: string[], over: Partial<StreamConfigInput> = {}) =>
  parseStreamConfig({ id: 's1', kafka: { brokers: ['localhost:9092'] }, topics, processor: { timeoutMs: 60_000 }, ...over }, 'test');

const topicNames = (n: number) => Array.from({ length: Math.ceil(n / PER_TOPIC) }, (_, i) => `t${i}`);
const partitionsOf = (n: number) =>
  topicNames(n).flatMap((topic) => Array.from({ length: PER_TOPIC }, (_, partition) => ({ topic, partition })));
const discoveredOf = (n: number): TopicPartitions[] =>
  topicNames(n).map((topic) => ({ topic, topicId: `id-${topic}`, partitions: Array.from({ length: PER_TOPIC }, (_, p) => p) }));
const offsetsOf = (n: number, latest: number): PartitionOffsets[] => partitionsOf(n).map((tp) => ({ ...tp, earliest: 0, latest }));
const state = (tp: { topic: string; partition: number }, over: Partial<PartitionState> = {}): PartitionState => ({
  stream: 's1',
  ...tp,
  status: 'active',
  startOffset: 0,
  committed: 0,
  nextFrom: 0,
  firstSeenAtMs: 1,
  topicId: `id-${tp.topic}`,
  ...over,
});

/** Array methods that visit elements; each call is counted as visiting the whole array. */
const SCANS = ['some', 'every', 'find', 'findIndex', 'filter', 'includes', 'indexOf', 'map', 'flatMap', 'forEach', 'reduce'] as const;

/** Array elements that `fn` may visit through array methods, iteration and spreads. */
function elementsScanned(fn: () => void): number {
  let scanned = 0;
  const proto = Array.prototype as unknown as Record<string | symbol, (...args: unknown[]) => unknown>;
  const names: Array<string | symbol> = [...SCANS, Symbol.iterator];
  const originals = names.map((name) => proto[name]);
  names.forEach((name, i) => {
    const original = originals[i] as (...args: unknown[]) => unknown;
    proto[name] = function (this: unknown[], ...args: unknown[]) {
      scanned += this.length;
      return original.apply(this, args);
    };
  });
  try {
    fn();
  } finally {
    names.forEach((name, i) => {
      proto[name] = originals[i] as (...args: unknown[]) => unknown;
    });
  }
  return scanned;
}

/** Scans for 4n partitions over scans for n: about 4 when linear, about 16 when quadratic. */
function growth(inputFor: (n: number) => PlanInput, n = 500): number {
  const small = inputFor(n);
  const large = inputFor(4 * n);
  return elementsScanned(() => decidePlan(large)) / elementsScanned(() => decidePlan(small));
}

const base = (n: number): Omit<PlanInput, 'known' | 'offsets' | 'openRanges'> => ({
  stream: config(topicNames(n)),
  nowMs: NOW,
  epoch: 7,
  initial: false,
  discovered: discoveredOf(n),
});

describe('decidePlan is linear in the partitions and open ranges', () => {
  it('registers and plans n new partitions', () => {
    const inputFor = (n: number): PlanInput => ({ ...base(n), initial: true, known: [], offsets: offsetsOf(n, 100), openRanges: [] });
    expect(decidePlan(inputFor(500)).registrations).toHaveLength(500);
    expect(growth(inputFor)).toBeLessThan(6);
  });

  it('checks n known partitions, a third in flight, a third retired (gone from the metadata), a third planned', () => {
    const inputFor = (n: number): PlanInput => {
      const tps = partitionsOf(n);
      const known = tps.map((tp, i) => state(tp, i % 3 === 0 ? { committed: 0, nextFrom: 10 } : { committed: 10, nextFrom: 10 }));
      const gone = new Set(tps.filter((_, i) => i % 3 === 1).map((tp) => `${tp.topic}/${tp.partition}`));
      const discovered = base(n).discovered.map((t) => ({ ...t, partitions: t.partitions.filter((p) => !gone.has(`${t.topic}/${p}`)) }));
      const openRanges = known.filter((_, i) => i % 3 === 0).map((p) => range(p.topic, p.partition, 0, 10));
      return { ...base(n), discovered, known, offsets: offsetsOf(n, 100), openRanges };
    };
    const d = decidePlan(inputFor(600));
    expect(d.writes.filter((w) => w.kind === 'retire-partition')).toHaveLength(200);
    expect(d.newRanges).toHaveLength(200);
    expect(growth(inputFor)).toBeLessThan(6);
  });

  it('judges a bounded stream finished over n partitions, some retired in this run', () => {
    const inputFor = (n: number): PlanInput => {
      const tps = partitionsOf(n);
      // Finished partitions first: a scan of the run's writes per partition would visit every retirement.
      const known = tps.map((tp) => state(tp, { committed: 50, nextFrom: 50, stopOffset: 50 }));
      const kept = tps.slice(0, n / 2);
      const discovered = topicNames(n).map((topic) => ({
        topic,
        topicId: `id-${topic}`,
        partitions: kept.filter((tp) => tp.topic === topic).map((tp) => tp.partition),
      }));
      return { ...base(n), discovered: discovered.filter((t) => t.partitions.length), known, offsets: offsetsOf(n, 100), openRanges: [] };
    };
    const d = decidePlan(inputFor(500));
    expect(d.writes.filter((w) => w.kind === 'retire-partition')).toHaveLength(250);
    expect(d.finished).toBe(false);
    expect(growth(inputFor)).toBeLessThan(6);
  });

  it('groups n open ranges of one partition (split streams)', () => {
    const inputFor = (n: number): PlanInput => {
      const openRanges = Array.from({ length: n }, (_, i) => range('t0', 0, 10 * i, 10 * (i + 1)));
      const known = [state({ topic: 't0', partition: 0 }, { committed: 0, nextFrom: 10 * n })];
      const stream = config(['t0'], { split: { orderInsensitive: true, maxRangeSize: 10 } });
      const discovered = [{ topic: 't0', topicId: 'id-t0', partitions: [0] }];
      return { ...base(1), stream, discovered, known, offsets: [{ topic: 't0', partition: 0, earliest: 0, latest: 10 * n }], openRanges };
    };
    expect(decidePlan(inputFor(500)).checkCommitted).toHaveLength(0);
    expect(growth(inputFor)).toBeLessThan(6);
  });
});

function range(topic: string, partition: number, from: number, until: number): RangeState {
  return {
    stream: 's1',
    topic,
    partition,
    from,
    until,
    status: 'leased',
    epoch: 6,
    plannedAtMs: NOW - 1000,
    dispatchedAtMs: NOW - 1000,
    dispatches: 1,
    attempts: 1,
    progress: from,
    leaseExpiresAtMs: NOW + 60_000,
    topicId: `id-${topic}`,
  };
}
