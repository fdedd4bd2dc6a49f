/**
 * skewed-clock: every range is taken by a processor whose clock runs a lease behind the machine's,
 * and invoked again while leased on one three leases ahead; planners run ahead too. Leases are
 * judged on DynamoDB's clock, so no record may be handed to a handler twice.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoStoreClock } from '../../../lib/ledger/clock.dynamodb';
import { createDynamoLedger } from '../../../lib/ledger/ledger.dynamodb';
import type { ProcessorClocks, RoundScenario } from '../scenario';

type SkewedClocks = {
  ahead: ProcessorClocks;
  behind: ProcessorClocks;
  aheadMs: number;
  behindMs: number;
  handed: Map<string, number>;
  close(): void;
};

/**
 * skewed-clock: two "containers" (own DynamoDB client, own store clock) whose local clocks run
 * 3 leases ahead and 1 lease behind the machine's (the emulator's `Date` header is the machine clock).
 */
function skewedClocks(endpoint: string, tableName: string, leaseMs: number): SkewedClocks {
  const container = (offsetMs: number): ProcessorClocks & { client: DynamoDBClient } => {
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const clock = () => Date.now() + offsetMs;
    return {
      client,
      clock,
      ledger: createDynamoLedger({ client, tableName }),
      storeClock: createDynamoStoreClock({ client, tableName, localClock: clock }),
    };
  };
  const ahead = container(3 * leaseMs);
  const behind = container(-leaseMs);
  return {
    ahead,
    behind,
    aheadMs: 3 * leaseMs,
    behindMs: leaseMs,
    handed: new Map(),
    close: () => [ahead, behind].forEach((c) => c.client.destroy()),
  };
}

export const skewedClock = (): RoundScenario => {
  let skew: SkewedClocks | undefined;
  const handed = (s: SkewedClocks, key: string) => s.handed.set(key, (s.handed.get(key) ?? 0) + 1);
  return {
    knobs: () => ({ handlerDelayMs: 10 }),
    async prepare(run) {
      skew = skewedClocks(process.env.DYNAMODB_ENDPOINT as string, run.env.ledgerTable, 1500);
    },
    planNowMs: () => (skew as SkewedClocks).ahead.storeClock(),
    // Each range: a processor running behind takes the lease; one running ahead is invoked while it is held.
    process: (q, invoke) => {
      const s = skew as SkewedClocks;
      return invoke(q.stream, q.range, { ...s.behind, whileLeased: () => invoke(q.stream, q.range, s.ahead) });
    },
    onHanded: (stream, key) => handed(skew as SkewedClocks, `${stream.id}/${key}`),
    finish(run) {
      const k = skew as SkewedClocks;
      const { statuses, invocations } = run.tally;
      const twice = [...k.handed.values()].filter((n) => n > 1).length;
      run.injected = `every range taken by a processor whose clock runs ${k.behindMs / 1000} s behind, and invoked again while leased on one ${k.aheadMs / 1000} s ahead (lease 1.5 s), planners ${k.aheadMs / 1000} s ahead; leases judged on DynamoDB's clock (Date headers): ${statuses['held-elsewhere'] ?? 0} of ${invocations / 2} contenders held off, ${twice} records handed to a handler twice`;
      if (twice) run.problems.push(`${twice} records were handed to a handler twice (two lease holders)`);
      if (!statuses['held-elsewhere']) run.problems.push('no contender met a held lease');
      k.close();
    },
  };
};
