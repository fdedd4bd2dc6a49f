/**
 * Range leases on DynamoDB's layout 2: the lease rules (ports/ledger-rules/lease.ts) as conditions on
 * a range's map inside its partition's group entry, and the outcome of a refused take judged on the
 * image DynamoDB returns. A range no longer in its partition's live state (archived after it
 * finished) is answered `done` when its partition's committed offset is past it.
 */
import { leaseRefusal, LEASE_TAKEABLE_STATUSES, lostLeaseOutcome, type LeaseAsk } from '../ports/ledger-rules/lease';
import type { Ledger, LeaseOutcome } from '../ports/ledger';
import { sameIncarnation } from '../ports/ledger-rules/incarnation';
import type { RangeState } from '../ports/ledger-state';
import { ItemWriteBuilder } from './expression.dynamodb';
import { encodeValue, entryName, groupKey, partitionOfEntry, RANGES_FIELD, rangesOfEntry } from './groups.dynamodb';
import type { Item } from './items.dynamodb';

/** A lease take of one range: its identity and what the take asks (the port's, but for the stream). */
export type LeaseTake = Omit<Parameters<Ledger['takeRangeLease']>[0], 'stream'>;

/** Adds one range's lease take (conditions and changes) to the group item's write `b`. */
export function addLeaseTake(b: ItemWriteBuilder, t: LeaseTake): void {
  const e = entryName(t.topic, t.partition);
  const at = (f: string) => [e, RANGES_FIELD, String(t.from), f];
  const code = (s: string) => b.value(encodeValue('range', 'status', s));
  const status = b.path(at('s'));
  const takeable = LEASE_TAKEABLE_STATUSES.map(code).join(', ');
  const inc = b.path([e, 'i']);
  b.require(`attribute_exists(${b.path([e, RANGES_FIELD, String(t.from)])})`)
    .require(t.incarnation ? `${inc} = ${b.value(t.incarnation)}` : `(attribute_not_exists(${inc}) OR ${inc} = ${b.value(0)})`)
    .require(`${b.path(at('u'))} = ${b.value(t.until)}`)
    .require(`${b.path(at('a'))} < ${b.value(t.maxAttempts)}`)
    .require(`(${status} IN (${takeable}) OR (${status} = ${code('leased')} AND ${b.path(at('m'))} < ${b.value(t.nowMs)}))`);
  b.set(at('s'), encodeValue('range', 'status', 'leased'))
    .set(at('k'), t.leaseToken)
    .set(at('m'), t.nowMs + t.leaseMs)
    .add(at('a'), 1);
  const first = b.path(at('f'));
  b.setRaw(at('f'), `if_not_exists(${first}, ${b.value(t.nowMs)})`);
}

/** The range `t` names as the group item `image` holds it (undefined: not in its partition's live state). */
export function rangeInImage(stream: string, image: Item | undefined, t: Pick<LeaseTake, 'topic' | 'partition' | 'from' | 'incarnation'>) {
  const entry = image?.[entryName(t.topic, t.partition)] as Item | undefined;
  if (!entry) return { range: undefined, committed: undefined, observed: {} };
  const p = partitionOfEntry({ stream, topic: t.topic, partition: t.partition }, entry);
  if (!sameIncarnation(p, t)) return { range: undefined, committed: undefined, observed: {} };
  const observed = {
    ...(p.observedRecordsPerSec !== undefined ? { observedRecordsPerSec: p.observedRecordsPerSec } : {}),
    ...(p.observedBytesPerRecord !== undefined ? { observedBytesPerRecord: p.observedBytesPerRecord } : {}),
  };
  return { range: rangesOfEntry(entry, p).find((r) => r.from === t.from), committed: p.committed, observed };
}

/**
 * Why a take cannot be taken, on the group item as a failed condition returned it: the lease rules'
 * refusal, or, for a range that left the live state, `done` if its partition is committed past it;
 * undefined when the image shows it takeable (another take of the same write failed).
 */
export function refusalInImage(stream: string, image: Item | undefined, t: LeaseTake): LeaseOutcome | undefined {
  const { range, committed } = rangeInImage(stream, image, t);
  const ask: LeaseAsk = { until: t.until, nowMs: t.nowMs, maxAttempts: t.maxAttempts };
  if (!range) return committed !== undefined && committed >= t.until ? { kind: 'done', range: archived(stream, t) } : { kind: 'missing' };
  return leaseRefusal(range, ask);
}

/** Why a take alone failed: its refusal, or held (a concurrent taker won between the image and the write). */
export function refusedTake(stream: string, image: Item | undefined, t: LeaseTake): LeaseOutcome {
  return refusalInImage(stream, image, t) ?? lostLeaseOutcome(rangeInImage(stream, image, t).range, t);
}

/** The outcome of a take the store applied: the range as it is now (`taken`, with its partition's rates), judged again for safety. */
export function takenOutcome(stream: string, image: Item | undefined, t: LeaseTake): LeaseOutcome {
  const { range, observed } = rangeInImage(stream, image, t);
  return range && range.leaseToken === t.leaseToken ? { kind: 'taken', range, observed } : (leaseRefusal(range, t) ?? { kind: 'missing' });
}

/** A finished range that left its partition's live state: what is known of it from its identity. */
function archived(stream: string, t: LeaseTake): RangeState {
  return {
    stream,
    topic: t.topic,
    partition: t.partition,
    from: t.from,
    until: t.until,
    status: 'done',
    epoch: 0,
    plannedAtMs: 0,
    dispatches: 0,
    attempts: 0,
    progress: t.until,
    ...(t.incarnation ? { incarnation: t.incarnation } : {}),
  };
}

/** The group item write of lease takes of ranges of one group. */
export function leaseTakesWrite(stream: string, group: number, takes: readonly LeaseTake[]): ItemWriteBuilder {
  const b = new ItemWriteBuilder(groupKey(stream, group));
  for (const t of takes) addLeaseTake(b, t);
  return b;
}
