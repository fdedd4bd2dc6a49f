/** The Ledger contract against the DynamoDB adapter on the emulator, plus its request economy. */
import {
  DynamoDBClient,
  GetItemCommand,
  InternalServerError,
  ProvisionedThroughputExceededException,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
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

  const nOf = async (table: string, pk: string) =>
    (await client.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }))).Item?.n;

  it('sends the first write of an expression as an UpdateItem, then reads the items and sends the rest 25 statements to a request', async () => {
    const sink = await createSinkTable(client, 'marked-eco');
    const own = testDynamo();
    const ops = watchOperations(own, 'markedOps');
    try {
      const ledger = createDynamoLedger({ client: own, tableName });
      const writes = Array.from({ length: 40 }, (_, i) => bump(sink, `k${i}`));
      expect(await ledger.applyMarkedSinkWrites({ mark, writes })).toEqual({ applied: 40, skipped: 0 });
      // k0 validates the expression; 39 INSERTs in 2 requests.
      expect(ops.map((o) => o.op)).toEqual([
        'UpdateItemCommand',
        'BatchGetItemCommand',
        'BatchExecuteStatementCommand',
        'BatchExecuteStatementCommand',
      ]);
      ops.length = 0;
      // The same batch again (a retry): the read shows every mark, nothing is written.
      expect(await ledger.applyMarkedSinkWrites({ mark, writes })).toEqual({ applied: 0, skipped: 40 });
      expect(ops.map((o) => o.op)).toEqual(['BatchGetItemCommand']);
      ops.length = 0;
      // The next batch of the partition: UPDATE statements guarded by the values read.
      expect(await ledger.applyMarkedSinkWrites({ mark: { ...mark, until: 200 }, writes })).toEqual({ applied: 40, skipped: 0 });
      expect(ops.map((o) => o.op)).toEqual(['BatchGetItemCommand', 'BatchExecuteStatementCommand', 'BatchExecuteStatementCommand']);
      expect(await Promise.all(['k0', 'k7', 'k39'].map((k) => nOf(sink, k)))).toEqual([{ N: '2' }, { N: '2' }, { N: '2' }]);
      const item = await client.send(new GetItemCommand({ TableName: sink, Key: { pk: { S: 'k7' } }, ConsistentRead: true }));
      expect(item.Item?.['_applied:marked:t:3']).toEqual({ N: '200' });
    } finally {
      own.destroy();
    }
  });

  it('sends a write whose statement failed as an UpdateItem, retried alone after a throttle or a 500; every item gets the batch once', async () => {
    const sink = await createSinkTable(client, 'marked-throttle');
    // The SDK's own retries off, so that the ledger's retry is what is seen; the fault is DynamoDB's own error.
    const own = new DynamoDBClient({ ...emulatorClientConfig(), maxAttempts: 1 });
    const server500 = () =>
      Object.assign(new InternalServerError({ message: 'injected 500', $metadata: { httpStatusCode: 500 } }), {
        $fault: 'server' as const,
      });
    const throttled = new Set(['k2', 'k5']);
    const fired: string[] = [];
    const ops = watchOperations(own, 'throttleOps', (op) => {
      const key = ops[ops.length - 1]?.key;
      if (op !== 'UpdateItemCommand' || !key || !throttled.has(key) || fired.filter((k) => k === key).length >= 2) return undefined;
      fired.push(key);
      // k5 meets DynamoDB's own 500 (ambiguous: the write may have been applied); k2 a throttle.
      return key === 'k5' ? server500() : new ProvisionedThroughputExceededException({ message: 'injected throttle', $metadata: {} });
    });
    // The statement request of 25 fails whole (a 500); in the other, k27's statement is throttled.
    own.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'BatchExecuteStatementCommand') return next(args);
        const statements = (args.input as { Statements: Array<{ Parameters: Array<{ S?: string }> }> }).Statements;
        if (statements.length === 25) {
          fired.push('request');
          throw server500();
        }
        // k27's statement is held back (not applied) and answered as throttled.
        const at = statements.findIndex((st) => st.Parameters.some((p) => p.S === 'k27'));
        if (at < 0) return next(args);
        fired.push('k27 statement');
        const kept = statements.filter((_, j) => j !== at);
        const out = await next({ ...args, input: { ...(args.input as object), Statements: kept } });
        (out.output as { Responses: unknown[] }).Responses.splice(at, 0, { Error: { Code: 'ThrottlingError' } });
        return out;
      },
      { step: 'initialize', name: 'statementFaults' },
    );
    try {
      const ledger = createDynamoLedger({ client: own, tableName, sleep: async () => undefined });
      // A first batch of one write validates the expression, so the next one goes as statements.
      expect(await ledger.applyMarkedSinkWrites({ mark, writes: [bump(sink, 'warm')] })).toEqual({ applied: 1, skipped: 0 });
      ops.length = 0;
      const writes = Array.from({ length: 30 }, (_, i) => bump(sink, `k${i}`));
      expect(await ledger.applyMarkedSinkWrites({ mark, writes })).toEqual({ applied: 30, skipped: 0 });
      expect(fired.sort()).toEqual(['k2', 'k2', 'k27 statement', 'k5', 'k5', 'request']);
      for (let i = 0; i < 30; i++) {
        // k0..k24 were in the failed request and k27's statement failed: those go single, the throttled ones 3 times.
        const sent = ops.filter((o) => o.op === 'UpdateItemCommand' && o.key === `k${i}`).length;
        expect([`k${i}`, sent]).toEqual([`k${i}`, throttled.has(`k${i}`) ? 3 : i < 25 || i === 27 ? 1 : 0]);
      }
      expect(await Promise.all(writes.map((_, i) => nOf(sink, `k${i}`)))).toEqual(Array.from({ length: 30 }, () => ({ N: '1' })));
    } finally {
      own.destroy();
    }
  });

  it('sends plain UpdateItems from then on when DynamoDB refuses the read for want of permission', async () => {
    const sink = await createSinkTable(client, 'marked-denied');
    const own = testDynamo();
    let denied = 0;
    const ops = watchOperations(own, 'deniedOps', (op) => {
      if (op !== 'BatchGetItemCommand') return undefined;
      denied++;
      return Object.assign(new Error('User is not authorized to perform: dynamodb:BatchGetItem'), { name: 'AccessDeniedException' });
    });
    try {
      const ledger = createDynamoLedger({ client: own, tableName });
      const writes = Array.from({ length: 5 }, (_, i) => bump(sink, `k${i}`));
      expect(await ledger.applyMarkedSinkWrites({ mark, writes })).toEqual({ applied: 5, skipped: 0 });
      expect(await ledger.applyMarkedSinkWrites({ mark: { ...mark, until: 200 }, writes })).toEqual({ applied: 5, skipped: 0 });
      expect(denied).toBe(1);
      expect(ops.map((o) => o.op)).toEqual([
        'UpdateItemCommand',
        'BatchGetItemCommand',
        ...Array.from({ length: 4 }, () => 'UpdateItemCommand'),
        ...Array.from({ length: 5 }, () => 'UpdateItemCommand'),
      ]);
      expect(await nOf(sink, 'k3')).toEqual({ N: '2' });
    } finally {
      own.destroy();
    }
  });

  it('leaves an update outside the statement subset, or one whose item changed since it was read, to UpdateItem: the result is the same', async () => {
    const sink = await createSinkTable(client, 'marked-mixed');
    const own = testDynamo();
    const ops = watchOperations(own, 'mixedOps');
    let raceAfterRead = false;
    let raced = 0;
    own.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === 'BatchGetItemCommand' && raceAfterRead) {
          // Another writer changes the item between the read and the statement.
          raceAfterRead = false;
          raced++;
          await client.send(
            new UpdateItemCommand({
              TableName: sink,
              Key: { pk: { S: 'raced' } },
              UpdateExpression: 'ADD n :five',
              ExpressionAttributeValues: { ':five': { N: '5' } },
            }),
          );
        }
        return out;
      },
      { step: 'initialize', name: 'raceAfterRead' },
    );
    try {
      const ledger = createDynamoLedger({ client: own, tableName });
      const nested = (pk: string): SinkWrite => ({
        update: { table: sink, key: { pk }, expression: 'SET #tags.#a = :v', names: { '#tags': 'tags', '#a': 'a' }, values: { ':v': 1 } },
      });
      await client.send(new PutItemCommand({ TableName: sink, Item: { pk: { S: 'nested' }, tags: { M: {} } } }));
      // A nested path is outside the subset: UpdateItem, also once the expression is known.
      await ledger.applyMarkedSinkWrites({ mark, writes: [nested('nested')] });
      await ledger.applyMarkedSinkWrites({ mark: { ...mark, until: 200 }, writes: [nested('nested')] });
      expect(ops.map((o) => o.op)).toEqual(['UpdateItemCommand', 'UpdateItemCommand']);
      const item = await client.send(new GetItemCommand({ TableName: sink, Key: { pk: { S: 'nested' } }, ConsistentRead: true }));
      expect(item.Item?.tags).toEqual({ M: { a: { N: '1' } } });

      // The item changes between read and statement: the UPDATE's condition fails, UpdateItem applies it.
      await ledger.applyMarkedSinkWrites({ mark, writes: [bump(sink, 'warm'), bump(sink, 'raced')] });
      ops.length = 0;
      raceAfterRead = true;
      expect(await ledger.applyMarkedSinkWrites({ mark: { ...mark, until: 200 }, writes: [bump(sink, 'raced')] })).toEqual({
        applied: 1,
        skipped: 0,
      });
      expect(raced).toBe(1);
      expect(ops.map((o) => o.op)).toEqual(['BatchGetItemCommand', 'BatchExecuteStatementCommand', 'UpdateItemCommand']);
      expect(await nOf(sink, 'raced')).toEqual({ N: '7' });
    } finally {
      own.destroy();
    }
  });
});
