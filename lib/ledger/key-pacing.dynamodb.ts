/**
 * Pacing of one process's ledger writes per DynamoDB partition key. DynamoDB serves about 1,000
 * write units a second per partition, and a key's items live on one; beyond that it throttles. The
 * ledger's steady writes spread over its group keys far below that, but a burst it knows it makes
 * (registering a thousand partitions at once: each `P#` put under the stream's own key, in a
 * transaction that bills it twice) is spread here over the seconds the key can take, rather than
 * thrown at it and retried on throttling.
 *
 * Hand-written: a token bucket per key whose reservations of any cost are taken synchronously (so
 * concurrent senders queue in order); the rate limiters on npm count calls, not units per key.
 */
import type { TxAction } from './transactions.dynamodb';

/**
 * Write units a second one process sends to one key at most, and at once: in any one second it sends
 * at most their sum, 900 of DynamoDB's 1,000, the rest left for other processes' writes.
 */
export const KEY_WRITE_UNITS_PER_SEC = 700;
export const KEY_WRITE_BURST_UNITS = 200;

/** Bytes per write unit. */
const WRITE_UNIT_BYTES = 1024;

export type KeyPacer = {
  /** Waits until the keys can take these write units (by partition key), and takes them. */
  reserve(unitsByKey: ReadonlyMap<string, number>): Promise<void>;
};

type Bucket = { available: number; atMs: number };

/** A pacer allowing `unitsPerSec` per key, and `burstUnits` at once. */
export function createKeyPacer(o: {
  sleep: (ms: number) => Promise<void>;
  nowMs?: () => number;
  unitsPerSec?: number;
  burstUnits?: number;
}): KeyPacer {
  const rate = o.unitsPerSec ?? KEY_WRITE_UNITS_PER_SEC;
  const burst = o.burstUnits ?? KEY_WRITE_BURST_UNITS;
  const now = o.nowMs ?? Date.now;
  const buckets = new Map<string, Bucket>();
  return {
    async reserve(unitsByKey) {
      const t = now();
      let waitMs = 0;
      for (const [key, units] of unitsByKey) {
        const b = buckets.get(key) ?? { available: burst, atMs: t };
        b.available = Math.min(burst, b.available + ((t - b.atMs) * rate) / 1000) - units;
        b.atMs = t;
        buckets.set(key, b);
        if (b.available < 0) waitMs = Math.max(waitMs, (-b.available * 1000) / rate);
      }
      for (const [key, b] of buckets) if (b.available >= burst && !unitsByKey.has(key)) buckets.delete(key);
      if (waitMs > 0) await o.sleep(Math.ceil(waitMs));
    },
  };
}

/** Write units of one item written, by partition key (a transaction's items bill twice). */
export function unitsOfItemWrite(
  key: { pk?: unknown },
  item: Record<string, unknown> | undefined,
  transactional: boolean,
): [string, number] {
  // An update's resulting size is not known here; the ledger keeps the items it updates under 1 KB.
  const units = item ? Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(item)) / WRITE_UNIT_BYTES)) : 1;
  return [String(key.pk), transactional ? 2 * units : units];
}

/** Write units of a transaction's actions, summed by partition key. */
export function unitsOfTransaction(actions: readonly TxAction[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const a of actions) {
    const [pk, units] = a.Put
      ? unitsOfItemWrite(a.Put.Item ?? {}, a.Put.Item, true)
      : unitsOfItemWrite((a.Update?.Key ?? a.Delete?.Key ?? a.ConditionCheck?.Key ?? {}) as { pk?: unknown }, undefined, true);
    out.set(pk, (out.get(pk) ?? 0) + units);
  }
  return out;
}
