/** The rules' requirements and changes as DynamoDB expressions (lib/ledger/conditions.dynamodb.ts). */
import { changeUpdate, requirementsCondition } from '../../../lib/ledger/conditions.dynamodb';
import { isIncarnation, type Requirement } from '../../../lib/ports/ledger-rules/item-step';

describe('requirementsCondition', () => {
  it.each<[string, Requirement, string, Record<string, unknown>]>([
    ['equal', { field: 'status', is: 'active' }, '#status = :w0', { ':w0': 'active' }],
    ['absent', { field: 'topicId', is: undefined }, 'attribute_not_exists(#topicId)', {}],
    ['incarnation 0', isIncarnation(0), '(attribute_not_exists(#incarnation) OR #incarnation = :w0)', { ':w0': 0 }],
    ['incarnation 2', isIncarnation(2), '#incarnation = :w0', { ':w0': 2 }],
    ['none of', { field: 'status', isNot: ['done', 'parked'] }, 'NOT #status IN (:w0x0, :w0x1)', { ':w0x0': 'done', ':w0x1': 'parked' }],
    ['at least', { field: 'nextFrom', atLeast: 5 }, '#nextFrom >= :w0', { ':w0': 5 }],
    ['at most', { field: 'committed', atMost: 5 }, '#committed <= :w0', { ':w0': 5 }],
  ])('%s', (_what, r, expression, values) => {
    const field = r.field;
    expect(requirementsCondition([r])).toEqual({
      expression: `attribute_exists(pk) AND ${expression}`,
      names: { [`#${field}`]: field },
      values,
    });
  });

  it('requires the item to exist and joins requirements in order, each with its own placeholders', () => {
    const c = requirementsCondition([
      { field: 'status', is: 'active' },
      { field: 'nextFrom', is: 3 },
    ]);
    expect(c.expression).toBe('attribute_exists(pk) AND #status = :w0 AND #nextFrom = :w1');
    expect(c.values).toEqual({ ':w0': 'active', ':w1': 3 });
  });
});

describe('changeUpdate', () => {
  it('sets, adds from zero when absent, then removes', () => {
    expect(changeUpdate({ set: { committed: 4, pid: undefined }, add: { rewinds: 1 }, remove: ['reason'] })).toEqual({
      expression: 'SET #committed = :c0, #rewinds = if_not_exists(#rewinds, :zero) + :a0 REMOVE #reason',
      names: { '#committed': 'committed', '#rewinds': 'rewinds', '#reason': 'reason' },
      values: { ':c0': 4, ':a0': 1, ':zero': 0 },
    });
  });

  it('has no SET clause when nothing is set', () => {
    expect(changeUpdate({ remove: ['dispatchedAtMs'] })).toEqual({
      expression: 'REMOVE #dispatchedAtMs',
      names: { '#dispatchedAtMs': 'dispatchedAtMs' },
      values: {},
    });
  });
});
