/**
 * The DynamoDB ledger's retries, on a client whose write answers are scripted by a middleware
 * (nothing leaves the process; reads answer that partition `p` is in group `p / 7`): what is retried,
 * after a backoff or at once, with the same request token, and where it gives up. A commit of
 * progress alone is no transaction, an open range's (which moves its partition's committed offset too)
 * included, nor are several of them (`commitChunks`).
 */
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { ConflictError, StoreError } from '../../../lib/errors';
import { entryName, PARTITIONS_PER_GROUP } from '../../../lib/ledger/groups.dynamodb';
import { createDynamoLedger } from '../../../lib/ledger/ledger.dynamodb';
import type { PlanWrite } from '../../../lib/ports/ledger';
import { OPEN_UNTIL } from '../../../lib/ranges';

type Sent = { command: string; items: unknown[]; token: string; key?: { sk: string } };

/** What the scripted reads answer: no partition listed, each asked-for `P#` item in group `partition / 7`. */
function answerRead(command: string, input: Record<string, unknown>): unknown {
  if (command === 'QueryCommand') return { Items: [], $metadata: {} };
  if (command !== 'BatchGetItemCommand') return { $metadata: {} };
  const [table, req] = Object.entries(input.RequestItems as Record<string, { Keys: Array<{ sk: string }> }>)[0]!;
  const items = req.Keys.map((k) => {
    const partition = Number(k.sk.split('#')[2]);
    return { ...k, topic: 't', partition, g: Math.floor(partition / PARTITIONS_PER_GROUP) };
  });
  return { Responses: { [table]: items }, $metadata: {} };
}

/** A ledger whose n-th write gets `answers[n]` (cancellation codes, or an UpdateItem's failure) or succeeds when none is left. */
function scripted(answers: string[][]) {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  const sent: Sent[] = [];
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const command = context.commandName ?? '';
      const input = args.input as { TransactItems: unknown[]; ClientRequestToken: string; Key?: { sk: string } };
      if (!['TransactWriteItemsCommand', 'UpdateItemCommand'].includes(command)) {
        return { output: answerRead(command, input) as never, response: {} };
      }
      sent.push({ command, items: input.TransactItems, token: input.ClientRequestToken, key: input.Key });
      const codes = answers[sent.length - 1];
      if (!codes) return { output: { $metadata: {} } as never, response: {} };
      if (command === 'UpdateItemCommand') {
        if (codes[0] === 'TransactionConflict') throw new TransactionConflictException({ message: 'conflict', $metadata: {} });
        // `Landed:<leaseToken>:<progress>:<attempts>[:<committed>]`: the condition failed on a group item
        // holding the range leased to that token at that progress (and its partition at that committed
        // offset: an open range), after the SDK sent the request that many times.
        const [kind, token, progress, attempts, committed] = codes[0]!.split(':');
        if (kind !== 'Landed') throw new ConditionalCheckFailedException({ message: 'failed', $metadata: {} });
        const until = committed === undefined ? 10 : OPEN_UNTIL;
        const r = { '0': { u: until, s: 'l', k: token, p: Number(progress), e: 1, t: 0, d: 1, a: 1 } };
        const entry = { c: Number(committed ?? 0), n: until, r };
        const item = { pk: 'S#s#0', sk: 'G#000000', [entryName('t', 0)]: entry };
        throw new ConditionalCheckFailedException({ message: 'failed', $metadata: { attempts: Number(attempts) }, Item: marshall(item) });
      }
      throw new TransactionCanceledException({ message: 'cancelled', $metadata: {}, CancellationReasons: codes.map((Code) => ({ Code })) });
    },
    { step: 'initialize', name: 'scripted', priority: 'high' },
  );
  const sleeps: number[] = [];
  const ledger = createDynamoLedger({ client, tableName: 'ledger', sleep: async (ms) => void sleeps.push(ms) });
  return { ledger, sent, sleeps };
}

