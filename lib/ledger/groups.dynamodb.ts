/**
 * The ledger's group items on DynamoDB (layout 2): the changing state of up to PARTITIONS_PER_GROUP
 * partitions, with their ranges, in one item, so a planner tick plans a group in one conditional
 * UpdateItem and a processor leases and completes the ranges of a group in one each. A partition's
 * state is one map attribute of the group item (its entry), named by a hash of `topic/partition`,
 * with one-letter fields: every byte of every entry is billed on every write to the group, and a
 * write of an item of up to 1 KB costs one write unit. Group items of a stream are spread over
 * partition keys, GROUPS_PER_KEY to a key (see docs/ledger-schema.md, "Keys and write rates").
 *
 * Here: the keys, the entry names and the field tables between the port's `PartitionState` and
 * `RangeState` and their stored form, in both directions. What a partition keeps that does not
 * change while it runs (where it started, its topic id, why it retired) is its `P#` item.
 */
import type { PartitionState, PartitionStatus, RangeState, RangeStatus } from '../ports/ledger-state';
import { withDerivedFields } from '../ports/ledger-rules/derived';
import { partitionKey } from '../ranges';
import type { Key } from './keys.dynamodb';

/** Partitions a group item holds at most: a group of them, all with a range in flight, stays under 1 KB. */
export const PARTITIONS_PER_GROUP = 7;

/**
 * Group items sharing one partition key: at a 1 s trigger a busy group takes about four writes a
 * second (plan, lease, completion, a progress commit), so a key takes about a tenth of the 1,000
 * write units a second DynamoDB serves per partition.
 */
export const GROUPS_PER_KEY = 25;

/** The ledger layout these items belong to, recorded on the stream's META item. */
export const LEDGER_LAYOUT = 2;

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** The partition key of the group items `[k x GROUPS_PER_KEY, (k + 1) x GROUPS_PER_KEY)` of a stream. */
export const groupPk = (stream: string, keyIndex: number): string => `S#${stream}#${keyIndex}`;

/** The key of group `group` (an ordinal from 0) of a stream. */
export function groupKey(stream: string, group: number): Key {
  return { pk: groupPk(stream, Math.floor(group / GROUPS_PER_KEY)), sk: `G#${pad(group, 6)}` };
}

/** The partition keys holding groups `0..lastGroup`. */
export function groupKeyIndexes(lastGroup: number): number[] {
  return Array.from({ length: Math.floor(lastGroup / GROUPS_PER_KEY) + 1 }, (_, k) => k);
}

/** The group ordinal of a group item's sort key. */
export const groupOfSortKey = (sk: string): number => Number(sk.slice(2));

/**
 * The attribute naming a partition's entry in its group item: FNV-1a of `topic/partition` (`partitionKey`), base 36
 * (six characters at most). A name already taken in a group sends the partition to another group.
 */
