/**
 * Example exactly-once handler: per-key running totals. Each record's value is JSON
 * `{"amount": number}` (the Kafka key names the account); the chunk's amounts are summed per key and
 * applied as one `ADD` per key, atomically with the stream's progress, so every record counts once.
 * A record that is not such JSON is rejected (and, after retries, dead-lettered).
 */
import type { SinkWrite } from '../ports/ledger';
import type { ExactlyOnceHandler, HandlerRecord } from '../processor/handler-api';

/** Sink item shape: `{ pk: <key>, total, count, lastOffset }`. */
export const runningTotals: ExactlyOnceHandler = {
  mode: 'dynamodb-exactly-once',
  handle(records: HandlerRecord[]): SinkWrite[] {
    const perKey = new Map<string, { total: number; count: number; lastOffset: number }>();
    for (const r of records) {
      const key = r.key?.toString('utf8');
      if (!key) throw new Error(`record ${r.idempotencyKey} has no key: running totals need the account in the key`);
      const amount = parseAmount(r);
      const acc = perKey.get(key) ?? { total: 0, count: 0, lastOffset: -1 };
      acc.total += amount;
      acc.count += 1;
      acc.lastOffset = r.offset;
      perKey.set(key, acc);
    }
    return [...perKey].map(([key, acc]) => ({
      update: {
        key: { pk: key },
        expression: 'ADD #total :total, #count :count SET lastOffset = :last',
        names: { '#total': 'total', '#count': 'count' },
        values: { ':total': acc.total, ':count': acc.count, ':last': acc.lastOffset },
      },
    }));
  },
};

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
