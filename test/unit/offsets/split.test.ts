/** Range splitting, scenarios mirrored from Spark's KafkaOffsetRangeCalculatorSuite. */
import fc from 'fast-check';
import { ValidationError } from '../../../lib/errors';
import { partsForMinPartitions, splitRange, type OffsetRange } from '../../../lib/offsets';

/** The Spark suite's getRanges(): parts per range from minPartitions, then each range split. */
function getRanges(ranges: Array<[string, number, number]>, minPartitions: number): Array<[string, number, number]> {
  const parts = partsForMinPartitions(new Map(ranges.map(([key, from, until]) => [key, until - from])), minPartitions);
  return ranges.flatMap(([key, from, until]) =>
    splitRange({ from, until }, { parts: Math.max(parts.get(key) ?? 0, 1) }).map((r): [string, number, number] => [key, r.from, r.until]),
  );
}

describe('splitRange', () => {
  it.each<{ name: string; range: OffsetRange; opts: { maxRangeSize?: number; parts?: number }; expected: Array<[number, number]> }>([
    {
      name: '[1, 11) in 3 parts -> 3/3/4 (remainder goes last)',
      range: { from: 1, until: 11 },
      opts: { parts: 3 },
      expected: [
        [1, 4],
        [4, 7],
        [7, 11],
      ],
    },
    {
      name: '[1, 5) in 4 parts -> 1 each',
      range: { from: 1, until: 5 },
      opts: { parts: 4 },
      expected: [
        [1, 2],
        [2, 3],
        [3, 4],
        [4, 5],
      ],
    },
    {
      name: '[0, 1000) with maxRangeSize 300 -> 4 parts of 250',
      range: { from: 0, until: 1000 },
      opts: { maxRangeSize: 300 },
      expected: [
        [0, 250],
        [250, 500],
        [500, 750],
        [750, 1000],
      ],
    },
    {
      name: '[0, 10) with maxRangeSize 3 -> 4 parts 2/2/3/3',
      range: { from: 0, until: 10 },
      opts: { maxRangeSize: 3 },
      expected: [
        [0, 2],
        [2, 4],
        [4, 7],
        [7, 10],
      ],
    },
    { name: '[0, 10) with maxRangeSize 10 -> whole', range: { from: 0, until: 10 }, opts: { maxRangeSize: 10 }, expected: [[0, 10]] },
    {
      name: '[0, 10) with parts 2 and maxRangeSize 3 -> 4 parts (both honoured)',
      range: { from: 0, until: 10 },
      opts: { parts: 2, maxRangeSize: 3 },
      expected: [
        [0, 2],
        [2, 4],
        [4, 7],
        [7, 10],
      ],
    },
    {
      name: '[5, 8) in 10 parts -> 3 single offsets (no empty pieces)',
      range: { from: 5, until: 8 },
      opts: { parts: 10 },
      expected: [
        [5, 6],
        [6, 7],
        [7, 8],
      ],
    },
    { name: '[7, 7) -> nothing', range: { from: 7, until: 7 }, opts: { parts: 3 }, expected: [] },
    { name: '[9, 7) -> nothing', range: { from: 9, until: 7 }, opts: {}, expected: [] },
  ])('$name', ({ range, opts, expected }) => {
    expect(splitRange(range, opts).map((r) => [r.from, r.until])).toEqual(expected);
  });

  it.each<[string, { maxRangeSize?: number; parts?: number }]>([
    ['parts 0', { parts: 0 }],
    ['maxRangeSize 0', { maxRangeSize: 0 }],
    ['parts 1.5', { parts: 1.5 }],
  ])('rejects %s', (_name, opts) => {
    expect(() => splitRange({ from: 0, until: 10 }, opts)).toThrow(ValidationError);
  });

  it('rejects a negative offset even when the range is empty', () => {
    expect(() => splitRange({ from: 0, until: -3 }, {})).toThrow(ValidationError);
  });

  it('tiles [from, until) exactly, pieces differ by at most 1 and respect both options', () => {
    const arbCase = fc.integer({ min: -3, max: 1_000_000 }).chain((size) =>
      fc.record({
        // Empty and inverted ranges, but never a negative offset (splitRange rejects those).
        from: fc.integer({ min: Math.max(0, -size), max: Number.MAX_SAFE_INTEGER - 1_000_000 }),
        size: fc.constant(size),
        parts: fc.option(fc.integer({ min: 1, max: 300 }), { nil: undefined }),
        // At most about 300 pieces per case keeps the property fast.
        maxRangeSize: fc.option(fc.integer({ min: Math.max(1, Math.ceil(size / 300)), max: Math.max(1, size * 2) }), { nil: undefined }),
      }),
    );
    fc.assert(
      fc.property(arbCase, ({ from, size, parts, maxRangeSize }) => {
        const pieces = splitRange({ from, until: from + size }, { parts, maxRangeSize });
        if (size <= 0) return expect(pieces).toEqual([]);
        let next = from;
        let contiguous = true;
        let smallest = Infinity;
        let largest = 0;
        for (const p of pieces) {
          contiguous &&= p.from === next;
          next = p.until;
          smallest = Math.min(smallest, p.until - p.from);
          largest = Math.max(largest, p.until - p.from);
        }
        expect(contiguous).toBe(true);
        expect(next).toBe(from + size);
        expect(smallest).toBeGreaterThanOrEqual(1);
        expect(largest - smallest).toBeLessThanOrEqual(1);
        if (maxRangeSize !== undefined) expect(largest).toBeLessThanOrEqual(maxRangeSize);
        expect(pieces.length).toBe(Math.min(size, Math.max(parts ?? 1, maxRangeSize === undefined ? 1 : Math.ceil(size / maxRangeSize))));
      }),
    );
  });
});

