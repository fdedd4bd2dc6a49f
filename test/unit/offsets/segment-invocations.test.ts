/** Which open segment ranges share a resident invocation (segmentInvocations): one shard each, at most perSegment. */
import fc from 'fast-check';
import { segmentInvocations } from '../../../lib/offsets/share';

const ranges = (...shards: Array<string | undefined>) => shards.map((shard) => (shard === undefined ? {} : { shard }));

describe('segmentInvocations', () => {
  it.each([
    { name: 'no ranges', shards: [], per: 7, out: [] },
    { name: 'one shard within perSegment', shards: ['g0', 'g0', 'g0'], per: 7, out: [[0, 1, 2]] },
    { name: 'one shard over perSegment, chunked in order', shards: ['g0', 'g0', 'g0', 'g0', 'g0'], per: 2, out: [[0, 1], [2, 3], [4]] },
    {
      name: 'two shards interleaved, kept apart',
      shards: ['g0', 'g1', 'g0', 'g1', 'g1'],
      per: 7,
      out: [
        [0, 2],
        [1, 3, 4],
      ],
    },
    { name: 'ranges of no known shard together', shards: [undefined, 'g0', undefined], per: 7, out: [[0, 2], [1]] },
    { name: 'one partition a segment', shards: ['g0', 'g0', 'g1'], per: 1, out: [[0], [1], [2]] },
    { name: 'perSegment under 1 taken as 1', shards: ['g0', 'g0'], per: 0, out: [[0], [1]] },
  ])('$name', ({ shards, per, out }) => {
    expect(segmentInvocations(ranges(...shards), per)).toEqual(out);
  });

  it('property: every index once, each invocation of one shard and at most perSegment, as few invocations as that allows', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.constantFrom('g0', 'g1', 'g2', 'g3'), { nil: undefined }), { maxLength: 60 }),
        fc.integer({ min: -1, max: 9 }),
        (shards, perSegment) => {
          const out = segmentInvocations(ranges(...shards), perSegment);
          const per = Math.max(1, perSegment);
          expect(out.flat().sort((a, b) => a - b)).toEqual(shards.map((_, i) => i));
          for (const inv of out) {
            expect(inv.length).toBeGreaterThanOrEqual(1);
            expect(inv.length).toBeLessThanOrEqual(per);
            expect(new Set(inv.map((i) => shards[i])).size).toBe(1);
            // In input order within an invocation.
            expect([...inv].sort((a, b) => a - b)).toEqual(inv);
          }
          const perShard = new Map<string | undefined, number>();
          for (const s of shards) perShard.set(s, (perShard.get(s) ?? 0) + 1);
          expect(out).toHaveLength([...perShard.values()].reduce((n, count) => n + Math.ceil(count / per), 0));
        },
      ),
    );
  });
});
