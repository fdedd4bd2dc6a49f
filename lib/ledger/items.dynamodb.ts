/**
 * The ledger's DynamoDB items: each state of the port as the item that stores it, and back
 * (key attributes, the open-ranges index key, TTL attributes, legacy shapes).
 */
import { keys } from './keys.dynamodb';
import { splitLoop } from './loop.dynamodb';
import type {
  ClosedIncarnation,
  DataLossEntry,
  DeadLetter,
  DeadLetterHeader,
  PartitionState,
  PendingDelivery,
  RangeState,
  StreamMeta,
} from '../ports/ledger-state';

/** The ledger table's TTL attribute (epoch seconds): finished ranges and dead letters carry it. */
export const TTL_ATTRIBUTE = 'expiresAt';
/** Finished ranges expire after this long (DynamoDB TTL attribute `expiresAt`, epoch seconds). */
export const DONE_RANGE_TTL_SEC = 7 * 24 * 3600;
export type Item = Record<string, unknown>;

/** Removes undefined fields (the document client rejects them by default). */
export function compact<T extends Item>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function strip(item: Item): Item {
  const { pk: _pk, sk: _sk, openPk: _o, expiresAt: _e, type: _t, layout: _l, ...rest } = item;
  return rest;
}

/**
 * Dead letters stored before headers became an ordered list kept `name -> base64 values, comma
 * separated`: the values are restored in order within each name (the order across names, and null
 * values, were never stored).
 */
function legacyHeaders(headers: unknown): DeadLetterHeader[] {
  if (typeof headers !== 'object' || headers === null) return [];
  return Object.entries(headers as Record<string, unknown>).flatMap(([key, v]) =>
    typeof v === 'string' ? v.split(',').map((valueBase64) => ({ key, valueBase64 })) : [],
  );
}

export const codec = {
  metaFromItem: (item: Item): StreamMeta => {
    const { loop, rest } = splitLoop(strip(item));
    return { ...(rest as StreamMeta), ...(loop ? { loop } : {}) };
  },
  partitionItem: (p: PartitionState): Item => compact({ ...keys.partition(p.stream, p.topic, p.partition), type: 'partition', ...p }),
  partitionFromItem: (item: Item): PartitionState => strip(item) as PartitionState,
  rangeItem: (r: RangeState): Item =>
    compact({
      ...keys.range(r.stream, r),
      type: 'range',
      ...r,
      openPk: r.status === 'done' ? undefined : keys.pk(r.stream),
    }),
  rangeFromItem: (item: Item): RangeState => strip(item) as RangeState,
  lossItem: (l: DataLossEntry): Item => compact({ ...keys.loss(l.stream, l), type: 'data-loss', ...l }),
  lossFromItem: (item: Item): DataLossEntry => strip(item) as DataLossEntry,
  deadLetterItem: (d: DeadLetter): Item => compact({ ...keys.deadLetter(d.stream, d), type: 'dead-letter', ...d, ...deadLetterExpiry(d) }),
  deadLetterFromItem: (item: Item): DeadLetter => {
    const d = { ...(strip(item) as DeadLetter), ...deadLetterRetention(item) };
    return Array.isArray(d.headers) ? d : { ...d, headers: legacyHeaders(d.headers) };
  },
  deliveryItem: (p: PendingDelivery): Item => compact({ ...keys.delivery(p.stream, p), type: 'delivery', ...p, ...ttlOf(p.expiresAtMs) }),
  deliveryFromItem: (item: Item): PendingDelivery => ({ ...(strip(item) as PendingDelivery), ...expiryOf(item) }),
  closedItem: (c: ClosedIncarnation): Item => compact({ ...keys.closed(c.stream, c), type: 'closed-incarnation', ...c }),
  closedFromItem: (item: Item): ClosedIncarnation => strip(item) as ClosedIncarnation,
};

/** The TTL attribute (epoch seconds) of a dead letter with a retention; DynamoDB deletes it after. */
function deadLetterExpiry(d: DeadLetter): Item {
  return ttlOf(d.expiresAtMs);
}

/** An expiry stored once, in seconds, on the TTL attribute (`expiresAtMs: undefined` drops the port's copy). */
function ttlOf(expiresAtMs: number | undefined): Item {
  return expiresAtMs === undefined ? {} : { [TTL_ATTRIBUTE]: Math.ceil(expiresAtMs / 1000), expiresAtMs: undefined };
}

/** The port's `expiresAtMs` of an item with a TTL attribute. */
function expiryOf(item: Item): { expiresAtMs?: number } {
  return typeof item[TTL_ATTRIBUTE] === 'number' ? { expiresAtMs: item[TTL_ATTRIBUTE] * 1000 } : {};
}

/** Retention fields of a stored dead letter (items written before retention existed kept the record, forever). */
function deadLetterRetention(item: Item): Pick<DeadLetter, 'kept' | 'expiresAtMs'> {
  const expiresAt = typeof item[TTL_ATTRIBUTE] === 'number' ? item[TTL_ATTRIBUTE] : undefined;
  return compact({
    kept: (item.kept as DeadLetter['kept'] | undefined) ?? 'record',
    expiresAtMs: expiresAt === undefined ? undefined : expiresAt * 1000,
  });
}
