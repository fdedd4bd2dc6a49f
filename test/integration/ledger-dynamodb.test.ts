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
import { PARTITIONS_PER_GROUP } from '../../lib/ledger/groups.dynamodb';
import { PACK_GROUPS_ABOVE } from '../../lib/ledger/plan.dynamodb';
import { itemSizeBytes } from '../../bench/write-units';
import { OPEN_UNTIL } from '../../lib/ranges';
import type { LeaseOutcome } from '../../lib/ports/ledger';

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

describe('DynamoDB ledger layout: group items', () => {
  const plannerOf = async (stream: string) => {
    const ledger = Object.assign(createDynamoLedger({ client, tableName }), { requestCount });
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    return { ledger, ctx: { stream, epoch: lease.epoch, ownerToken: 'o' } };
  };
  const register = (stream: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({ kind: 'register-partition' as const, partition: partitionFixture(stream, 't', i) }));
  const plan = (stream: string, n: number, epoch: number) =>
    Array.from({ length: n }, (_, i) => ({ kind: 'plan-range' as const, range: rangeFixture(stream, 't', i, 0, 10, epoch) }));

  it('registers partitions in transactions of their P# items and group items, 8 partitions to a group', async () => {
    const stream = uniqueName('groups');
    const { ledger, ctx } = await plannerOf(stream);
    const n = 300;
    const groups = Math.ceil(n / PARTITIONS_PER_GROUP);
    let before = ledger.requestCount();
    expect((await ledger.applyPlan({ ...ctx, writes: register(stream, n) })).every((o) => o === 'applied')).toBe(true);
    // One Query of the stream's partitions (where the new ones go), then 11 groups (88 P# items + 11 group items) a transaction.
    expect(ledger.requestCount() - before).toBe(1 + Math.ceil(groups / 11));
    // More group items than one UpdateItem each would take: one transaction of up to 99 of them.
    before = ledger.requestCount();
    expect((await ledger.applyPlan({ ...ctx, writes: plan(stream, n, ctx.epoch) })).every((o) => o === 'applied')).toBe(true);
    expect(groups).toBeGreaterThan(PACK_GROUPS_ABOVE);
    expect(ledger.requestCount() - before).toBe(Math.ceil(groups / 99));
    const { partitions, ranges } = await ledger.readPartitionsAndRanges(stream);
    expect(partitions).toHaveLength(n);
    expect(ranges.map((r) => `${r.partition}:${r.from}-${r.until}:${r.status}:${r.shard}`).sort()).toEqual(
      Array.from({ length: n }, (_, i) => `${i}:0-10:planned:${Math.floor(i / PARTITIONS_PER_GROUP)}`).sort(),
    );
  });

  it('plans the ranges of a group in one UpdateItem, and a group of 7 partitions with their ranges leased stays under 1 KB', async () => {
    const stream = uniqueName('small');
    const { ledger, ctx } = await plannerOf(stream);
    // What a stream that has run a while holds: 7-digit offsets and epochs, today's times, an observed rate.
    const at = 1_234_567;
    const now = Date.now();
    const partitions = Array.from({ length: 10 }, (_, i) => ({ ...partitionFixture(stream, 't', i, at), observedRecordsPerSec: 1234.5 }));
    await ledger.applyPlan({ ...ctx, writes: partitions.map((partition) => ({ kind: 'register-partition' as const, partition })) });
    const ranges = partitions.map((p) => ({
      ...rangeFixture(stream, 't', p.partition, at, at + 100, 2_345_678),
      plannedAtMs: now,
      dispatchedAtMs: now,
      dispatches: 1,
    }));
    const before = ledger.requestCount();
    expect(await ledger.applyPlan({ ...ctx, writes: ranges.map((range) => ({ kind: 'plan-range' as const, range })) })).toEqual(
      new Array(10).fill('applied'),
    );
    expect(ledger.requestCount() - before).toBe(2); // groups [0, 7) and [7, 10)
    for (const r of ranges) {
      // A processor's token is 12 characters (lib/processor/process-range.ts).
      const take = { ...r, leaseToken: 'Abc123Def456', nowMs: now + 50, leaseMs: 960_000, maxAttempts: 5 };
      expect(await ledger.takeRangeLease(take)).toMatchObject({ kind: 'taken', range: { dispatchedAtMs: now } });
    }
    const key = { pk: { S: `S#${stream}#0` }, sk: { S: 'G#000000' } };
    const group = await client.send(new GetItemCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
    expect(Object.keys(group.Item ?? {}).filter((k) => k !== 'pk' && k !== 'sk' && k !== 'ep')).toHaveLength(PARTITIONS_PER_GROUP);
    expect(itemSizeBytes(group.Item ?? {})).toBeLessThanOrEqual(1024);
  });
});

describe('DynamoDB ledger: commits of open segment ranges', () => {
  it("commits the open ranges of a group's 7 partitions in one UpdateItem, each partition's committed offset with its range", async () => {
    const ledger = Object.assign(createDynamoLedger({ client, tableName }), { requestCount });
    const stream = uniqueName('open');
    const lease = await ledger.acquirePlannerLease({ stream, ownerToken: 'o', nowMs: 0, leaseMs: 60_000 });
    if (!lease.acquired) throw new Error('lease');
    const ctx = { stream, epoch: lease.epoch, ownerToken: 'o' };
    // What a stream that has run a while holds: 7-digit offsets and epochs, today's times, an observed rate.
    const at = 1_234_567;
    const now = Date.now();
    const partitions = Array.from({ length: PARTITIONS_PER_GROUP }, (_, i) => ({
      ...partitionFixture(stream, 't', i, at),
      observedRecordsPerSec: 1234.5,
    }));
    await ledger.applyPlan({ ...ctx, writes: partitions.map((partition) => ({ kind: 'register-partition' as const, partition })) });
    const ranges = partitions.map((p) => ({
      ...rangeFixture(stream, 't', p.partition, at, OPEN_UNTIL, 2_345_678),
      plannedAtMs: now,
      dispatchedAtMs: now,
      dispatches: 1,
    }));
    await ledger.applyPlan({ ...ctx, writes: ranges.map((range) => ({ kind: 'plan-range' as const, range })) });
    // A processor's token is 12 characters (lib/processor/process-range.ts).
    const leaseToken = 'Abc123Def456';
    const taken = await ledger.takeRangeLeases({ stream, ranges, leaseToken, nowMs: now + 50, leaseMs: 10_000, maxAttempts: 5 });
    expect(taken.map((t) => t.kind)).toEqual(new Array(PARTITIONS_PER_GROUP).fill('taken'));
    const held = taken.map((t) => ({ ...(t as Extract<LeaseOutcome, { kind: 'taken' }>).range, leaseToken }));
    const before = ledger.requestCount();
    const commits = held.map((range, i) => ({ range, expectProgress: at, to: at + 10 + i, nowMs: now + 100, leaseMs: 10_000 }));
    expect(await ledger.commitChunks(commits)).toEqual(new Array(PARTITIONS_PER_GROUP).fill('applied'));
    expect(ledger.requestCount() - before).toBe(1);
    const { partitions: after, ranges: rangesAfter } = await ledger.readPartitionsAndRanges(stream);
    expect(after.map((p) => [p.partition, p.committed]).sort()).toEqual(partitions.map((p) => [p.partition, at + 10 + p.partition]).sort());
    expect(rangesAfter.every((r) => r.lastCommitAtMs === now + 100 && r.progress === at + 10 + r.partition)).toBe(true);
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
        { kind: 'plan-range', range: rangeFixture(stream, 't', 0, 0, 10, lease.epoch) },
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