export function entryName(topic: string, partition: number): string {
  let h = 0x811c9dc5;
  for (const ch of Buffer.from(partitionKey(topic, partition), 'utf8')) {
    h ^= ch;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return (h >>> 1).toString(36);
}

/** The fence attribute of a group item: the newest planner epoch that wrote it. */
export const FENCE_ATTRIBUTE = 'ep';
/** The ranges map of an entry, by start offset. */
export const RANGES_FIELD = 'r';

/**
 * Where each field of `PartitionState` is kept: a one-letter field of the entry, the `P#` item
 * (`static`), or nowhere because it is derived on reading (`derived`: the last planned time and the
 * last range's statistics are those of the newest range the entry holds).
 */
export const PARTITION_FIELDS: Record<keyof PartitionState, string | 'static' | 'derived'> = {
  stream: 'static',
  topic: 'static',
  partition: 'static',
  status: 's',
  startOffset: 'static',
  committed: 'c',
  nextFrom: 'n',
  firstSeenAtMs: 'static',
  lastPlannedAtMs: 'derived',
  reason: 'static',
  statusChangedAtMs: 'static',
  observedRecordsPerSec: 'o',
  observedBytesPerRecord: 'b',
  pid: 'p',
  backpressureRatePerSec: 'q',
  lastRange: 'derived',
  stopOffset: 'static',
  topicId: 'static',
  incarnation: 'i',
  rewinds: 'w',
  shard: 'derived',
};

/**
 * The one-letter field of each field of `RangeState` (`identity`: its key; `derived`: taken from
 * its partition on reading). Fields the rules write that the state does not list are kept too.
 */
export const RANGE_FIELDS: Record<keyof RangeState | 'failedAtMs' | 'releasedAtMs', string | 'identity' | 'derived'> = {
  stream: 'identity',
  topic: 'identity',
  partition: 'identity',
  from: 'identity',
  incarnation: 'identity',
  until: 'u',
  status: 's',
  epoch: 'e',
  plannedAtMs: 't',
  dispatchedAtMs: 'h',
  dispatches: 'd',
  redispatchedAtAttempts: 'y',
  attempts: 'a',
  leaseToken: 'k',
  leaseExpiresAtMs: 'm',
  progress: 'p',
  lastError: 'z',
  firstLeasedAtMs: 'f',
  finishedAtMs: 'w',
  records: 'r',
  deadLetters: 'v',
  pendingUntil: 'q',
  lastCommitAtMs: 'c',
  processingMs: 'g',
  schedulingDelayMs: 'l',
  failedAtMs: 'o',
  releasedAtMs: 'j',
  topicId: 'derived',
  rewinds: 'derived',
  shard: 'derived',
};

/** Stored codes of statuses (one character each). */
const PARTITION_CODES: Record<PartitionStatus, string> = { active: 'a', retired: 'r', failed: 'f' };
const RANGE_CODES: Record<RangeStatus, string> = { planned: 'p', leased: 'l', done: 'd', failed: 'f', parked: 'k' };
const decodeWith = <T extends string>(codes: Record<T, string>) => {
  const back = new Map(Object.entries(codes).map(([k, v]) => [v, k as T]));
  return (code: unknown): T => back.get(String(code)) ?? (code as T);
};
const partitionStatusOf = decodeWith(PARTITION_CODES);
const rangeStatusOf = decodeWith(RANGE_CODES);

/**
 * Values a field is not stored with: an entry's status when active (an absent status is active).
 * A requirement of that value holds on an absent field; setting it removes the field.
 */
export const STORED_DEFAULTS: Record<'partition' | 'range', Record<string, unknown>> = { partition: { status: 'active' }, range: {} };

/**
 * A range's dispatch time is stored only where it is not its planned time (a new range is written as
 * sent when it is planned); 0 stands for "not dispatched" on a range that was.
 */
export const NOT_DISPATCHED = 0;

/** A field's value as stored: statuses as their codes, everything else as it is. */
export function encodeValue(kind: 'partition' | 'range', field: string, value: unknown): unknown {
  if (field !== 'status' || typeof value !== 'string') return value;
  return kind === 'partition' ? (PARTITION_CODES[value as PartitionStatus] ?? value) : (RANGE_CODES[value as RangeStatus] ?? value);
}

/** The stored name of a logical field, or undefined when it is not kept in the entry. */
export function storedName(kind: 'partition' | 'range', field: string): string | undefined {
  const name = (kind === 'partition' ? PARTITION_FIELDS : RANGE_FIELDS)[field as never] as string | undefined;
  if (name === undefined) throw new Error(`ledger layout: ${kind} field ${field} has no place in the entry`);
  return name.length <= 2 ? name : undefined;
}

type Stored = Record<string, unknown>;

/** A range's stored map (identity and derived fields left out, a dispatch at its planned time implied). */
export function rangeToStored(r: Partial<RangeState> & Record<string, unknown>): Stored {
  const out: Stored = {};
  for (const [field, value] of Object.entries(r)) {
    const name = storedName('range', field);
    if (name && value !== undefined) out[name] = encodeValue('range', field, value);
  }
  if (r.dispatchedAtMs !== undefined && r.dispatchedAtMs === r.plannedAtMs) delete out[RANGE_FIELDS.dispatchedAtMs];
  return out;
}

/** A partition's stored entry (static and derived fields left out), with its ranges. */
export function entryToStored(p: PartitionState, ranges: RangeState[] = []): Stored {
  const out: Stored = { [RANGES_FIELD]: Object.fromEntries(ranges.map((r) => [String(r.from), rangeToStored(r)])) };
  for (const [field, value] of Object.entries(p)) {
    const name = storedName('partition', field);
    if (name && value !== undefined && value !== STORED_DEFAULTS.partition[field]) out[name] = encodeValue('partition', field, value);
  }
  return out;
}

/** The static part of a partition: what its `P#` item keeps. */
export function staticPart(p: PartitionState): Partial<PartitionState> {
  return Object.fromEntries(Object.entries(p).filter(([field]) => PARTITION_FIELDS[field as keyof PartitionState] === 'static'));
}

/** The ranges of a stored entry, as the port's states of `partition`. */
export function rangesOfEntry(entry: Stored, partition: PartitionState, shard?: string): RangeState[] {
  const stored = (entry[RANGES_FIELD] ?? {}) as Record<string, Stored>;
  return Object.entries(stored)
    .map(([from, r]) => {
      const out: Record<string, unknown> = {
        stream: partition.stream,
        topic: partition.topic,
        partition: partition.partition,
        from: Number(from),
        ...(partition.incarnation ? { incarnation: partition.incarnation } : {}),
        ...(partition.topicId !== undefined ? { topicId: partition.topicId } : {}),
        ...(partition.rewinds ? { rewinds: partition.rewinds } : {}),
        ...(shard !== undefined ? { shard } : {}),
      };
      for (const [field, name] of Object.entries(RANGE_FIELDS)) {
        if (name.length > 2 || r[name] === undefined) continue;
        out[field] = field === 'status' ? rangeStatusOf(r[name]) : r[name];
      }
      const sent = r[RANGE_FIELDS.dispatchedAtMs];
      if (sent === NOT_DISPATCHED) delete out.dispatchedAtMs;
      else if (sent === undefined && (out.dispatches as number) > 0) out.dispatchedAtMs = out.plannedAtMs;
      return out as RangeState;
    })
    .sort((a, b) => a.from - b.from);
}

/**
 * A partition's state from its static part and its stored entry, with the fields derived from its
 * ranges (derived.ts).
 */
export function partitionOfEntry(staticState: Partial<PartitionState>, entry: Stored): PartitionState {
  const out: Record<string, unknown> = { ...staticState, ...STORED_DEFAULTS.partition };
  for (const [field, name] of Object.entries(PARTITION_FIELDS)) {
    if (name.length > 2 || entry[name] === undefined) continue;
    out[field] = field === 'status' ? partitionStatusOf(entry[name]) : entry[name];
  }
  const p = out as PartitionState;
  return withDerivedFields(p, rangesOfEntry(entry, p));
}
