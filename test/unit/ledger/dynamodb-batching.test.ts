/**
 * How the DynamoDB ledger (layout 2) packs a planner run's writes into requests, on a client that
 * records every write and answers it (nothing leaves the process; reads answer that partition `p` is
 * in group `p / 7`): the ranges of a group share one request, a split stream's pieces of one partition
 * (consecutive writes of its cursor) go one request after the other in order, and a run writing more
 * group items than PACK_GROUPS_ABOVE packs them into transactions of up to 99.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoLedger } from '../../../lib/ledger/ledger.dynamodb';
import { PARTITIONS_PER_GROUP } from '../../../lib/ledger/groups.dynamodb';
import { PACK_GROUPS_ABOVE } from '../../../lib/ledger/plan.dynamodb';
import type { PlanWrite } from '../../../lib/ports/ledger';
import type { RangeState } from '../../../lib/ports/ledger-state';

type Write = { command: string; items: Array<{ key: string; names: string[] }> };
type Action = { Key?: { sk: string }; ExpressionAttributeNames?: Record<string, string> };

function recording() {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  const sent: Write[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const command = context.commandName ?? '';
      const input = args.input as Record<string, unknown>;
      if (command === 'BatchGetItemCommand') {
        const [table, req] = Object.entries(input.RequestItems as Record<string, { Keys: Array<{ sk: string }> }>)[0]!;
        const items = req.Keys.map((k) => ({ ...k, topic: 't', partition: Number(k.sk.split('#')[2]), g: 0 })).map((i) => ({
          ...i,
          g: Math.floor(i.partition / PARTITIONS_PER_GROUP),
        }));
        return { output: { Responses: { [table]: items }, $metadata: {} } as never, response: {} };
      }
      const of = (a: Action) => ({ key: a.Key?.sk ?? '', names: Object.values(a.ExpressionAttributeNames ?? {}) });
      const actions =
        command === 'TransactWriteItemsCommand'
          ? (input.TransactItems as Array<Record<string, Action>>).map((t) => Object.values(t)[0]!)
          : [input as Action];
      sent.push({ command, items: actions.map(of) });
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      return { output: { $metadata: {} } as never, response: {} };
    },
    { step: 'initialize', name: 'recording', priority: 'high' },
  );
  return { ledger: createDynamoLedger({ client, tableName: 'ledger' }), sent, maxInFlight: () => maxInFlight };
}

const range = (partition: number, from: number, until: number): RangeState => ({
  stream: 's',
  topic: 't',
  partition,
  from,
  until,
  status: 'planned',
  epoch: 1,
  plannedAtMs: 0,
  dispatchedAtMs: 0,
  dispatches: 1,
  attempts: 0,
  progress: from,
});
const planRange = (partition: number, from: number): PlanWrite => ({ kind: 'plan-range', range: range(partition, from, from + 5) });
/** `n` partitions, each split into 4 ranges of 5, in the planner's order (a partition's pieces together). */
const splitPlan = (n: number): PlanWrite[] => Array.from({ length: n }, (_, p) => [0, 5, 10, 15].map((from) => planRange(p, from))).flat();

describe('DynamoDB ledger: planner writes in requests', () => {
  it('writes the ranges of a group in one UpdateItem, groups side by side, pieces of a partition one request after the other', async () => {
    const t = recording();
    const n = 3 * PARTITIONS_PER_GROUP;
    const out = await t.ledger.applyPlan({ stream: 's', epoch: 1, ownerToken: 'o', writes: splitPlan(n) });
    expect(out.every((o) => o === 'applied')).toBe(true);
    // 3 groups x 4 pieces: one UpdateItem per group and piece, in 4 waves of 3.
    expect(t.sent.map((w) => w.command)).toEqual(new Array(12).fill('UpdateItemCommand'));
    expect(t.maxInFlight()).toBe(3);
    for (const g of [0, 1, 2]) {
      const writes = t.sent.filter((w) => w.items[0]?.key === `G#00000${g}`);
      // Each request plans one piece of each of the group's 7 partitions, the pieces in order.
      expect(writes.map((w) => ['0', '5', '10', '15'].find((from) => w.items[0]?.names.includes(from)))).toEqual(['0', '5', '10', '15']);
    }
  });

  it('packs more group items than PACK_GROUPS_ABOVE into transactions of up to 99, each item once, pieces in order', async () => {
    const t = recording();
    const n = 240;
    const groups = Math.ceil(n / PARTITIONS_PER_GROUP);
    expect(groups).toBeGreaterThan(PACK_GROUPS_ABOVE);
    await t.ledger.applyPlan({ stream: 's', epoch: 1, ownerToken: 'o', writes: splitPlan(n) });
    // One transaction per piece: the fence check and every group item.
    expect(t.sent.map((w) => [w.command, w.items.length])).toEqual(new Array(4).fill(['TransactWriteItemsCommand', groups + 1]));
    for (const w of t.sent) expect(new Set(w.items.map((i) => i.key)).size).toBe(w.items.length);
    const pieces = t.sent.map((w) => ['0', '5', '10', '15'].find((from) => w.items[1]?.names.includes(from)));
    expect(pieces).toEqual(['0', '5', '10', '15']);
  });
});
