/**
 * Marked sink writes on the DynamoDB ledger, on a client whose HTTP answers are scripted (nothing
 * leaves the process): one conditional UpdateItem per item (no TransactWriteItems, which DynamoDB
 * bills twice), a mark already there counts as skipped, and a throttled write is retried alone by
 * the SDK while the others are sent once.
 */
import { Readable } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import type { SinkWrite } from '../../lib/ports/ledger';

type Sent = { target: string; account?: string; condition?: unknown };

/** A client whose requests are answered by `answer` (status and JSON body), as DynamoDB's HTTP API would. */
function scriptedHttp(answer: (target: string, body: Record<string, unknown>, n: number) => { status: number; body: unknown }) {
  const sent: Sent[] = [];
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 3,
    requestHandler: {
      handle: async (request: { headers: Record<string, string>; body?: string }) => {
        const target = (request.headers['x-amz-target'] ?? '').split('.').at(-1) ?? '';
        const body = JSON.parse(request.body ?? '{}') as Record<string, unknown>;
        const account = ((body.Key as Record<string, { S?: string }> | undefined)?.pk ?? {}).S;
        sent.push({ target, account, condition: body.ConditionExpression });
        const a = answer(target, body, sent.filter((s) => s.account === account).length);
        return {
          response: {
            statusCode: a.status,
            headers: { 'content-type': 'application/x-amz-json-1.0' },
            body: Readable.from([Buffer.from(JSON.stringify(a.body))]),
          },
        };
      },
    } as never,
  });
  return { ledger: createDynamoLedger({ client, tableName: 'ledger' }), sent };
}

const mark = { stream: 's', topic: 't', partition: 0, until: 100 };
const add = (account: string): SinkWrite => ({
  update: { table: 'sink', key: { pk: account }, expression: 'ADD #total :n', names: { '#total': 'total' }, values: { ':n': 1 } },
});
const accounts = Array.from({ length: 40 }, (_, i) => `acct-${i}`);

describe('DynamoDB ledger marked sink writes', () => {
  it('sends one conditional update per item, guarded by the mark, and no transaction', async () => {
    const t = scriptedHttp(() => ({ status: 200, body: {} }));
    expect(await t.ledger.applyMarkedSinkWrites({ mark, writes: accounts.map(add) })).toEqual({ applied: 40, skipped: 0 });
    expect(t.sent.map((s) => s.target)).toEqual(accounts.map(() => 'UpdateItem'));
    expect(new Set(t.sent.map((s) => s.account))).toEqual(new Set(accounts));
    expect(t.sent.every((s) => s.condition === 'attribute_not_exists(#kdMark) OR #kdMark < :kdMark')).toBe(true);
  });

  it('counts an item whose mark is there already as skipped', async () => {
    const failed = {
      __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException',
      message: 'The conditional request failed',
    };
    const t = scriptedHttp((_t, body) =>
      (body.Key as { pk: { S: string } }).pk.S === 'acct-3' ? { status: 400, body: failed } : { status: 200, body: {} },
    );
    expect(await t.ledger.applyMarkedSinkWrites({ mark, writes: accounts.map(add) })).toEqual({ applied: 39, skipped: 1 });
  });

  it('retries a throttled write alone; the others are sent once', async () => {
    const throttled = { __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException', message: 'slow down' };
    const t = scriptedHttp((_t, body, n) =>
      ['acct-7', 'acct-21'].includes((body.Key as { pk: { S: string } }).pk.S) && n === 1
        ? { status: 400, body: throttled }
        : { status: 200, body: {} },
    );
    expect(await t.ledger.applyMarkedSinkWrites({ mark, writes: accounts.map(add) })).toEqual({ applied: 40, skipped: 0 });
    const per = new Map<string, number>();
    for (const s of t.sent) per.set(s.account as string, (per.get(s.account as string) ?? 0) + 1);
    expect([per.get('acct-7'), per.get('acct-21')]).toEqual([2, 2]);
    expect(accounts.filter((a) => !['acct-7', 'acct-21'].includes(a)).every((a) => per.get(a) === 1)).toBe(true);
  });
});
