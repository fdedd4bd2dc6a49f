/**
 * Proves the DynamoDB emulator has the semantics the ledger relies on: conditional writes that lose
 * with ConditionalCheckFailedException (and return the current item), and transactions that are
 * cancelled as a whole with per-action CancellationReasons.
 */
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  GetItemCommand,
  PutItemCommand,
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
});
