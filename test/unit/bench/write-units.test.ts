/** Write units as DynamoDB bills them, from the requests a client sends (bench:e2e's sink and ledger counts). */
import { Readable } from 'node:stream';
import { DynamoDBClient, TransactWriteItemsCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  attributeSizeBytes,
  countWriteUnits,
  createWriteTally,
  itemSizeBytes,
  storedKeyJson,
  writesOfRequest,
  batchGetReadUnits,
  writeUnitsFor,
} from '../../../bench/write-units';

describe('item size (DynamoDB item-size rules)', () => {
  it('sizes strings by UTF-8 bytes, numbers by significant digits, and names count too', () => {
    expect(attributeSizeBytes({ S: 'abc' })).toBe(3);
    expect(attributeSizeBytes({ S: 'é' })).toBe(2);
    expect(attributeSizeBytes({ N: '123' })).toBe(3); // ceil(3 / 2) + 1
    expect(attributeSizeBytes({ N: '1000' })).toBe(2); // trailing zeros trimmed
    expect(attributeSizeBytes({ N: '-0.0012' })).toBe(2);
    expect(attributeSizeBytes({ BOOL: true })).toBe(1);
    expect(attributeSizeBytes({ M: { a: { S: 'xy' } } })).toBe(3 + 1 + 1 + 2);
    expect(itemSizeBytes({ pk: { S: 'acct-000001' }, total: { N: '42' } })).toBe(2 + 11 + 5 + 2);
  });

  it('bills 1 KB per unit, at least one, twice inside a transaction', () => {
    expect(writeUnitsFor(0, false)).toBe(1);
    expect(writeUnitsFor(1024, false)).toBe(1);
    expect(writeUnitsFor(1025, false)).toBe(2);
    expect(writeUnitsFor(100, true)).toBe(2);
    expect(writeUnitsFor(3000, true)).toBe(6);
  });
});

describe('the write tally', () => {
  const sinkUpdate = (pk: string) => ({
    Update: {
      TableName: 'sink',
      Key: { pk: { S: pk } },
      UpdateExpression: 'ADD #t :t',
      ExpressionAttributeValues: { ':t': { N: '5' } },
    },
  });

  it('finds every item a transaction writes, per table, transactional', () => {
    const writes = writesOfRequest('TransactWriteItems', {
      TransactItems: [
        { ConditionCheck: { TableName: 'ledger', Key: { pk: { S: 's' }, sk: { S: 'META' } } } },
        sinkUpdate('a'),
        sinkUpdate('b'),
      ],
    });
    expect(writes.map((w) => [w.table, w.transactional])).toEqual([
      ['ledger', true],
      ['sink', true],
      ['sink', true],
    ]);
    expect(writesOfRequest('Query', { TableName: 'ledger' })).toEqual([]);
  });

  it('settles each write at the larger of its request size and the stored item size', () => {
    const tally = createWriteTally();
    tally.add(writesOfRequest('TransactWriteItems', { TransactItems: [sinkUpdate('a'), sinkUpdate('b')] }));
    tally.add(writesOfRequest('UpdateItem', sinkUpdate('a').Update));
    expect(tally.tables().sink).toEqual({ writes: 3, transactionalWrites: 2, requests: 2 });
    // Item a grew to 1.5 KB: its transactional write costs 4, its plain one 2; b (gone) is sized by its request.
    const stored = new Map([[storedKeyJson({ pk: { S: 'a' } }), 1536]]);
    expect(tally.settle('sink', (k) => stored.get(k))).toBe(4 + 2 + 2);
    // The floor for the same writes: none of them transactional.
    expect(tally.settle('sink', (k) => stored.get(k), 'ideal')).toBe(2 + 2 + 1);
    tally.reset();
    expect(tally.tables()).toEqual({});
  });

  it('keys a Put by its key attributes, not by its whole item', () => {
    const [w] = writesOfRequest('PutItem', { TableName: 'ledger', Item: { pk: { S: 's' }, sk: { S: 'P#0' }, committed: { N: '7' } } });
    expect(w?.key).toBe(storedKeyJson({ pk: { S: 's' }, sk: { S: 'P#0' } }));
  });
});

describe('countWriteUnits', () => {
  it('counts from the serialized requests the client sends', async () => {
    // A stub HTTP handler: the requests are serialized exactly as for DynamoDB, and answered with {}.
    const client = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      requestHandler: {
        handle: async () => ({
          response: {
            statusCode: 200,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: Readable.from([Buffer.from('{}')]),
          },
        }),
      } as never,
    });
    const tally = countWriteUnits(client);
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Update: {
              TableName: 'sink',
              Key: { pk: { S: 'a' } },
              UpdateExpression: 'ADD t :t',
              ExpressionAttributeValues: { ':t': { N: '1' } },
            },
          },
          { ConditionCheck: { TableName: 'ledger', Key: { pk: { S: 's' }, sk: { S: 'M' } }, ConditionExpression: 'attribute_exists(pk)' } },
        ],
      }),
    );
    await client.send(
      new UpdateItemCommand({
        TableName: 'sink',
        Key: { pk: { S: 'b' } },
        UpdateExpression: 'ADD t :t',
        ExpressionAttributeValues: { ':t': { N: '1' } },
      }),
    );
    client.destroy();
    expect(tally.tables()).toEqual({
      sink: { writes: 2, transactionalWrites: 1, requests: 2 },
      ledger: { writes: 1, transactionalWrites: 1, requests: 1 },
    });
    expect(tally.settle('sink', () => undefined)).toBe(2 + 1);
  });

  it('counts a PartiQL INSERT or UPDATE as a plain write of the item its key parameters name', () => {
    const writes = writesOfRequest('BatchExecuteStatement', {
      Statements: [
        {
          Statement: `INSERT INTO "sink" VALUE {'total' : ?, 'pk' : ?, '_applied:s:t:0' : ?}`,
          Parameters: [{ N: '5' }, { S: 'a' }, { N: '10' }],
        },
        {
          Statement: `UPDATE "sink" SET "total" = ? SET "_applied:s:t:0" = ? WHERE "pk" = ? AND "total" = ? AND "_applied:s:t:0" < ?`,
          Parameters: [{ N: '9' }, { N: '20' }, { S: 'b' }, { N: '4' }, { N: '20' }],
        },
        { Statement: `SELECT * FROM "sink" WHERE "pk" = ?`, Parameters: [{ S: 'c' }] },
      ],
    });
    expect(writes.map((w) => [w.table, w.key, w.transactional])).toEqual([
      ['sink', storedKeyJson({ pk: { S: 'a' } }), false],
      ['sink', storedKeyJson({ pk: { S: 'b' } }), false],
    ]);
  });

  it('bills a BatchGetItem per key asked: 4 KB steps, half when eventually consistent, nothing for unprocessed keys', () => {
    const big = { pk: { S: 'big' }, pad: { S: 'x'.repeat(5000) } };
    const units = batchGetReadUnits(
      { RequestItems: { sink: { Keys: [{ pk: { S: 'big' } }, { pk: { S: 'none' } }, { pk: { S: 'later' } }] } } },
      { Responses: { sink: [big] }, UnprocessedKeys: { sink: { Keys: [{ pk: { S: 'later' } }] } } },
    );
    expect(units.get('sink')).toBe((2 + 1) / 2);
  });
});
