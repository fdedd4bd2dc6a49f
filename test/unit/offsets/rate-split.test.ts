/** Lag-proportional splits: Structured Streaming's maxOffsetsPerTrigger and the Direct stream's backpressure rate. */
import fc from 'fast-check';
import { ValidationError } from '../../../lib/errors';
import { splitMaxOffsets, splitRateByLag, type PartitionLag } from '../../../lib/offsets';

/** Partitions t/0, t/1, ... planned from offset 10 with the given lags (negative: end behind start). */
function fromLags(lags: number[]): PartitionLag[] {
  return lags.map((lag, i) => ({ key: `t/${i}`, from: 10, latest: 10 + lag }));
}

describe('splitMaxOffsets', () => {
  it.each([
    { name: 'limit 100 over sizes 100/10/1 -> 90/9/1 (the 0.9 share rounds up)', limit: 100, sizes: [100, 10, 1], expected: [90, 9, 1] },
    {
      name: 'limit 10 over sizes 101/11/1 -> 8/1/1 (KafkaMicroBatchSourceSuite, first batch)',
      limit: 10,
      sizes: [101, 11, 1],
      expected: [8, 1, 1],
    },
    {
      name: 'limit 10 over sizes 93/10/0 -> 9/1/0 (second batch: the drained partition gets 0)',
      limit: 10,
      sizes: [93, 10, 0],
      expected: [9, 1, 0],
    },
    {
      name: 'limit 100 over sizes 58/142 -> 29/71 (exact; Spark doubles give 28.999 -> 28)',
      limit: 100,
      sizes: [58, 142],
      expected: [29, 71],
    },
    { name: 'limit 10 over sizes 3/0/7 -> 3/0/7 (total <= limit: everything)', limit: 10, sizes: [3, 0, 7], expected: [3, 0, 7] },
    {
      name: 'limit 5 over sizes 1/1/1/1/1/1/1 -> 1 each (7 > 5: every tiny share rounds up)',
      limit: 5,
      sizes: [1, 1, 1, 1, 1, 1, 1],
      expected: [1, 1, 1, 1, 1, 1, 1],
    },
    { name: 'limit 1 over sizes 0/0 -> 0/0 (no lag)', limit: 1, sizes: [0, 0], expected: [0, 0] },
  ])('$name', ({ limit, sizes, expected }) => {
    const budgets = splitMaxOffsets(fromLags(sizes), limit);
    expect(sizes.map((_, i) => budgets.get(`t/${i}`))).toEqual(expected);
  });

  it('gives 0 to a partition whose end offset is behind its next offset (truncated log)', () => {
    const budgets = splitMaxOffsets(
      [
        { key: 't/0', from: 50, latest: 40 },
        { key: 't/1', from: 0, latest: 20 },
      ],
      10,
    );
    expect([...budgets]).toEqual([
      ['t/0', 0],
      ['t/1', 10],
    ]);
  });

  it('splits 2^53-scale sizes exactly', () => {
    const big = Number.MAX_SAFE_INTEGER - 1;
    const budgets = splitMaxOffsets(
      [
        { key: 't/0', from: 0, latest: big },
        { key: 't/1', from: 0, latest: big },
      ],
      1_000_001,
    );
    expect([budgets.get('t/0'), budgets.get('t/1')]).toEqual([500_000, 500_000]);
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects maxOffsetsPerTrigger %p', (limit) => {
    expect(() => splitMaxOffsets(fromLags([1]), limit)).toThrow(ValidationError);
  });

  it('rejects duplicate partition keys', () => {
    expect(() =>
      splitMaxOffsets(
        [
          { key: 't/0', from: 0, latest: 1 },
          { key: 't/0', from: 1, latest: 2 },
        ],
        10,
      ),
    ).toThrow(/duplicate/);
  });

  it('never gives more than the lag, never starves, and exceeds the limit only by rounded-up shares', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -5, max: 100_000 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 50_000 }),
        (lags, limit) => {
          const budgets = splitMaxOffsets(fromLags(lags), limit);
          const total = lags.reduce((sum, lag) => sum + Math.max(lag, 0), 0);
          let planned = 0;
          let roundedUp = 0;
          lags.forEach((lag, i) => {
            const budget = budgets.get(`t/${i}`) ?? -1;
            const size = Math.max(lag, 0);
            expect(budget).toBeGreaterThanOrEqual(size > 0 ? 1 : 0);
            expect(budget).toBeLessThanOrEqual(size);
            if (total <= limit) expect(budget).toBe(size);
            if (total > limit && size > 0 && size * limit < total) roundedUp++;
            planned += budget;
          });
          expect(planned).toBeLessThanOrEqual(limit + roundedUp);
        },
      ),
    );
  });
});

describe('splitRateByLag', () => {
  it.each([
    { name: 'rate 1000/s over lags 3000/1000 -> 750/250', rate: 1000, lags: [3000, 1000], expected: [750, 250] },
    {
      name: 'rate 1000/s over lags 1000/1000 -> 500/500 (DirectKafkaStreamSuite "respects max rate")',
      rate: 1000,
      lags: [1000, 1000],
      expected: [500, 500],
    },
    { name: 'rate 1/s over lags 0/100/200/300 -> 0, 1/6, 2/6, 3/6', rate: 1, lags: [0, 100, 200, 300], expected: [0, 1 / 6, 2 / 6, 3 / 6] },
    { name: 'rate 100/s over lags 0/0 -> 0/0 (no lag, no division by zero)', rate: 100, lags: [0, 0], expected: [0, 0] },
  ])('$name', ({ rate, lags, expected }) => {
    const rates = splitRateByLag(fromLags(lags), rate);
    lags.forEach((_, i) => expect(rates.get(`t/${i}`)).toBeCloseTo(expected[i] ?? Number.NaN, 12));
  });
});
