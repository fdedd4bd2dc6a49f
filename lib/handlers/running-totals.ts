/**
 * Example exactly-once handler: per-key running totals. Each record's value is JSON
 * `{"amount": number}` (the Kafka key names the account); the amounts are summed per key over a whole
 * batch and applied as one `ADD` per key, each guarded by the key's applied-offset mark, so every
 * record counts once.
 * A record that is not such JSON is rejected (and, after retries, dead-lettered).
 */
import { foldHandler, type HandlerRecord } from '../processor/handler-api';

type Totals = { total: number; count: number; lastOffset: number };

/**
 * Sink item shape: `{ pk: <key>, total, count, lastOffset }`. A folded handler: the processor sums a
 * whole batch per account and writes each account once per batch.
 */
export const runningTotals = foldHandler<Totals>({
  map(r: HandlerRecord) {
    const key = r.key?.toString('utf8');
    if (!key) throw new Error(`record ${r.idempotencyKey} has no key: running totals need the account in the key`);
    return { key: { pk: key }, value: { total: parseAmount(r), count: 1, lastOffset: r.offset } };
  },
  combine: (a, b) => ({ total: a.total + b.total, count: a.count + b.count, lastOffset: Math.max(a.lastOffset, b.lastOffset) }),
  write: (item, acc) => ({
    update: {
      ...item,
      expression: 'ADD #total :total, #count :count SET lastOffset = :last',
      names: { '#total': 'total', '#count': 'count' },
      values: { ':total': acc.total, ':count': acc.count, ':last': acc.lastOffset },
    },
  }),
});

function parseAmount(r: HandlerRecord): number {
  let doc: unknown;
  try {
    doc = JSON.parse(r.value?.toString('utf8') ?? '');
  } catch {
    throw new Error(`record ${r.idempotencyKey}: value is not JSON`);
  }
  const amount = (doc as { amount?: unknown })?.amount;
  if (typeof amount !== 'number' || !Number.isFinite(amount)) {
    throw new Error(`record ${r.idempotencyKey}: "amount" must be a finite number`);
  }
  return amount;
}
