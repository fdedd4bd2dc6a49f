/** The one line a tool prints about what it deleted or kept on the local stack, and how its tables are removed. */
import { InternalServerError, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import type { Admin } from 'kafkajs';
import { listed, removalLine, removeResources } from '../../../lib/local/tool-cleanup';
import { scriptedDynamo } from '../../support/scripted-dynamo';

const none = { topics: [], tables: [], groups: [] };

describe('clean-up lines', () => {
  it('count each kind and name a few of each', () => {
    expect(listed({ ...none, topics: ['a'] })).toBe('1 topic (a)');
    expect(listed({ topics: ['a', 'b'], tables: ['t'], groups: ['g1', 'g2'] })).toBe(
      '2 topics (a, b), 1 table (t) and 2 consumer groups (g1, g2)',
    );
    const topics = Array.from({ length: 500 }, (_, i) => `bench-planner-x-${String(i).padStart(4, '0')}`);
    expect(listed({ ...none, topics })).toBe('500 topics (bench-planner-x-0000, bench-planner-x-0001, ... bench-planner-x-0499)');
    // A name recorded twice (a topic re-created) counts once.
    expect(listed({ ...none, topics: ['a', 'a'] })).toBe('1 topic (a)');
    expect(listed(none)).toBe('');
  });

  it('say what was deleted and how long it took, what could not be, or that there was nothing', () => {
    expect(removalLine({ ...none, topics: ['a'], tables: ['t'], ms: 1234, errors: [] })).toBe(
      'deleted 1 topic (a) and 1 table (t) in 1.2 s',
    );
    expect(removalLine({ ...none, tables: ['t'], ms: 50, errors: ['broker unreachable'] })).toBe(
      'deleted 1 table (t) in 0.1 s; could not delete the rest: broker unreachable',
    );
    expect(removalLine({ ...none, ms: 3, errors: [] })).toBe('nothing to delete');
  });
});

describe('removing the tables a tool created', () => {
  // No topics or groups to remove: the broker is never asked.
  const admin = {} as Admin;
  const notFound = () => new ResourceNotFoundException({ message: 'Requested resource not found', $metadata: {} });

  it('deletes those that exist and skips those that do not', async () => {
    const dynamo = scriptedDynamo(({ operation, input }) =>
      input.TableName === 'gone' || operation === 'DescribeTable' ? notFound() : {},
    );
    const removal = await removeResources({ ...none, tables: ['t1', 'gone'] }, { admin, dynamo });
    expect(removal).toMatchObject({ tables: ['t1'], errors: [] });
  });

  it('fails in one line naming DynamoDB, the operation and the table', async () => {
    const dynamo = scriptedDynamo(() => new InternalServerError({ message: 'boom\nmore', $metadata: { attempts: 3 } }));
    const removal = await removeResources({ ...none, tables: ['t1'] }, { admin, dynamo });
    expect(removal.errors).toEqual([
      'remove what a tool created: DynamoDB DeleteTable on table t1 failed (3 attempts): InternalServerError: boom',
    ]);
  });

  it('gives up on a table DynamoDB still describes once the time is up', async () => {
    const dynamo = scriptedDynamo(({ operation }) => (operation === 'DescribeTable' ? { Table: { TableStatus: 'DELETING' } } : {}));
    const removal = await removeResources({ ...none, tables: ['t1'] }, { admin, dynamo }, { timeoutMs: 0 });
    expect(removal.errors).toEqual(['DynamoDB still describes table t1 0 ms after its deletion']);
  });
});
