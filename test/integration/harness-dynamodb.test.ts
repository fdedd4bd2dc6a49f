/**
 * Proves the DynamoDB emulator has the semantics the ledger relies on: conditional writes that lose
 * with ConditionalCheckFailedException (and return the current item), and transactions that are
 * cancelled as a whole with per-action CancellationReasons. The launcher's faster paths
 * (infra/local/dynamodb/patches/speed.py) are checked here too: rollback of every kind of action,
 * every AttributeValue type, parse reuse across values, the item size limit.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { testDynamo, uniqueName } from '../support/env';

describe('local DynamoDB emulator', () => {
  const ddb = testDynamo();
  const table = uniqueName('harness');

  beforeAll(async () => {
    await ddb.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
      }),
    );
  });
  afterAll(() => ddb.destroy());

  const key = (sk: string) => ({ pk: { S: 'p' }, sk: { S: sk } });

  it('loses a conditional write with ConditionalCheckFailedException and returns the current item', async () => {
    await ddb.send(new PutItemCommand({ TableName: table, Item: { ...key('a'), v: { N: '1' } } }));
    const err = await ddb
      .send(
        new UpdateItemCommand({
          TableName: table,
          Key: key('a'),
          UpdateExpression: 'SET v = :new',
          ConditionExpression: 'v = :expected',
          ExpressionAttributeValues: { ':new': { N: '3' }, ':expected': { N: '2' } },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ConditionalCheckFailedException);
    expect((err as ConditionalCheckFailedException).Item?.v).toEqual({ N: '1' });

    // The winner's condition holds and moves the value forward.
    await ddb.send(
      new UpdateItemCommand({
        TableName: table,
        Key: key('a'),
        UpdateExpression: 'SET v = :new',
        ConditionExpression: 'v = :expected',
        ExpressionAttributeValues: { ':new': { N: '2' }, ':expected': { N: '1' } },
      }),
    );
    const got = await ddb.send(new GetItemCommand({ TableName: table, Key: key('a'), ConsistentRead: true }));
    expect(got.Item?.v).toEqual({ N: '2' });
  });

  it('rejects a put over an existing item with attribute_not_exists', async () => {
    await ddb.send(new PutItemCommand({ TableName: table, Item: { ...key('b'), v: { N: '1' } } }));
    await expect(
      ddb.send(
        new PutItemCommand({
          TableName: table,
          Item: { ...key('b'), v: { N: '9' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    ).rejects.toBeInstanceOf(ConditionalCheckFailedException);
  });

  it('cancels a whole TransactWriteItems with CancellationReasons when one condition fails', async () => {
    await ddb.send(new PutItemCommand({ TableName: table, Item: { ...key('progress'), offset: { N: '100' } } }));
    const err = await ddb
      .send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Put: { TableName: table, Item: { ...key('out-1'), total: { N: '5' } } } },
            {
              Update: {
                TableName: table,
                Key: key('progress'),
                UpdateExpression: 'SET #o = :next',
                ConditionExpression: '#o = :expected',
                ExpressionAttributeNames: { '#o': 'offset' },
                ExpressionAttributeValues: { ':next': { N: '200' }, ':expected': { N: '50' } },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
          ],
        }),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(TransactionCanceledException);
    const reasons = (err as TransactionCanceledException).CancellationReasons ?? [];
    expect(reasons.map((r) => r.Code)).toEqual(['None', 'ConditionalCheckFailed']);
    expect(reasons[1]?.Item?.offset).toEqual({ N: '100' });

    // Atomic: the put of the cancelled transaction did not happen, progress did not move.
    const out = await ddb.send(new GetItemCommand({ TableName: table, Key: key('out-1'), ConsistentRead: true }));
    expect(out.Item).toBeUndefined();
    const progress = await ddb.send(new GetItemCommand({ TableName: table, Key: key('progress'), ConsistentRead: true }));
    expect(progress.Item?.offset).toEqual({ N: '100' });
  });

  it('lets exactly one of many concurrent conditional writes on one item win', async () => {
    await ddb.send(new PutItemCommand({ TableName: table, Item: { ...key('race'), v: { N: '0' } } }));
    const attempts = Array.from({ length: 40 }, (_, i) =>
      ddb
        .send(
          new UpdateItemCommand({
            TableName: table,
            Key: key('race'),
            UpdateExpression: 'SET v = :new',
            ConditionExpression: 'v = :zero',
            ExpressionAttributeValues: { ':new': { N: String(i + 1) }, ':zero': { N: '0' } },
          }),
        )
        .then(
          () => 'won',
          (e: unknown) => (e instanceof ConditionalCheckFailedException ? 'lost' : String(e)),
        ),
    );
    const results = await Promise.all(attempts);
    expect(results.filter((r) => r === 'won')).toHaveLength(1);
    expect(results.filter((r) => r === 'lost')).toHaveLength(39);
  });

  it('commits a TransactWriteItems whose conditions all hold', async () => {
    await ddb.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: table, Item: { ...key('out-2'), total: { N: '7' } } } },
          {
            Update: {
              TableName: table,
              Key: key('progress'),
              UpdateExpression: 'SET #o = :next',
              ConditionExpression: '#o = :expected',
              ExpressionAttributeNames: { '#o': 'offset' },
              ExpressionAttributeValues: { ':next': { N: '200' }, ':expected': { N: '100' } },
            },
          },
        ],
      }),
    );
    const out = await ddb.send(new GetItemCommand({ TableName: table, Key: key('out-2'), ConsistentRead: true }));
    expect(out.Item?.total).toEqual({ N: '7' });
    const progress = await ddb.send(new GetItemCommand({ TableName: table, Key: key('progress'), ConsistentRead: true }));
    expect(progress.Item?.offset).toEqual({ N: '200' });
  });

  const get = async (sk: string) => (await ddb.send(new GetItemCommand({ TableName: table, Key: key(sk), ConsistentRead: true }))).Item;

  it('rolls back updates, replacing puts and deletes that ran before the failing action', async () => {
    await ddb.send(
      new PutItemCommand({ TableName: table, Item: { ...key('rb-upd'), n: { N: '1' }, m: { M: { a: { L: [{ S: 'x' }] } } } } }),
    );
    await ddb.send(new PutItemCommand({ TableName: table, Item: { ...key('rb-put'), v: { S: 'old' } } }));
    await ddb.send(new PutItemCommand({ TableName: table, Item: { ...key('rb-del'), v: { S: 'keep me' } } }));
    const before = await Promise.all(['rb-upd', 'rb-put', 'rb-del'].map(get));
    const err = await ddb
      .send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Update: {
                TableName: table,
                Key: key('rb-upd'),
                UpdateExpression: 'SET n = n + :one, m.a[0] = :y',
                ExpressionAttributeValues: { ':one': { N: '1' }, ':y': { S: 'y' } },
              },
            },
            { Put: { TableName: table, Item: { ...key('rb-put'), v: { S: 'new' } } } },
            { Delete: { TableName: table, Key: key('rb-del') } },
            { Put: { TableName: table, Item: { ...key('rb-new'), v: { S: 'never' } } } },
            { ConditionCheck: { TableName: table, Key: key('rb-missing'), ConditionExpression: 'attribute_exists(pk)' } },
          ],
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionCanceledException);
    expect(await Promise.all(['rb-upd', 'rb-put', 'rb-del'].map(get))).toEqual(before);
    expect(await get('rb-new')).toBeUndefined();
  });

  it('stores and returns every AttributeValue type unchanged (Put, Get, Query)', async () => {
    const item: Record<string, AttributeValue> = {
      ...key('types'),
      s: { S: 'zoë ✓' },
      n: { N: '-12.5e3' },
      b: { B: new Uint8Array([0, 1, 2, 250, 255]) },
      ss: { SS: ['a', 'b'] },
      ns: { NS: ['1', '2.5'] },
      bs: { BS: [new Uint8Array([1]), new Uint8Array([2, 3])] },
      m: { M: { inner: { M: { deep: { L: [{ N: '1' }, { S: 'two' }, { NULL: true }, { BOOL: false }, { B: new Uint8Array([9]) }] } } } } },
      l: { L: [] },
      nul: { NULL: true },
      t: { BOOL: true },
    };
    await ddb.send(new PutItemCommand({ TableName: table, Item: item }));
    expect(await get('types')).toEqual(item);
    const q = await ddb.send(
      new QueryCommand({
        TableName: table,
        KeyConditionExpression: 'pk = :p AND sk = :s',
        ExpressionAttributeValues: { ':p': { S: 'p' }, ':s': { S: 'types' } },
      }),
    );
    expect(q.Items).toEqual([item]);
  });

  it("evaluates a reused condition and update expression with each request's own values", async () => {
    await ddb.send(new PutItemCommand({ TableName: table, Item: { ...key('reuse'), v: { N: '0' } } }));
    const bump = (expected: number) =>
      ddb
        .send(
          new UpdateItemCommand({
            TableName: table,
            Key: key('reuse'),
            UpdateExpression: 'SET v = v + :one',
            ConditionExpression: 'v = :expected',
            ExpressionAttributeValues: { ':one': { N: '1' }, ':expected': { N: String(expected) } },
          }),
        )
        .then(
          () => 'applied',
          (e: unknown) => (e instanceof ConditionalCheckFailedException ? 'lost' : String(e)),
        );
    expect([await bump(0), await bump(0), await bump(1), await bump(2), await bump(1)]).toEqual([
      'applied',
      'lost',
      'applied',
      'applied',
      'lost',
    ]);
    expect((await get('reuse'))?.v).toEqual({ N: '3' });
  });

  it('rejects an item over the 400 KB limit and keeps one under it', async () => {
    const big = (sk: string, bytes: number) => ({ TableName: table, Item: { ...key(sk), blob: { S: 'x'.repeat(bytes) } } });
    await ddb.send(new PutItemCommand(big('small-enough', 380_000)));
    expect((await get('small-enough'))?.blob?.S).toHaveLength(380_000);
    const err = await ddb.send(new PutItemCommand(big('too-big', 420_000))).catch((e: unknown) => e);
    expect((err as Error).name).toBe('ValidationException');
    expect((err as Error).message).toMatch(/size/i);
    expect(await get('too-big')).toBeUndefined();
    await ddb.send(new DeleteItemCommand({ TableName: table, Key: key('small-enough') }));
  });
});
