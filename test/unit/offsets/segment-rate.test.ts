import fc from 'fast-check';
import { ratePartitions, segmentRatePerSec, type SegmentRateLimits } from '../../../lib/offsets/segment-rate';

const base: SegmentRateLimits = { intervalMs: 1_000, minRatePerPartition: 1 };

describe('segmentRatePerSec', () => {
  it.each<[string, Partial<SegmentRateLimits>, number, number | undefined]>([
    ['no limits', {}, 4, undefined],
    ['maxRatePerPartition alone', { maxRatePerPartition: 500 }, 4, 500],
    ['maxOffsetsPerTrigger shared by 4 partitions over 1 s', { maxOffsetsPerTrigger: 1_000 }, 4, 250],
    ['maxOffsetsPerTrigger spread over a 10 s interval', { maxOffsetsPerTrigger: 1_000, intervalMs: 10_000 }, 4, 25],
    ['the tighter of the two: the share', { maxOffsetsPerTrigger: 1_000, maxRatePerPartition: 500 }, 4, 250],
    ['the tighter of the two: the partition rate', { maxOffsetsPerTrigger: 10_000, maxRatePerPartition: 500 }, 4, 500],
    ['a small share is floored by minRatePerPartition', { maxOffsetsPerTrigger: 10, minRatePerPartition: 5 }, 100, 5],
    ['one partition takes the whole stream rate', { maxOffsetsPerTrigger: 1_000 }, 1, 1_000],
  ])('%s', (_name, limits, partitions, expected) => {
    expect(segmentRatePerSec({ ...base, ...limits }, partitions)).toBe(expected);
  });

  it.each<[string, Partial<SegmentRateLimits>, number, RegExp]>([
    ['zero partitions', { maxOffsetsPerTrigger: 10 }, 0, /partitions must be an integer >= 1, got 0/],
    ['a fractional partition count', {}, 1.5, /partitions must be an integer >= 1/],
    ['a zero interval', { intervalMs: 0 }, 1, /intervalMs must be a finite number > 0, got 0/],
  ])('refuses %s', (_name, limits, partitions, message) => {
    expect(() => segmentRatePerSec({ ...base, ...limits }, partitions)).toThrow(message);
  });

  it('the partitions together never read more than the stream rate (or their floors), each never above maxRatePerPartition', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 1_000, max: 600_000 }),
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.option(fc.double({ min: 0.1, max: 100_000, noNaN: true }), { nil: undefined }),
        fc.double({ min: 0, max: 100, noNaN: true }),
        (partitions, intervalMs, maxOffsetsPerTrigger, maxRatePerPartition, minRatePerPartition) => {
          const rate = segmentRatePerSec({ intervalMs, maxOffsetsPerTrigger, maxRatePerPartition, minRatePerPartition }, partitions)!;
          const streamRate = (maxOffsetsPerTrigger * 1000) / intervalMs;
          expect(rate * partitions).toBeLessThanOrEqual(Math.max(streamRate, minRatePerPartition * partitions) * (1 + 1e-9));
          if (maxRatePerPartition !== undefined) expect(rate).toBeLessThanOrEqual(maxRatePerPartition);
          expect(rate).toBeGreaterThan(0);
        },
      ),
    );
  });
});

describe('ratePartitions', () => {
  it.each<[string, string[], number]>([
    ['the active partitions', ['active', 'active', 'retired', 'failed', 'active'], 3],
    ['at least one with none active', ['retired'], 1],
    ['at least one with none at all', [], 1],
  ])('counts %s', (_what, statuses, expected) => {
    expect(ratePartitions(statuses.map((status) => ({ status })))).toBe(expected);
  });
});
