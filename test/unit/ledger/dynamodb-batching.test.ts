/**
 * How the DynamoDB ledger packs a planner run's writes into transactions, on a client that records
 * every TransactWriteItems and answers it (nothing leaves the process): a split stream's ranges (several
 * consecutive writes on one partition's cursor) share transactions with other partitions' ranges, and
 * writes of one item still land in order, one transaction after the other.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoLedger } from '../../../lib/ledger/ledger.dynamodb';
import type { PlanWrite } from '../../../lib/ports/ledger';
import type { RangeState } from '../../../lib/ports/ledger-state';

type Tx = Array<{ Put?: { Item: Record<string, unknown> }; Update?: { Key: Record<string, unknown> }; ConditionCheck?: unknown }>;

function recording() {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  const sent: Tx[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  client.middlewareStack.add(
    () => async (args) => {
      sent.push((args.input as { TransactItems: Tx }).TransactItems);
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
const planRange = (partition: number, from: number): PlanWrite => ({
  kind: 'plan-range',
  range: range(partition, from, from + 5),
  partitionUpdate: { lastPlannedAtMs: 0 },
});
/** 240 partitions, each split into 4 ranges of 5, in the planner's order (a partition's pieces together). */
const splitPlan = (): PlanWrite[] => Array.from({ length: 240 }, (_, p) => [0, 5, 10, 15].map((from) => planRange(p, from))).flat();

describe('DynamoDB ledger: planner writes in transactions', () => {
  it('packs the pieces of split partitions into full transactions (not one per range)', async () => {
    const t = recording();
    const out = await t.ledger.applyPlan({ stream: 's', epoch: 1, ownerToken: 'o', writes: splitPlan() });
    expect(out.every((o) => o === 'applied')).toBe(true);
    // 960 ranges x 2 actions at 98 per transaction (plus the fence): 20 transactions, 4 waves of 5.
    expect(t.sent).toHaveLength(20);
    expect(t.sent.every((tx) => tx.length <= 100)).toBe(true);
    expect(t.maxInFlight()).toBeGreaterThan(1);
  });

  it('keeps each item once per transaction and its writes in order across transactions', async () => {
    const t = recording();
    await t.ledger.applyPlan({ stream: 's', epoch: 1, ownerToken: 'o', writes: splitPlan() });
    const fromOf = new Map<string, number[]>();
    for (const tx of t.sent) {
      const keys = tx.filter((a) => a.Update).map((a) => JSON.stringify(a.Update?.Key));
      expect(new Set(keys).size).toBe(keys.length);
      for (const a of tx) {
        if (!a.Put) continue;
        const item = a.Put.Item as { partition: number; from: number };
        fromOf.set(String(item.partition), [...(fromOf.get(String(item.partition)) ?? []), item.from]);
      }
    }
    expect(fromOf.size).toBe(240);
    for (const froms of fromOf.values()) expect(froms).toEqual([0, 5, 10, 15]);
  });
});
