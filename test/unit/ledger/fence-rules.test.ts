/** The planner fence (ports/ledger-rules/fence.ts) and its DynamoDB condition. */
import { requirementsCondition } from '../../../lib/ledger/conditions.dynamodb';
import { plannerFence } from '../../../lib/ports/ledger-rules/fence';
import { meets } from '../../../lib/ports/ledger-rules/item-step';

describe('plannerFence', () => {
  it.each<[string, object | undefined, boolean]>([
    ['the epoch and owner that wrote', { epoch: 3, ownerToken: 'me' }, true],
    ['a later epoch', { epoch: 4, ownerToken: 'me' }, false],
    ['another owner', { epoch: 3, ownerToken: 'you' }, false],
    ['no META item', undefined, false],
  ])('a write of epoch 3 by "me" against %s: %s', (_what, meta, ok) => {
    expect(meets(meta, plannerFence(3, 'me'))).toBe(ok);
  });

  it('is the condition DynamoDB checks', () => {
    expect(requirementsCondition(plannerFence(3, 'me'))).toEqual({
      expression: 'attribute_exists(pk) AND #epoch = :w0 AND #ownerToken = :w1',
      names: { '#epoch': 'epoch', '#ownerToken': 'ownerToken' },
      values: { ':w0': 3, ':w1': 'me' },
    });
  });
});