describe('partsForMinPartitions + splitRange (KafkaOffsetRangeCalculatorSuite)', () => {
  it.each<{ name: string; minPartitions: number; ranges: Array<[string, number, number]>; expected: Array<[string, number, number]> }>([
    {
      name: 'minPartitions 3, 3 ranges -> unsplit',
      minPartitions: 3,
      ranges: [
        ['t1', 1, 2],
        ['t2', 1, 2],
        ['t3', 1, 2],
      ],
      expected: [
        ['t1', 1, 2],
        ['t2', 1, 2],
        ['t3', 1, 2],
      ],
    },
    {
      name: 'minPartitions 4, [1, 5) -> 4 single offsets',
      minPartitions: 4,
      ranges: [['t1', 1, 5]],
      expected: [
        ['t1', 1, 2],
        ['t1', 2, 3],
        ['t1', 3, 4],
        ['t1', 4, 5],
      ],
    },
    {
      name: 'minPartitions 4, sizes 4/20 -> 1 + 3 (6/7/7)',
      minPartitions: 4,
      ranges: [
        ['t1', 1, 5],
        ['t2', 1, 21],
      ],
      expected: [
        ['t1', 1, 5],
        ['t2', 1, 7],
        ['t2', 7, 14],
        ['t2', 14, 21],
      ],
    },
    {
      name: 'SPARK-30656: minPartitions 4, sizes 0/20 -> empty dropped, 4 x 5',
      minPartitions: 4,
      ranges: [
        ['t1', 1, 1],
        ['t2', 1, 21],
      ],
      expected: [
        ['t2', 1, 6],
        ['t2', 6, 11],
        ['t2', 11, 16],
        ['t2', 16, 21],
      ],
    },
    {
      name: 'SPARK-30656: minPartitions 4, sizes 1/1000 -> 1 + 333/333/334',
      minPartitions: 4,
      ranges: [
        ['t1', 1, 2],
        ['t2', 1, 1001],
      ],
      expected: [
        ['t1', 1, 2],
        ['t2', 1, 334],
        ['t2', 334, 667],
        ['t2', 667, 1001],
      ],
    },
    {
      name: 'SPARK-30656: minPartitions 1 < 2 ranges -> unsplit',
      minPartitions: 1,
      ranges: [
        ['t1', 1, 5],
        ['t2', 1, 21],
      ],
      expected: [
        ['t1', 1, 5],
        ['t2', 1, 21],
      ],
    },
    {
      name: 'minPartitions 4, sizes 4/20/0 -> 1 + 3, empty dropped',
      minPartitions: 4,
      ranges: [
        ['t1', 1, 5],
        ['t2', 1, 21],
        ['t3', 1, 1],
      ],
      expected: [
        ['t1', 1, 5],
        ['t2', 1, 7],
        ['t2', 7, 14],
        ['t2', 14, 21],
      ],
    },
    {
      name: 'SPARK-28489: minPartitions 6, sizes 10/10/1 -> 3 + 3 + 1, no offset dropped',
      minPartitions: 6,
      ranges: [
        ['t1', 0, 10],
        ['t2', 0, 10],
        ['t3', 0, 1],
      ],
      expected: [
        ['t1', 0, 3],
        ['t1', 3, 6],
        ['t1', 6, 10],
        ['t2', 0, 3],
        ['t2', 3, 6],
        ['t2', 6, 10],
        ['t3', 0, 1],
      ],
    },
    {
      name: 'SPARK-36576: minPartitions 9, sizes 10000/15000/20000 -> 2 + 3 + 4',
      minPartitions: 9,
      ranges: [
        ['t1', 0, 10000],
        ['t2', 0, 15000],
        ['t3', 0, 20000],
      ],
      expected: [
        ['t1', 0, 5000],
        ['t1', 5000, 10000],
        ['t2', 0, 5000],
        ['t2', 5000, 10000],
        ['t2', 10000, 15000],
        ['t3', 0, 5000],
        ['t3', 5000, 10000],
        ['t3', 10000, 15000],
        ['t3', 15000, 20000],
      ],
    },
    {
      name: 'SPARK-36576: minPartitions 6, sizes 500/12000/15001 -> 1 + 2 + 3',
      minPartitions: 6,
      ranges: [
        ['t1', 0, 500],
        ['t2', 0, 12000],
        ['t3', 0, 15001],
      ],
      expected: [
        ['t1', 0, 500],
        ['t2', 0, 6000],
        ['t2', 6000, 12000],
        ['t3', 0, 5000],
        ['t3', 5000, 10000],
        ['t3', 10000, 15001],
      ],
    },
    {
      name: 'SPARK-36576: minPartitions 6, sizes 1/1/10000 -> 1 + 1 + 4',
      minPartitions: 6,
      ranges: [
        ['t1', 0, 1],
        ['t2', 0, 1],
        ['t3', 0, 10000],
      ],
      expected: [
        ['t1', 0, 1],
        ['t2', 0, 1],
        ['t3', 0, 2500],
        ['t3', 2500, 5000],
        ['t3', 5000, 7500],
        ['t3', 7500, 10000],
      ],
    },
    {
      name: 'SPARK-46798: minPartitions 4, sizes 1/1/2 -> 1 + 1 + 2',
      minPartitions: 4,
      ranges: [
        ['t1', 0, 1],
        ['t2', 0, 1],
        ['t3', 0, 2],
      ],
      expected: [
        ['t1', 0, 1],
        ['t2', 0, 1],
        ['t3', 0, 1],
        ['t3', 1, 2],
      ],
    },
  ])('$name', ({ minPartitions, ranges, expected }) => {
    expect(getRanges(ranges, minPartitions)).toEqual(expected);
  });

  it('gives 0 parts to empty ranges and caps parts at the range size', () => {
    expect([
      ...partsForMinPartitions(
        new Map([
          ['a', 0],
          ['b', 2],
          ['c', -4],
        ]),
        10,
      ),
    ]).toEqual([
      ['a', 0],
      ['b', 2],
      ['c', 0],
    ]);
  });

  it('rejects minPartitions 0', () => {
    expect(() => partsForMinPartitions(new Map([['a', 1]]), 0)).toThrow(ValidationError);
  });

  it('gives every non-empty range at least one part and never more parts than offsets', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -2, max: 100_000 }), { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 1, max: 200 }),
        (sizes, minPartitions) => {
          const parts = partsForMinPartitions(new Map(sizes.map((s, i) => [`t/${i}`, s])), minPartitions);
          sizes.forEach((size, i) => {
            const n = parts.get(`t/${i}`) ?? -1;
            if (size <= 0) expect(n).toBe(0);
            else expect(n).toBeGreaterThanOrEqual(1);
            expect(n).toBeLessThanOrEqual(Math.max(size, 0));
          });
        },
      ),
    );
  });
});
