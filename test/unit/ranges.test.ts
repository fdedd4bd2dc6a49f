/** Open segment ranges (continuous mode): OPEN_UNTIL, isOpenRange, and how far a partition's log must reach (cursorFloor). */
import fc from 'fast-check';
import { cursorFloor, isOpenRange, OPEN_UNTIL } from '../../lib/ranges';

describe('isOpenRange', () => {
  it.each([
    { until: OPEN_UNTIL, open: true },
    { until: OPEN_UNTIL - 1, open: false },
    { until: 100, open: false },
  ])('until $until: open $open', ({ until, open }) => {
    expect(isOpenRange({ until })).toBe(open);
  });
});

describe('cursorFloor', () => {
  it.each([
    { name: 'a micro-batch partition: its planning cursor', nextFrom: 120, committed: 100, floor: 120 },
    { name: 'nothing in flight: the cursor, which is the committed offset', nextFrom: 100, committed: 100, floor: 100 },
    { name: 'an open segment range running: the committed offset its commits move', nextFrom: OPEN_UNTIL, committed: 4_321, floor: 4_321 },
    { name: 'an open segment range at the log start', nextFrom: OPEN_UNTIL, committed: 0, floor: 0 },
  ])('$name', ({ nextFrom, committed, floor }) => {
    expect(cursorFloor({ nextFrom, committed })).toBe(floor);
  });

  it('property: an offset (never OPEN_UNTIL), never below the committed offset when the cursor is at or past it', () => {
    fc.assert(
      fc.property(fc.nat({ max: 2 ** 50 }), fc.option(fc.nat({ max: 2 ** 50 }), { nil: undefined }), (committed, ahead) => {
        const nextFrom = ahead === undefined ? OPEN_UNTIL : committed + ahead;
        const floor = cursorFloor({ nextFrom, committed });
        expect(floor).not.toBe(OPEN_UNTIL);
        expect(floor).toBeGreaterThanOrEqual(committed);
        expect(floor).toBe(ahead === undefined ? committed : nextFrom);
      }),
    );
  });
});