const register = (partition: number): PlanWrite => ({
  kind: 'register-partition',
  partition: { stream: 's', topic: 't', partition, status: 'active', startOffset: 0, committed: 0, nextFrom: 0, firstSeenAtMs: 0 },
});
const plan = (writes: PlanWrite[]) => ({ stream: 's', epoch: 1, ownerToken: 'o', writes });
const held = { stream: 's', topic: 't', partition: 0, from: 0, until: 10, leaseToken: 'A' };
const progressOnly = { range: held, expectProgress: 0, to: 5, nowMs: 0, leaseMs: 1000 };
const commit = { ...progressOnly, sinkWrites: [{ put: { table: 'sink', item: { pk: 'a' } } }] };
const openProgress = { ...progressOnly, range: { ...held, until: OPEN_UNTIL } };

describe('DynamoDB ledger retries', () => {
  // Two registrations in group 0: the fence check, two P# items, the group item.
  it('planner writes: a conflict is retried after a backoff with the same token', async () => {
    const t = scripted([['None', 'TransactionConflict', 'None', 'None']]);
    expect(await t.ledger.applyPlan(plan([register(0), register(1)]))).toEqual(['applied', 'applied']);
    expect(t.sent).toHaveLength(2);
    expect(t.sent[1]?.token).toBe(t.sent[0]?.token);
    expect(t.sleeps).toHaveLength(1);
  });

  it('planner writes: a failed write condition is reported and the others are resent at once without it', async () => {
    const t = scripted([['None', 'ConditionalCheckFailed', 'None', 'None']]);
    expect(await t.ledger.applyPlan(plan([register(0), register(1)]))).toEqual(['condition-failed', 'applied']);
    expect(t.sent.map((s) => s.items.length)).toEqual([4, 3]);
    expect(t.sleeps).toEqual([]);
  });

  it('planner writes: the fence failing fences them all; another reason is a StoreError', async () => {
    const fenced = scripted([['ConditionalCheckFailed', 'None', 'None']]);
    expect(await fenced.ledger.applyPlan(plan([register(0)]))).toEqual(['fenced']);
    const refused = scripted([['None', 'ValidationError', 'None']]);
    await expect(refused.ledger.applyPlan(plan([register(0)]))).rejects.toBeInstanceOf(StoreError);
    expect(refused.sent).toHaveLength(1);
  });

  it('planner writes: throttling is retried like a conflict, then gives up with a ConflictError', async () => {
    const t = scripted(Array.from({ length: 7 }, () => ['None', 'ThrottlingError', 'None']));
    await expect(t.ledger.applyPlan(plan([register(0)]))).rejects.toBeInstanceOf(ConflictError);
    expect(t.sent).toHaveLength(7);
    expect(t.sleeps).toHaveLength(6);
  });

  it('processor commits: a conflict is retried after a backoff with the same token, then a ConflictError', async () => {
    const once = scripted([['TransactionConflict']]);
    expect(await once.ledger.commitChunk(commit)).toBe('applied');
    expect(once.sent).toHaveLength(2);
    expect(once.sent[1]?.token).toBe(once.sent[0]?.token);
    const always = scripted(Array.from({ length: 7 }, () => ['TransactionConflict']));
    await expect(always.ledger.commitChunk(commit)).rejects.toBeInstanceOf(ConflictError);
    expect(always.sleeps).toHaveLength(6);
    const lost = scripted([['ConditionalCheckFailed']]);
    expect(await lost.ledger.commitChunk(commit)).toBe('lease-lost');
    expect(lost.sent).toHaveLength(1);
  });

  it('processor commits of progress alone: one conditional UpdateItem (one write unit), its failed condition a lost lease unless an SDK retry of it landed, a conflict retried', async () => {
    const fine = scripted([]);
    expect(await fine.ledger.commitChunk(progressOnly)).toBe('applied');
    expect(fine.sent.map((s) => s.command)).toEqual(['UpdateItemCommand']);
    const lost = scripted([['ConditionalCheckFailed']]);
    expect(await lost.ledger.commitChunk(progressOnly)).toBe('lease-lost');
    expect(lost.sent.map((s) => s.command)).toEqual(['UpdateItemCommand']);
    // A transaction on the same item refuses the write for a moment: retried after a backoff, then a ConflictError.
    const conflictOnce = scripted([['TransactionConflict']]);
    expect(await conflictOnce.ledger.commitChunk(progressOnly)).toBe('applied');
    expect(conflictOnce.sent.map((s) => s.command)).toEqual(['UpdateItemCommand', 'UpdateItemCommand']);
    expect(conflictOnce.sleeps).toHaveLength(1);
    const conflicting = scripted(Array.from({ length: 7 }, () => ['TransactionConflict']));
    await expect(conflicting.ledger.commitChunk(progressOnly)).rejects.toBeInstanceOf(ConflictError);
    expect(conflicting.sleeps).toHaveLength(6);
    // The SDK retried a request whose first attempt applied: the item shows this very progress under
    // this lease. Only then is the failed condition our own write; otherwise the lease is lost.
    expect(await scripted([['Landed:A:5:2']]).ledger.commitChunk(progressOnly)).toBe('applied');
    expect(await scripted([['Landed:A:5:1']]).ledger.commitChunk(progressOnly)).toBe('lease-lost');
    expect(await scripted([['Landed:B:5:2']]).ledger.commitChunk(progressOnly)).toBe('lease-lost');
    expect(await scripted([['Landed:A:4:2']]).ledger.commitChunk(progressOnly)).toBe('lease-lost');
    const withWrites = scripted([]);
    expect(await withWrites.ledger.commitChunk(commit)).toBe('applied');
    expect(withWrites.sent.map((s) => s.command)).toEqual(['TransactWriteItemsCommand']);
  });
  it("an open range's commit of progress alone: one UpdateItem with its partition's committed offset, landed when both moved", async () => {
    const fine = scripted([]);
    expect(await fine.ledger.commitChunk(openProgress)).toBe('applied');
    expect(fine.sent.map((s) => s.command)).toEqual(['UpdateItemCommand']);
    expect(await scripted([['Landed:A:5:2:5']]).ledger.commitChunk(openProgress)).toBe('applied');
    // The range shows the progress, its partition not: another write moved the committed offset, not this one.
    expect(await scripted([['Landed:A:5:2:0']]).ledger.commitChunk(openProgress)).toBe('lease-lost');
    expect(await scripted([['Landed:A:5:1:5']]).ledger.commitChunk(openProgress)).toBe('lease-lost');
  });

  it('commits of progress alone of several ranges: one UpdateItem per group item, no transaction; a landed retry is applied', async () => {
    const t = scripted([]);
    const inputs = [0, 1, 2, 3, 4, 5, 6, 7].map((partition) => ({ ...openProgress, range: { ...openProgress.range, partition } }));
    expect(await t.ledger.commitChunks(inputs)).toEqual(new Array(8).fill('applied'));
    expect(t.sent.map((s) => [s.command, s.key?.sk]).sort()).toEqual([
      ['UpdateItemCommand', 'G#000000'],
      ['UpdateItemCommand', 'G#000001'],
    ]);
    expect(await scripted([['Landed:A:5:2:5']]).ledger.commitChunks([openProgress])).toEqual(['applied']);
    expect(await scripted([['Landed:A:5:2']]).ledger.commitChunks([progressOnly])).toEqual(['applied']);
    expect(await scripted([['Landed:A:5:1']]).ledger.commitChunks([progressOnly])).toEqual(['lease-lost']);
    expect(await scripted([['ConditionalCheckFailed']]).ledger.commitChunks([progressOnly])).toEqual(['lease-lost']);
  });
});
