/** The Ledger contract against the DynamoDB adapter on the emulator, plus its request economy. */
import { DynamoDBClient, GetItemCommand, InternalServerError, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { ledgerContract, partitionFixture, rangeFixture } from '../contract/ledger.contract';
import { plannerLoopContract } from '../contract/planner-loop.contract';
import { countRequests } from '../support/dynamo-requests';
import { createSinkTable, emulatorClientConfig, testDynamo, uniqueName } from '../support/env';
import type { SinkMark, SinkWrite } from '../../lib/ports/sink-write';

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

describe('DynamoDB ledger marked sink writes', () => {
  const mark: SinkMark = { stream: 'marked', topic: 't', partition: 3, until: 100 };
  const bump = (table: string, pk: string): SinkWrite => ({
    update: { table, key: { pk }, expression: 'ADD #n :one', names: { '#n': 'n' }, values: { ':one': 1 } },
  });
  /** The operation of every command `c` sends from now on, in order. */
  const watchOperations = (c: DynamoDBClient, name: string, fault?: (op: string) => Error | undefined) => {
    const ops: Array<{ op: string; key?: string }> = [];
    c.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: { pk?: string | { S?: string } } };
        // The document client's commands may carry the key marshalled or not at this step.
        const pk = input.Key?.pk;
        ops.push({ op: context.commandName ?? '?', key: typeof pk === 'string' ? pk : pk?.S });
        const err = fault?.(context.commandName ?? '?');
        if (err) throw err;
        return next(args);
      },
      { step: 'initialize', name },
    );
    return ops;
  };

  it('sends each write as its own conditional UpdateItem (one write unit an item), never a transaction', async () => {
    const sink = await createSinkTable(client, 'marked-eco');
    const own = testDynamo();
    const ops = watchOperations(own, 'markedOps');
    try {
      const ledger = createDynamoLedger({ client: own, tableName });
      const writes = Array.from({ length: 40 }, (_, i) => bump(sink, `k${i}`));
      expect(await ledger.applyMarkedSinkWrites({ mark, writes })).toEqual({ applied: 40, skipped: 0 });
      expect(await ledger.applyMarkedSinkWrites({ mark, writes })).toEqual({ applied: 0, skipped: 40 });
      expect(ops.map((o) => o.op)).toEqual(Array.from({ length: 80 }, () => 'UpdateItemCommand'));
      const item = await client.send(new GetItemCommand({ TableName: sink, Key: { pk: { S: 'k7' } }, ConsistentRead: true }));
      expect(item.Item?.n).toEqual({ N: '1' });
    } finally {
      own.destroy();
    }
  });

  it('retries a throttled write, or one DynamoDB failed with a 500, alone: the others are sent once, every item gets the batch once', async () => {
    const sink = await createSinkTable(client, 'marked-throttle');
    // The SDK's own retries off, so that the ledger's retry is what is seen; the fault is DynamoDB's own error.
    const own = new DynamoDBClient({ ...emulatorClientConfig(), maxAttempts: 1 });
    const throttled = new Set(['k2', 'k5', 'k11']);
    const fired: string[] = [];
    const ops = watchOperations(own, 'throttleOps', (op) => {
      const key = ops[ops.length - 1]?.key;
      if (op !== 'UpdateItemCommand' || !key || !throttled.has(key) || fired.filter((k) => k === key).length >= 2) return undefined;
      fired.push(key);
      // k5 meets DynamoDB's own 500 (ambiguous: the write may have been applied); the others a throttle.
      return key === 'k5'
        ? Object.assign(new InternalServerError({ message: 'injected 500', $metadata: { httpStatusCode: 500 } }), {
            $fault: 'server' as const,
          })
        : new ProvisionedThroughputExceededException({ message: 'injected throttle', $metadata: {} });
    });
    try {
      const ledger = createDynamoLedger({ client: own, tableName, sleep: async () => undefined });
      const writes = Array.from({ length: 16 }, (_, i) => bump(sink, `k${i}`));
      expect(await ledger.applyMarkedSinkWrites({ mark, writes })).toEqual({ applied: 16, skipped: 0 });
      expect(fired.sort()).toEqual(['k11', 'k11', 'k2', 'k2', 'k5', 'k5']);
      for (let i = 0; i < 16; i++) {
        const sent = ops.filter((o) => o.key === `k${i}`).length;
        expect([`k${i}`, sent]).toEqual([`k${i}`, throttled.has(`k${i}`) ? 3 : 1]);
      }
      const items = await Promise.all(
        writes.map((_, i) => client.send(new GetItemCommand({ TableName: sink, Key: { pk: { S: `k${i}` } }, ConsistentRead: true }))),
      );
      expect(items.map((r) => r.Item?.n)).toEqual(Array.from({ length: 16 }, () => ({ N: '1' })));
    } finally {
      own.destroy();
    }
  });
});
