/**
 * The vocabulary the ledger rules decide in: a write as steps on single items, each with the
 * conditions it requires of the item as read (I2) and the change it makes. A rule returns steps;
 * the in-memory ledger evaluates them on its maps (`meets`, `changed`), the DynamoDB adapter
 * compiles them into condition and update expressions. A write's steps touch distinct items and
 * apply all or none.
 */
import type { ClosedIncarnation, DataLossEntry, DeadLetter, PartitionState, PendingDelivery, RangeState } from '../ledger-state';

/** An existing item of one stream's ledger that a step names. */
export type ItemRef =
  | { item: 'partition'; topic: string; partition: number }
  | { item: 'range'; topic: string; partition: number; from: number; incarnation?: number };

/**
 * One condition on a field of the item as stored. `is: undefined` requires the field to be absent;
 * `absentIs` is the value an absent field counts as (an incarnation: absent = 0).
 */
export type Requirement =
  | { field: string; is: unknown; absentIs?: unknown }
  | { field: string; isNot: readonly unknown[] }
  | { field: string; atLeast: number }
  | { field: string; atMost: number };

/** What an update changes: fields set, numbers added to (absent = 0), fields removed. */
export type ItemChange = { set?: Record<string, unknown>; add?: Record<string, number>; remove?: readonly string[] };

/** One step of a write. Creates require the item to be absent; updates and replaces require it to exist. */
export type ItemStep =
  | { kind: 'create-partition'; value: PartitionState }
  | { kind: 'create-range'; value: RangeState }
  | { kind: 'create-loss'; value: DataLossEntry }
  | { kind: 'create-closed'; value: ClosedIncarnation }
  /** A dead letter, written once (a second one at its offset refuses the write). */
  | { kind: 'create-dead-letter'; value: DeadLetter }
  /** A pending delivery of a dead letter, written whatever is stored (it replaces one a rewound dead letter left). */
  | { kind: 'put-delivery'; value: PendingDelivery }
  | { kind: 'update'; ref: ItemRef; when: readonly Requirement[]; change: ItemChange }
  /** Replaces the partition item with `value` (a new incarnation), conditional on the item as read. */
  | { kind: 'replace-partition'; ref: Extract<ItemRef, { item: 'partition' }>; when: readonly Requirement[]; value: PartitionState }
  /**
   * Moves a finished range out of its partition's live state into the ledger's history of ranges
   * (it must still be there, finished; the history is not conditional).
   */
  | { kind: 'archive-range'; value: RangeState }
  /**
   * Removes an item (a processor holding it loses its lease at its next write): whatever it holds,
   * or with `when` only if it exists and meets it.
   */
  | { kind: 'delete'; ref: ItemRef; when?: readonly Requirement[] };

/** A step that updates an existing item. */
export type UpdateStep = Extract<ItemStep, { kind: 'update' }>;

/** The partition item of `topic`/`partition`. */
export const partitionRef = (topic: string, partition: number): Extract<ItemRef, { item: 'partition' }> => ({
  item: 'partition',
  topic,
  partition,
});

/** The range item of a range's identity (topic, partition, incarnation, start offset). */
export const rangeRef = (r: { topic: string; partition: number; from: number; incarnation?: number }): ItemRef => ({
  item: 'range',
  topic: r.topic,
  partition: r.partition,
  from: r.from,
  ...(r.incarnation !== undefined ? { incarnation: r.incarnation } : {}),
});

/** The item is incarnation `n` (absent = 0): writes for an old incarnation never land on the new one. */
export const isIncarnation = (n: number | undefined): Requirement => ({ field: 'incarnation', is: n ?? 0, absentIs: 0 });

/** Whether one requirement holds of a stored item's fields. */
function holds(item: Record<string, unknown>, r: Requirement): boolean {
  const value = item[r.field];
  if ('is' in r) return (value ?? r.absentIs) === r.is;
  if ('isNot' in r) return !r.isNot.includes(value);
  if (typeof value !== 'number') return false;
  return 'atLeast' in r ? value >= r.atLeast : value <= r.atMost;
}

/** Whether `item` exists and meets every requirement (a missing item meets none). */
export function meets(item: object | undefined, when: readonly Requirement[]): boolean {
  return item !== undefined && when.every((r) => holds(item as Record<string, unknown>, r));
}

/** `item` with `change` applied (a new object; `item` is left alone). */
export function changed<T extends object>(item: T, change: ItemChange): T {
  const out: Record<string, unknown> = { ...item, ...structuredClone(change.set ?? {}) };
  for (const [field, n] of Object.entries(change.add ?? {})) out[field] = ((out[field] as number | undefined) ?? 0) + n;
  for (const field of change.remove ?? []) delete out[field];
  return out as T;
}
