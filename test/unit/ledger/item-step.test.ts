/** The rules' item steps (ports/ledger-rules/item-step.ts): requirements on an item as read, and changes. */
import fc from 'fast-check';
import { changed, isIncarnation, meets, type Requirement } from '../../../lib/ports/ledger-rules/item-step';

describe('meets', () => {
  const item = { status: 'active', committed: 10, incarnation: 2 };

  it.each<[string, Requirement, boolean]>([
    ['equal', { field: 'status', is: 'active' }, true],
    ['not equal', { field: 'status', is: 'failed' }, false],
    ['absent, required absent', { field: 'topicId', is: undefined }, true],
    ['present, required absent', { field: 'status', is: undefined }, false],
    ['absent, counted as the value', { field: 'rewinds', is: 0, absentIs: 0 }, true],
    ['absent, counted as another value', { field: 'rewinds', is: 1, absentIs: 0 }, false],
    ['none of', { field: 'status', isNot: ['done', 'parked'] }, true],
    ['one of', { field: 'status', isNot: ['active'] }, false],
    ['at least, equal', { field: 'committed', atLeast: 10 }, true],
    ['at least, below', { field: 'committed', atLeast: 11 }, false],
    ['at most, equal', { field: 'committed', atMost: 10 }, true],
    ['at most, above', { field: 'committed', atMost: 9 }, false],
    ['a comparison on an absent field', { field: 'nextFrom', atLeast: 0 }, false],
    ['the incarnation', isIncarnation(2), true],
    ['another incarnation', isIncarnation(undefined), false],
  ])('%s: %s', (_what, r, ok) => {
    expect(meets(item, [r])).toBe(ok);
  });

  it('a missing item meets nothing, not even no requirement', () => {
    expect(meets(undefined, [])).toBe(false);
  });

  it('incarnation 0 is met by an item without one', () => {
    expect(meets({}, [isIncarnation(0)])).toBe(true);
    expect(meets({}, [isIncarnation(undefined)])).toBe(true);
  });
});

describe('changed', () => {
  it('sets, adds from 0 when absent, and removes; the item read is left alone', () => {
    const before = { status: 'failed', reason: 'x', dispatches: 2 };
    const after = changed(before, { set: { status: 'active' }, add: { dispatches: -1, rewinds: 1 }, remove: ['reason'] });
    expect(after).toEqual({ status: 'active', dispatches: 1, rewinds: 1 });
    expect(before).toEqual({ status: 'failed', reason: 'x', dispatches: 2 });
  });

  it('copies values it sets, so the state never shares an object with the write (property)', () => {
    fc.assert(
      fc.property(fc.object(), (value) => {
        const change = { set: { pid: value } };
        const out = changed({}, change) as { pid: unknown };
        expect(out.pid).toEqual(value);
        if (typeof value === 'object' && value !== null) expect(out.pid).not.toBe(value);
      }),
    );
  });
});
