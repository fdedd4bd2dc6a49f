/** The DynamoDB store clock: DynamoDB's time from response Date headers, whatever the local clock says. */
import { Readable } from 'node:stream';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoStoreClock } from '../../../lib/ledger/clock.dynamodb';

const STORE_EPOCH_MS = Date.parse('2026-03-01T12:00:00.000Z');

/** A client whose every response is stamped by a fake store clock, `roundTripMs` after sending. */
function fakeDynamo(opts: { storeNow: () => number; local: { ms: number }; roundTripMs: number; dateHeader?: boolean }) {
  const requests: string[] = [];
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://dynamodb.invalid',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    requestHandler: {
      handle: async (req: { headers: Record<string, string> }) => {
        requests.push(req.headers['x-amz-target'] ?? '');
        // The store stamps halfway through the round trip, in whole seconds as HTTP dates are.
        opts.local.ms += opts.roundTripMs / 2;
        const headers: Record<string, string> = { 'content-type': 'application/x-amz-json-1.0' };
        if (opts.dateHeader !== false) headers.date = new Date(opts.storeNow()).toUTCString();
        opts.local.ms += opts.roundTripMs / 2;
        return { response: { statusCode: 200, headers, body: Readable.from([Buffer.from('{}')]) } };
      },
    } as never,
  });
  return { client, requests };
}

describe('DynamoDB store clock', () => {
  it('reads the store time when the local clock runs 10 minutes ahead, probing once when cold', async () => {
    const local = { ms: STORE_EPOCH_MS + 600_000 + 250 };
    const storeNow = () => local.ms - 600_000;
    const { client, requests } = fakeDynamo({ storeNow, local, roundTripMs: 20 });
    const clock = createDynamoStoreClock({ client, tableName: 'ledger', localClock: () => local.ms });
    const first = await clock();
    expect(requests).toEqual(['DynamoDB_20120810.GetItem']);
    expect(Math.abs(first - storeNow())).toBeLessThanOrEqual(clock.offset()!.errorMs + 1);
    expect(clock.offset()!.errorMs).toBeLessThanOrEqual(510);
    // Warm: no more probes; every other response refines the estimate.
    for (let i = 0; i < 12; i++) {
      local.ms += 137;
      await client.send(new GetItemCommand({ TableName: 'ledger', Key: { pk: { S: 'x' }, sk: { S: 'y' } } }));
    }
    const warm = await clock();
    expect(requests).toHaveLength(13);
    expect(clock.offset()!.errorMs).toBeLessThan(100);
    expect(Math.abs(warm - storeNow())).toBeLessThanOrEqual(clock.offset()!.errorMs + 1);
    // Idle for over a minute: the next reading probes again before anyone judges a lease with it.
    local.ms += 61_000;
    expect(clock.offset()).toBeUndefined();
    expect(Math.abs((await clock()) - storeNow())).toBeLessThanOrEqual(clock.offset()!.errorMs + 1);
    expect(requests).toHaveLength(14);
  });

  it('starts afresh when the local clock is stepped, and falls back to the local clock without a Date header', async () => {
    const local = { ms: STORE_EPOCH_MS };
    let skewMs = 0;
    const { client } = fakeDynamo({ storeNow: () => local.ms - skewMs, local, roundTripMs: 10 });
    const clock = createDynamoStoreClock({ client, tableName: 'ledger', localClock: () => local.ms });
    await clock();
    skewMs = 90_000; // NTP stepped the local clock 90 s ahead
    await client.send(new GetItemCommand({ TableName: 'ledger', Key: { pk: { S: 'x' }, sk: { S: 'y' } } }));
    expect(Math.abs((await clock()) - (local.ms - skewMs))).toBeLessThanOrEqual(1000);

    const bare = { ms: STORE_EPOCH_MS };
    const silent = fakeDynamo({ storeNow: () => 0, local: bare, roundTripMs: 10, dateHeader: false });
    const localOnly = createDynamoStoreClock({ client: silent.client, tableName: 'ledger', localClock: () => bare.ms });
    expect(await localOnly()).toBe(bare.ms);
    expect(localOnly.offset()).toBeUndefined();
  });
});
