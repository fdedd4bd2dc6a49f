/**
 * The emulator applies simple `ADD`/`SET` updates directly (infra/local/dynamodb/patches/speed.py):
 * they must answer as DynamoDB does, errors included, and take the generic path for anything else.
 * A single-item UpdateItem of that shape is served without moto's request stack at all; the
 * emulator marks those answers with an `x-emulator-path: direct` header, which these tests read.
 * (The suite runs the emulator with MOTO_VERIFY_FAST=1, which also compares both paths per request.)
 */
import { ConditionalCheckFailedException, GetItemCommand, UpdateItemCommand, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { recordEmulatorPaths } from '../support/emulator-paths';
import { createSinkTable, testDynamo } from '../support/env';

const client = testDynamo();
const paths = recordEmulatorPaths(client);
let table: string;
beforeAll(async () => {
  table = await createSinkTable(client, 'fastupd');
});
afterAll(() => client.destroy());

const update = (pk: string, input: Omit<UpdateItemCommandInput, 'TableName' | 'Key'>) =>
  client.send(new UpdateItemCommand({ TableName: table, Key: { pk: { S: pk } }, ...input }));
const read = async (pk: string) =>
  (await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }))).Item;

describe('emulator: simple updates applied directly', () => {
  it('adds numbers to absent and present attributes, sets values, keeps the other attributes', async () => {
    const counter = {
      UpdateExpression: 'ADD #t :t, #c :one SET lastOffset = :last, #m = :m',
      ExpressionAttributeNames: { '#t': 'total', '#c': 'count', '#m': '_applied:s:t:0' },
      ExpressionAttributeValues: { ':t': { N: '1.5' }, ':one': { N: '1' }, ':last': { N: '7' }, ':m': { N: '8' } },
    };
    await update('a', counter);
    await update('a', { ...counter, ExpressionAttributeValues: { ...counter.ExpressionAttributeValues, ':t': { N: '2' } } });
    await update('a', { UpdateExpression: 'SET note = :n', ExpressionAttributeValues: { ':n': { S: 'kept' } } });
    expect(await read('a')).toEqual({
      pk: { S: 'a' },
      total: { N: '3.5' },
      count: { N: '2' },
      lastOffset: { N: '7' },
      '_applied:s:t:0': { N: '8' },
      note: { S: 'kept' },
    });
  });

  it('evaluates the condition, and returns the old item on a failed one when asked', async () => {
    const marked = (until: number) =>
      update('b', {
        UpdateExpression: 'ADD #n :one SET #m = :m',
        ConditionExpression: 'attribute_not_exists(#m) OR #m < :m',
        ExpressionAttributeNames: { '#n': 'n', '#m': 'mark' },
        ExpressionAttributeValues: { ':one': { N: '1' }, ':m': { N: String(until) } },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    await marked(10);
    const refused = await marked(10).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConditionalCheckFailedException);
    expect((refused as ConditionalCheckFailedException).Item).toEqual({ pk: { S: 'b' }, n: { N: '1' }, mark: { N: '10' } });
    await marked(20);
    expect(await read('b')).toEqual({ pk: { S: 'b' }, n: { N: '2' }, mark: { N: '20' } });
  });

  it('returns the new item when asked', async () => {
    const res = await update('c', {
      UpdateExpression: 'ADD #n :one',
      ExpressionAttributeNames: { '#n': 'n' },
      ExpressionAttributeValues: { ':one': { N: '5' } },
      ReturnValues: 'ALL_NEW',
    });
    expect(res.Attributes).toEqual({ pk: { S: 'c' }, n: { N: '5' } });
  });

  it.each([
    [
      'ADD to a string',
      'd1',
      { UpdateExpression: 'SET s = :s', ExpressionAttributeValues: { ':s': { S: 'x' } } },
      'ADD s :n',
      { ':n': { N: '1' } },
    ],
    ['an unused value', 'd2', undefined, 'SET a = :a', { ':a': { N: '1' }, ':unused': { N: '2' } }],
    ['a reserved word as a bare name', 'd3', undefined, 'SET total = :a', { ':a': { N: '1' } }],
    ['the key attribute', 'd4', undefined, 'SET pk = :a', { ':a': { S: 'other' } }],
    ['a missing value', 'd5', undefined, 'SET a = :missing', { ':a': { N: '1' } }],
  ])('refuses %s as DynamoDB does, changing nothing', async (_what, pk, first, expression, values) => {
    if (first) await update(pk, first);
    const before = await read(pk);
    await expect(update(pk, { UpdateExpression: expression, ExpressionAttributeValues: values })).rejects.toMatchObject({
      name: 'ValidationException',
    });
    expect(await read(pk)).toEqual(before);
  });

  it('refuses an update that makes the item larger than 400 KB', async () => {
    const big = 'x'.repeat(250 * 1024);
    await update('e', { UpdateExpression: 'SET a = :a', ExpressionAttributeValues: { ':a': { S: big } } });
    await expect(update('e', { UpdateExpression: 'SET b = :b', ExpressionAttributeValues: { ':b': { S: big } } })).rejects.toMatchObject({
      name: 'ValidationException',
    });
    expect(Object.keys((await read('e')) ?? {}).sort()).toEqual(['a', 'pk']);
  });
});

describe("emulator: single-item updates without moto's request stack", () => {
  const lastPath = () => paths[paths.length - 1];
  const marked = (pk: string, until: number) =>
    update(pk, {
      UpdateExpression: 'ADD #t :t, #c :one SET #m = :m',
      ConditionExpression: 'attribute_not_exists(#m) OR #m < :m',
      ExpressionAttributeNames: { '#t': 'total', '#c': 'count', '#m': 'mark' },
      ExpressionAttributeValues: { ':t': { N: '4' }, ':one': { N: '1' }, ':m': { N: String(until) } },
    });

  it('applies a marked update directly, and refuses its replay with a failed condition, as DynamoDB does', async () => {
    await marked('f', 10);
    expect(lastPath()).toBe('direct');
    const replay = await marked('f', 10).catch((e: unknown) => e);
    expect(lastPath()).toBe('direct');
    expect(replay).toBeInstanceOf(ConditionalCheckFailedException);
    expect((replay as Error).message).toBe('The conditional request failed');
    await marked('f', 20);
    expect(await read('f')).toEqual({ pk: { S: 'f' }, total: { N: '8' }, count: { N: '2' }, mark: { N: '20' } });
  });

  it('leaves to moto anything it does not take: return values, a key of the wrong type, a missing table', async () => {
    await update('g', {
      UpdateExpression: 'ADD #n :one',
      ExpressionAttributeNames: { '#n': 'n' },
      ExpressionAttributeValues: { ':one': { N: '1' } },
      ReturnValues: 'UPDATED_NEW',
    });
    expect(lastPath()).toBeUndefined();
    await expect(
      client.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { pk: { N: '1' } },
          UpdateExpression: 'SET a = :a',
          ExpressionAttributeValues: { ':a': { N: '1' } },
        }),
      ),
    ).rejects.toMatchObject({ name: 'ValidationException' });
    expect(lastPath()).toBeUndefined();
    await expect(
      client.send(
        new UpdateItemCommand({
          TableName: `${table}-absent`,
          Key: { pk: { S: 'g' } },
          UpdateExpression: 'SET a = :a',
          ExpressionAttributeValues: { ':a': { N: '1' } },
        }),
      ),
    ).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    expect(lastPath()).toBeUndefined();
    expect(await read('g')).toEqual({ pk: { S: 'g' }, n: { N: '1' } });
  });

  it('leaves an error other than a failed condition to moto, which words it, storing nothing', async () => {
    const big = 'y'.repeat(250 * 1024);
    await update('h', { UpdateExpression: 'SET a = :a', ExpressionAttributeValues: { ':a': { S: big } } });
    expect(lastPath()).toBe('direct');
    await expect(update('h', { UpdateExpression: 'SET b = :b', ExpressionAttributeValues: { ':b': { S: big } } })).rejects.toMatchObject({
      name: 'ValidationException',
    });
    expect(lastPath()).toBeUndefined();
    expect(Object.keys((await read('h')) ?? {}).sort()).toEqual(['a', 'pk']);
  });
});
