/** The Ledger contract against the DynamoDB adapter on the emulator, plus its request economy. */
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { ledgerContract, partitionFixture, rangeFixture } from '../contract/ledger.contract';
import { plannerLoopContract } from '../contract/planner-loop.contract';
import { countRequests } from '../support/dynamo-requests';
import { createSinkTable, testDynamo, uniqueName } from '../support/env';

const client = testDynamo();
/** Requests sent through `client` (tests run one at a time, so a difference is one ledger's). */
const requestCount = countRequests(client);
const tableName = uniqueName('ledger');

beforeAll(() => ensureLedgerTable(client, tableName));
afterAll(() => client.destroy());

describe('DynamoDB ledger (contract)', () => {
  let sinkTable: string | undefined;
  ledgerContract(async () => createDynamoLedger({ client, tableName }), {
    sinkTable: async () => (sinkTable ??= await createSinkTable(client, 'marks')),
  });
});

describe('DynamoDB ledger (planner loop lease contract)', () => {
  plannerLoopContract(async () => createDynamoLedger({ client, tableName }));
});

describe('DynamoDB ledger batching', () => {
  it('writes 2 actions per planned range in transactions of 1 fence + 99 actions', async () => {
    const ledger = Object.assign(createDynamoLedger({ client, tableName }), { requestCount });
    const stream = uniqueName('batch');
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'o' };
    const n = 300;
    const before = ledger.requestCount();
    await ledger.applyPlan({
      ...ctx,
      writes: Array.from({ length: n }, (_, i) => ({ kind: 'register-partition' as const, partition: partitionFixture(stream, 't', i) })),
    });
    expect(ledger.requestCount() - before).toBe(Math.ceil(n / 99));
    const mid = ledger.requestCount();
    const out = await ledger.applyPlan({
      ...ctx,
      writes: Array.from({ length: n }, (_, i) => ({
        kind: 'plan-range' as const,
        range: rangeFixture(stream, 't', i, 0, 10, lease.epoch),
        partitionUpdate: { lastPlannedAtMs: 1 },
      })),
    });
    expect(out.every((o) => o === 'applied')).toBe(true);
    // 49 ranges (98 actions) per transaction.
    expect(ledger.requestCount() - mid).toBe(Math.ceil(n / 49));
  });
});

describe('DynamoDB ledger lease takes', () => {
  it('tells a refused take (wrong until, held) from the condition failure itself: one request each', async () => {
    const ledger = Object.assign(createDynamoLedger({ client, tableName }), { requestCount });
    const stream = uniqueName('take');
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    await ledger.applyPlan({
      stream,
      epoch: lease.epoch,
      ownerToken: 'o',
      writes: [
        { kind: 'register-partition', partition: partitionFixture(stream, 't', 0) },
        { kind: 'plan-range', range: rangeFixture(stream, 't', 0, 0, 10, lease.epoch), partitionUpdate: { lastPlannedAtMs: 1 } },
      ],
    });
    const take = (until: number, leaseToken: string) =>
      ledger.takeRangeLease({ stream, topic: 't', partition: 0, from: 0, until, leaseToken, nowMs: 1000, leaseMs: 1000, maxAttempts: 3 });
    let before = ledger.requestCount();
    expect(await take(11, 'forged')).toMatchObject({ kind: 'mismatch', range: { until: 10, attempts: 0 } });
    expect(ledger.requestCount() - before).toBe(1);
    expect(await take(10, 'A')).toMatchObject({ kind: 'taken' });
    before = ledger.requestCount();
    expect(await take(10, 'B')).toMatchObject({ kind: 'held', range: { leaseToken: 'A' } });
    expect(ledger.requestCount() - before).toBe(1);
  });
});
