/**
 * The ledger's DynamoDB item shapes and condition expressions, in one place.
 *
 * One table, one item collection per stream (`pk = S#<stream>`):
 *   META                          planner lease/epoch, start marker (and partitions pending their start)
 *   P#<topic>#<partition:6>       partition state (cursor, committed offset, rate statistics)
 *   R#<topic>#<partition:6>#<from:16>  range (status, lease, progress, attempts)
 *   L#<topic>#<partition:6>#<from:16>  data-loss entry (exact lost span)
 *   D#<topic>#<partition:6>#<offset:16>  dead letter (record the handler kept rejecting)
 *   I#<topic>#<partition:6>#<incarnation:6>  closed incarnation (the topic was re-created)
 * R, L and D keys of a partition's incarnation n > 0 name the topic `<topic>~<n:4>` (a re-created
 * topic's offsets restart at 0, so its items must not meet the old ones); incarnation 0 keeps the
 * plain name, so ledgers written before incarnations read unchanged.
 * Open ranges also carry `openPk = S#<stream>`, the key of the sparse GSI `open-ranges`, so the
 * planner reads only unfinished ranges however many finished ones the table holds.
 * Kafka topic names are [a-zA-Z0-9._-], so '#' never occurs inside a topic.
 */
import type { QueryCommandInput, TransactWriteCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { ValidationError } from '../errors';
import { CLOSE_MAX_OPEN_RANGES } from '../ports/ledger';
import { splitLoop } from './loop.dynamodb';
import type { LedgerLimits } from '../ports/commit-limits';
import type { PlanWrite, RewindPartition } from '../ports/ledger';
import type {
  ClosedIncarnation,
  DataLossEntry,
  DeadLetter,
  DeadLetterHeader,
  LeasedRange,
  OperatorChange,
  PartitionState,
  PendingStart,
  RangeState,
  RangeStats,
  StreamMeta,
} from '../ports/ledger-state';
import type { SinkMark, SinkWrite } from '../ports/sink-write';

export const OPEN_RANGES_INDEX = 'open-ranges';

/**
 * What one commit may carry on DynamoDB. A transaction holds 100 actions (one is the progress update)
 * and 4 MB, with one action per item; keep a margin. Dead letters stay under the 400 KB item limit
 * after base64 (x4/3): value 200 KB (267 KB encoded) + key 16 KB (22 KB) + headers 64 KB encoded +
 * error 4 KB + fields < 400 KB.
 */
export const DYNAMODB_LIMITS: LedgerLimits = {
  maxSinkWrites: 98,
  maxSinkBytes: 3_500_000,
  // A marked write group is one transaction of its own (100 actions), or one UpdateItem when alone.
  maxMarkedWrites: 100,
  deadLetter: { maxValueBytes: 200 * 1024, maxKeyBytes: 16 * 1024, maxHeaderBytes: 64 * 1024, maxErrorChars: 4000 },
};
/** The ledger table's TTL attribute (epoch seconds): finished ranges and dead letters carry it. */
export const TTL_ATTRIBUTE = 'expiresAt';
/** Finished ranges expire after this long (DynamoDB TTL attribute `expiresAt`, epoch seconds). */
export const DONE_RANGE_TTL_SEC = 7 * 24 * 3600;

type Key = { pk: string; sk: string };
type Item = Record<string, unknown>;
export type TxAction = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const pad = (n: number, width: number): string => String(n).padStart(width, '0');
/** The topic part of a partition incarnation's item keys ('~' never occurs in topic names). */
const seg = (topic: string, incarnation: number | undefined): string => (incarnation ? `${topic}~${pad(incarnation, 4)}` : topic);

export const keys = {
  pk: (stream: string): string => `S#${stream}`,
  meta: (stream: string): Key => ({ pk: keys.pk(stream), sk: 'META' }),
  partition: (stream: string, topic: string, partition: number): Key => ({
    pk: keys.pk(stream),
    sk: `P#${topic}#${pad(partition, 6)}`,
  }),
  range: (stream: string, r: { topic: string; partition: number; from: number; incarnation?: number }): Key => ({
    pk: keys.pk(stream),
    sk: `R#${seg(r.topic, r.incarnation)}#${pad(r.partition, 6)}#${pad(r.from, 16)}`,
  }),
  loss: (stream: string, l: { topic: string; partition: number; from: number; incarnation?: number }): Key => ({
    pk: keys.pk(stream),
    sk: `L#${seg(l.topic, l.incarnation)}#${pad(l.partition, 6)}#${pad(l.from, 16)}`,
  }),
  deadLetter: (stream: string, d: { topic: string; partition: number; offset: number; incarnation?: number }): Key => ({
    pk: keys.pk(stream),
    sk: `D#${seg(d.topic, d.incarnation)}#${pad(d.partition, 6)}#${pad(d.offset, 16)}`,
  }),
  closed: (stream: string, c: { topic: string; partition: number; incarnation: number }): Key => ({
    pk: keys.pk(stream),
    sk: `I#${c.topic}#${pad(c.partition, 6)}#${pad(c.incarnation, 6)}`,
  }),
  /**
   * Sort-key bounds of one partition's range items (`'R'`) or dead letters (`'D'`) at offsets
   * `>= from`, for `sk BETWEEN :lo AND :hi` (offsets are zero-padded, so string order is offset order).
   */
  partitionSpan: (kind: 'R' | 'D', topic: string, partition: number, from: number, incarnation?: number): { lo: string; hi: string } => ({
    lo: `${kind}#${seg(topic, incarnation)}#${pad(partition, 6)}#${pad(from, 16)}`,
    hi: `${kind}#${seg(topic, incarnation)}#${pad(partition, 6)}#${'9'.repeat(16)}`,
  }),
};

/** Removes undefined fields (the document client rejects them by default). */
function compact<T extends Item>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function strip(item: Item): Item {
  const { pk: _pk, sk: _sk, openPk: _o, expiresAt: _e, type: _t, ...rest } = item;
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
  closedItem: (c: ClosedIncarnation): Item => compact({ ...keys.closed(c.stream, c), type: 'closed-incarnation', ...c }),
  closedFromItem: (item: Item): ClosedIncarnation => strip(item) as ClosedIncarnation,
};

/** The TTL attribute (epoch seconds) of a dead letter with a retention; DynamoDB deletes it after. */
function deadLetterExpiry(d: DeadLetter): Item {
  // Stored once, in seconds, on the TTL attribute (`expiresAtMs: undefined` drops the port's copy).
  return d.expiresAtMs === undefined ? {} : { [TTL_ATTRIBUTE]: Math.ceil(d.expiresAtMs / 1000), expiresAtMs: undefined };
}

/** Retention fields of a stored dead letter (items written before retention existed kept the record, forever). */
function deadLetterRetention(item: Item): Pick<DeadLetter, 'kept' | 'expiresAtMs'> {
  const expiresAt = typeof item[TTL_ATTRIBUTE] === 'number' ? item[TTL_ATTRIBUTE] : undefined;
  return compact({
    kept: (item.kept as DeadLetter['kept'] | undefined) ?? 'record',
    expiresAtMs: expiresAt === undefined ? undefined : expiresAt * 1000,
  });
}

/**
 * The condition "the partition item is incarnation `n`" (absent = 0), with its value under `name`:
 * writes of an old incarnation's processor or planner never land on the new one (I2).
 */
export function incarnationCondition(n: number | undefined, name: string): { expression: string; values: Item } {
  return n
    ? { expression: `incarnation = ${name}`, values: { [name]: n } }
    : { expression: `(attribute_not_exists(incarnation) OR incarnation = ${name})`, values: { [name]: 0 } };
}

/** The condition every processor write checks: this processor still holds the range's lease (I3). */
const HOLDS_LEASE = '#st = :leased AND leaseToken = :token';

/**
 * Takes a range lease (KCL-style: counts the attempt), conditional on the range ending at the
 * requested `until`, so a forged or stale request changes nothing; ALL_OLD tells why it failed.
 */
export function takeLeaseUpdate(
  table: string,
  key: Key,
  t: { until: number; leaseToken: string; nowMs: number; leaseMs: number; maxAttempts: number },
): UpdateCommandInput {
  return {
    TableName: table,
    Key: key,
    UpdateExpression:
      'SET #st = :leased, leaseToken = :token, leaseExpiresAtMs = :expires, attempts = attempts + :one, firstLeasedAtMs = if_not_exists(firstLeasedAtMs, :now)',
    ConditionExpression:
      'attribute_exists(pk) AND #until = :until AND attempts < :max AND (#st IN (:planned, :failed) OR (#st = :leased AND leaseExpiresAtMs < :now))',
    ExpressionAttributeNames: { '#st': 'status', '#until': 'until' },
    ExpressionAttributeValues: {
      ':leased': 'leased',
      ':planned': 'planned',
      ':failed': 'failed',
      ':token': t.leaseToken,
      ':expires': t.nowMs + t.leaseMs,
      ':until': t.until,
      ':one': 1,
      ':now': t.nowMs,
      ':max': t.maxAttempts,
    },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * Progress `expect -> to` plus lease renewal, conditional on the lease and the progress seen (I2);
 * it ends a pending folded batch, which must end at `to`.
 */
export function progressAction(table: string, range: LeasedRange, expect: number, to: number, leaseUntilMs: number): TxAction {
  return {
    Update: {
      TableName: table,
      Key: keys.range(range.stream, range),
      UpdateExpression: 'SET progress = :to, leaseExpiresAtMs = :until REMOVE pendingUntil',
      ConditionExpression: `${HOLDS_LEASE} AND progress = :expect AND (attribute_not_exists(pendingUntil) OR pendingUntil = :to)`,
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: { ':to': to, ':until': leaseUntilMs, ':expect': expect, ':leased': 'leased', ':token': range.leaseToken },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** Records the folded batch `[expect, until)` as pending and renews the lease (same conditions as progress). */
export function beginBatchUpdate(
  table: string,
  range: LeasedRange,
  expect: number,
  until: number,
  leaseUntilMs: number,
): UpdateCommandInput {
  return {
    TableName: table,
    Key: keys.range(range.stream, range),
    UpdateExpression: 'SET pendingUntil = :pending, leaseExpiresAtMs = :until',
    ConditionExpression: `${HOLDS_LEASE} AND progress = :expect AND (attribute_not_exists(pendingUntil) OR pendingUntil = :pending)`,
    ExpressionAttributeNames: { '#st': 'status' },
    ExpressionAttributeValues: {
      ':pending': until,
      ':until': leaseUntilMs,
      ':expect': expect,
      ':leased': 'leased',
      ':token': range.leaseToken,
    },
  };
}

/**
 * The attribute a sink item keeps its applied-offset mark in, one per stream, partition,
 * incarnation and rewind: `_applied:<stream>:<topic>:<partition>[#incarnation][@rewinds]`.
 * Top-level (not a map) because DynamoDB cannot SET a path inside a map the item does not have yet.
 */
export function markAttribute(mark: SinkMark): string {
  const inc = mark.incarnation ? `#${mark.incarnation}` : '';
  const rew = mark.rewinds ? `@${mark.rewinds}` : '';
  return `_applied:${mark.stream}:${mark.topic}:${mark.partition}${inc}${rew}`;
}

/**
 * A folded batch's `update` with its mark: the handler's update expression plus `SET <mark> = until`,
 * conditional on the mark being absent or below `until` (the batch has not reached this item yet).
 */
export function markedSinkAction(w: SinkWrite, mark: SinkMark): TxAction {
  if (!('update' in w))
    throw new ValidationError('a folded batch writes updates only (a put or delete would drop the marks of other partitions)');
  if (w.update.condition) throw new ValidationError('a folded write carries no condition of its own (its mark is its condition)');
  if (!w.update.table) throw new ValidationError('sink write without a table: set handler.sinkTable or name the table in the write');
  const names = { ...w.update.names, '#kdMark': markAttribute(mark) };
  const values = { ...w.update.values, ':kdMark': mark.until };
  return {
    Update: {
      TableName: w.update.table,
      Key: w.update.key,
      UpdateExpression: withMarkSet(w.update.expression),
      ConditionExpression: 'attribute_not_exists(#kdMark) OR #kdMark < :kdMark',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * Adds `#kdMark = :kdMark` to the expression's SET clause (an update expression names each clause
 * once), or a SET clause when it has none. Bare attribute names cannot be the reserved word SET,
 * so the first whole word SET is the clause.
 */
function withMarkSet(expression: string): string {
  const set = /\bSET\b/i.exec(expression);
  if (!set) return `${expression} SET #kdMark = :kdMark`;
  const at = set.index + set[0].length;
  return `${expression.slice(0, at)} #kdMark = :kdMark,${expression.slice(at)}`;
}

/** Marks the range done; it leaves the open-ranges index and expires later (TTL). */
export function completeAction(table: string, range: LeasedRange, expect: number, nowMs: number, stats: RangeStats): TxAction {
  return {
    Update: {
      TableName: table,
      Key: keys.range(range.stream, range),
      UpdateExpression:
        'SET #st = :done, progress = :until, finishedAtMs = :now, records = :records, expiresAt = :ttl REMOVE openPk, leaseExpiresAtMs',
      ConditionExpression: `${HOLDS_LEASE} AND progress = :expect`,
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: {
        ':done': 'done',
        ':until': range.until,
        ':now': nowMs,
        ':records': stats.records,
        ':ttl': Math.floor(nowMs / 1000) + DONE_RANGE_TTL_SEC,
        ':expect': expect,
        ':leased': 'leased',
        ':token': range.leaseToken,
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
}

/** The partition's committed offset moves from the range's start to its end, with the range's stats. */
export function advancePartitionAction(
  table: string,
  range: LeasedRange,
  stats: RangeStats,
  observedRecordsPerSec: number | undefined,
  withAdvance: boolean,
): TxAction {
  const values: Item = { ':stats': stats };
  const inc = incarnationCondition(range.incarnation, ':inc');
  let set = 'lastRange = :stats';
  if (observedRecordsPerSec !== undefined) {
    set += ', observedRecordsPerSec = :rate';
    values[':rate'] = observedRecordsPerSec;
  }
  if (withAdvance) {
    set += ', committed = :until';
    values[':until'] = range.until;
    values[':from'] = range.from;
  }
  return {
    Update: {
      TableName: table,
      Key: keys.partition(range.stream, range.topic, range.partition),
      UpdateExpression: `SET ${set}`,
      ConditionExpression: `${withAdvance ? 'attribute_exists(pk) AND committed = :from' : 'attribute_exists(pk)'} AND ${inc.expression}`,
      ExpressionAttributeValues: { ...values, ...inc.values },
    },
  };
}

/** A sink write as a transaction action (tables default to none: the processor names them). */
export function sinkAction(w: SinkWrite): TxAction {
  const cond = (c?: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> }) =>
    c ? { ConditionExpression: c.expression, ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.values } : {};
  const table = (t: string | undefined): string => {
    if (!t) throw new ValidationError('sink write without a table: set handler.sinkTable or name the table in the write');
    return t;
  };
  if ('put' in w) return { Put: { TableName: table(w.put.table), Item: w.put.item, ...cond(w.put.condition) } };
  if ('delete' in w) return { Delete: { TableName: table(w.delete.table), Key: w.delete.key, ...cond(w.delete.condition) } };
  const c = w.update.condition;
  return {
    Update: {
      TableName: table(w.update.table),
      Key: w.update.key,
      UpdateExpression: w.update.expression,
      ConditionExpression: c?.expression,
      ExpressionAttributeNames: w.update.names || c?.names ? { ...w.update.names, ...c?.names } : undefined,
      ExpressionAttributeValues: w.update.values || c?.values ? { ...w.update.values, ...c?.values } : undefined,
    },
  };
}

/** The condition every fenced planner transaction checks first. */
export function fenceCheck(table: string, stream: string, epoch: number, ownerToken: string): TxAction {
  return {
    ConditionCheck: {
      TableName: table,
      Key: keys.meta(stream),
      ConditionExpression: 'epoch = :epoch AND ownerToken = :owner',
      ExpressionAttributeValues: { ':epoch': epoch, ':owner': ownerToken },
    },
  };
}

/**
 * Sets a one-time timestamp on the META item, fenced by the planner epoch; ALL_OLD tells fenced from
 * set. The start mark carries the partitions the first run could not register, when there are any.
 */
export function markMetaOnceUpdate(
  table: string,
  m: { stream: string; epoch: number; ownerToken: string; nowMs: number; pendingStart?: PendingStart[] },
  attribute: 'startedAtMs' | 'finishedAtMs',
): UpdateCommandInput {
  const pending = attribute === 'startedAtMs' && m.pendingStart?.length ? m.pendingStart.map((t) => compact({ ...t })) : undefined;
  return {
    TableName: table,
    Key: keys.meta(m.stream),
    UpdateExpression: `SET ${attribute} = :now${pending ? ', pendingStart = :pending' : ''}`,
    ConditionExpression: `epoch = :epoch AND ownerToken = :owner AND attribute_not_exists(${attribute})`,
    ExpressionAttributeValues: { ':now': m.nowMs, ':epoch': m.epoch, ':owner': m.ownerToken, ...(pending ? { ':pending': pending } : {}) },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Takes the planner lease if it is free, expired or already ours, bumping the epoch (I5). */
export function acquirePlannerLeaseUpdate(
  table: string,
  a: { stream: string; ownerToken: string; nowMs: number; leaseMs: number },
): UpdateCommandInput {
  return {
    TableName: table,
    Key: keys.meta(a.stream),
    UpdateExpression:
      'SET epoch = if_not_exists(epoch, :zero) + :one, ownerToken = :owner, leaseExpiresAtMs = :until, #s = :stream, lastRunAtMs = :now',
    ConditionExpression: 'attribute_not_exists(pk) OR leaseExpiresAtMs < :now OR ownerToken = :owner',
    ExpressionAttributeNames: { '#s': 'stream' },
    ExpressionAttributeValues: {
      ':zero': 0,
      ':one': 1,
      ':owner': a.ownerToken,
      ':until': a.nowMs + a.leaseMs,
      ':now': a.nowMs,
      ':stream': a.stream,
    },
    ReturnValues: 'ALL_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** Frees the planner lease, conditional on still holding `epoch`; optionally confirms the run's dispatches. */
export function releasePlannerLeaseUpdate(
  table: string,
  r: { stream: string; epoch: number; ownerToken: string; confirmDispatches?: boolean },
): UpdateCommandInput {
  return {
    TableName: table,
    Key: keys.meta(r.stream),
    UpdateExpression: r.confirmDispatches ? 'SET leaseExpiresAtMs = :zero, confirmedEpoch = :epoch' : 'SET leaseExpiresAtMs = :zero',
    ConditionExpression: 'epoch = :epoch AND ownerToken = :owner',
    ExpressionAttributeValues: { ':zero': 0, ':epoch': r.epoch, ':owner': r.ownerToken },
  };
}

/** Records a processor's failure on its range (`failed` or `parked`), conditional on its lease (I3). */
export function failRangeUpdate(
  table: string,
  range: LeasedRange,
  status: 'failed' | 'parked',
  error: string,
  nowMs: number,
): UpdateCommandInput {
  return {
    TableName: table,
    Key: keys.range(range.stream, range),
    UpdateExpression: 'SET #st = :status, lastError = :err, failedAtMs = :now, leaseExpiresAtMs = :zero',
    ConditionExpression: HOLDS_LEASE,
    ExpressionAttributeNames: { '#st': 'status' },
    ExpressionAttributeValues: {
      ':status': status,
      ':err': error.slice(0, 4000),
      ':now': nowMs,
      ':zero': 0,
      ':leased': 'leased',
      ':token': range.leaseToken,
    },
  };
}

/** Gives a range back before the deadline, conditional on its lease (I3); progress is kept. */
export function releaseRangeUpdate(table: string, range: LeasedRange, nowMs: number, progressed: boolean): UpdateCommandInput {
  return {
    TableName: table,
    Key: keys.range(range.stream, range),
    // Back to `planned` and not dispatched: the next planner run dispatches it again at once.
    // A deadline that still made progress is not a failed attempt.
    UpdateExpression: `SET #st = :planned, leaseExpiresAtMs = :zero, releasedAtMs = :now${progressed ? ', attempts = attempts - :one' : ''} REMOVE dispatchedAtMs`,
    ConditionExpression: HOLDS_LEASE,
    ExpressionAttributeNames: { '#st': 'status' },
    ExpressionAttributeValues: {
      ':planned': 'planned',
      ':zero': 0,
      ':now': nowMs,
      ':leased': 'leased',
      ':token': range.leaseToken,
      ...(progressed ? { ':one': 1 } : {}),
    },
  };
}

/** A strongly consistent query of the stream's items whose sort key lies in `[lo, hi]`. */
export function spanQuery(table: string, stream: string, span: { lo: string; hi: string }): QueryCommandInput {
  return {
    TableName: table,
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
    ExpressionAttributeValues: { ':pk': keys.pk(stream), ':lo': span.lo, ':hi': span.hi },
    ConsistentRead: true,
  };
}

/** A strongly consistent query of the stream's items whose sort key starts with `prefix`. */
export function prefixQuery(table: string, stream: string, prefix: string): QueryCommandInput {
  return {
    TableName: table,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': keys.pk(stream), ':prefix': prefix },
    ConsistentRead: true,
  };
}

/** The stream's open ranges, from the sparse index (eventually consistent). */
export function openRangesQuery(table: string, stream: string): QueryCommandInput {
  return {
    TableName: table,
    IndexName: OPEN_RANGES_INDEX,
    KeyConditionExpression: 'openPk = :pk',
    ExpressionAttributeValues: { ':pk': keys.pk(stream) },
  };
}

/** The condition of every item that is written once: its key is not taken. */
export const ABSENT = 'attribute_not_exists(pk)';

/** Puts `item` only if nothing is stored under its key. */
export function putIfAbsent(table: string, item: Item): TxAction {
  return { Put: { TableName: table, Item: item, ConditionExpression: ABSENT } };
}

type PlanWriteOf<K extends PlanWrite['kind']> = Extract<PlanWrite, { kind: K }>;
type PlanWriteBuilder<K extends PlanWrite['kind']> = (table: string, stream: string, w: PlanWriteOf<K>) => TxAction[];

/** Persists a newly discovered partition (only if absent). */
const registerPartition: PlanWriteBuilder<'register-partition'> = (table, _stream, w) => [
  putIfAbsent(table, codec.partitionItem(w.partition)),
];

/** Persists a range and moves its partition's planning cursor from `range.from` to `range.until`. */
const planRange: PlanWriteBuilder<'plan-range'> = (table, stream, w) => {
  const r = w.range;
  const values: Item = { ':from': r.from, ':until': r.until, ':now': w.partitionUpdate.lastPlannedAtMs, ':active': 'active' };
  let set = 'nextFrom = :until, lastPlannedAtMs = :now';
  if (w.partitionUpdate.pid) {
    set += ', pid = :pid';
    values[':pid'] = w.partitionUpdate.pid;
  }
  if (w.partitionUpdate.backpressureRatePerSec !== undefined) {
    set += ', backpressureRatePerSec = :bpRate';
    values[':bpRate'] = w.partitionUpdate.backpressureRatePerSec;
  }
  const inc = incarnationCondition(r.incarnation, ':inc');
  return [
    putIfAbsent(table, codec.rangeItem(r)),
    {
      Update: {
        TableName: table,
        Key: keys.partition(stream, r.topic, r.partition),
        UpdateExpression: `SET ${set}`,
        ConditionExpression: `#st = :active AND nextFrom = :from AND ${inc.expression}`,
        ExpressionAttributeNames: { '#st': 'status' },
        ExpressionAttributeValues: { ...values, ...inc.values },
      },
    },
  ];
};

/** Records a dispatch (and the attempts it was sent at) unless the range finished or was parked, from the dispatch count seen. */
const markDispatched: PlanWriteBuilder<'mark-dispatched'> = (table, stream, w) => [
  {
    Update: {
      TableName: table,
      Key: keys.range(stream, w.range),
      UpdateExpression: `SET dispatchedAtMs = :now, dispatches = dispatches + :one${w.attempts === undefined ? '' : ', redispatchedAtAttempts = :attempts'}`,
      ConditionExpression: 'NOT #st IN (:done, :parked) AND dispatches = :expectDispatches',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: {
        ':now': w.nowMs,
        ':one': 1,
        ':done': 'done',
        ':parked': 'parked',
        ':expectDispatches': w.expect.dispatches,
        ...(w.attempts === undefined ? {} : { ':attempts': w.attempts }),
      },
    },
  },
];

/** Clears a dispatch the dispatcher refused, so the next run sends the range at once. */
const unmarkDispatch: PlanWriteBuilder<'unmark-dispatch'> = (table, stream, w) => [
  {
    Update: {
      TableName: table,
      Key: keys.range(stream, w.range),
      UpdateExpression: 'REMOVE dispatchedAtMs SET dispatches = dispatches - :one',
      ConditionExpression: '#st = :planned AND dispatches = :expectDispatches',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: { ':one': 1, ':planned': 'planned', ':expectDispatches': w.expect.dispatches },
    },
  },
];

/** Parks a range from the status and attempt count seen. */
const parkRange: PlanWriteBuilder<'park-range'> = (table, stream, w) => [
  {
    Update: {
      TableName: table,
      Key: keys.range(stream, w.range),
      UpdateExpression: 'SET #st = :parked, lastError = :err',
      ConditionExpression: '#st = :expectStatus AND attempts = :expectAttempts',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: {
        ':parked': 'parked',
        ':err': w.error,
        ':expectStatus': w.expect.status,
        ':expectAttempts': w.expect.attempts,
      },
    },
  },
];

/** Moves an active partition to `retired` or `failed`, with its reason. */
const endPartition =
  (to: 'retired' | 'failed') =>
  (table: string, stream: string, w: PlanWriteOf<'retire-partition' | 'fail-partition'>): TxAction[] => [
    {
      Update: {
        TableName: table,
        Key: keys.partition(stream, w.topic, w.partition),
        UpdateExpression: 'SET #st = :to, reason = :reason, statusChangedAtMs = :now',
        ConditionExpression: '#st = :active',
        ExpressionAttributeNames: { '#st': 'status' },
        ExpressionAttributeValues: { ':to': to, ':reason': w.reason, ':now': w.nowMs, ':active': 'active' },
      },
    },
  ];

/** Records a lost span and moves an idle partition past it. */
const recordDataLoss: PlanWriteBuilder<'record-data-loss'> = (table, stream, w) => [
  putIfAbsent(table, codec.lossItem(w.loss)),
  {
    Update: {
      TableName: table,
      Key: keys.partition(stream, w.loss.topic, w.loss.partition),
      UpdateExpression: 'SET nextFrom = :to, committed = :to',
      ConditionExpression: '#st = :active AND nextFrom = :expect AND committed = :expect',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: { ':to': w.loss.until, ':expect': w.expectFrom, ':active': 'active' },
    },
  },
];

/** Advances the committed offset forward only, within the planning cursor. */
const advanceCommitted: PlanWriteBuilder<'advance-committed'> = (table, stream, w) => [
  {
    Update: {
      TableName: table,
      Key: keys.partition(stream, w.topic, w.partition),
      UpdateExpression: 'SET committed = :to',
      ConditionExpression: 'committed = :expect AND nextFrom >= :to AND :to >= :expect',
      ExpressionAttributeValues: { ':to': w.to, ':expect': w.expect },
    },
  },
];

/** One builder per planner write kind. */
const PLAN_WRITE_BUILDERS: { [K in PlanWrite['kind']]: PlanWriteBuilder<K> } = {
  'register-partition': registerPartition,
  'plan-range': planRange,
  'close-incarnation': (table, stream, w) => closeIncarnationActions(table, stream, w.closed, w.next),
  'record-topic-id': (table, stream, w) => [recordTopicIdAction(table, stream, w)],
  'mark-dispatched': markDispatched,
  'unmark-dispatch': unmarkDispatch,
  'park-range': parkRange,
  'retire-partition': endPartition('retired'),
  'fail-partition': endPartition('failed'),
  'record-data-loss': recordDataLoss,
  'advance-committed': advanceCommitted,
};

/** The transaction actions (one or two, always in the same transaction) of one planner write. */
export function planWriteActions(table: string, stream: string, w: PlanWrite): TxAction[] {
  return (PLAN_WRITE_BUILDERS[w.kind] as PlanWriteBuilder<typeof w.kind>)(table, stream, w);
}

/** Records the topic id of a partition that has none (a ledger written before topic ids). */
function recordTopicIdAction(table: string, stream: string, w: Extract<PlanWrite, { kind: 'record-topic-id' }>): TxAction {
  const inc = incarnationCondition(w.incarnation, ':inc');
  return {
    Update: {
      TableName: table,
      Key: keys.partition(stream, w.topic, w.partition),
      UpdateExpression: 'SET topicId = :tid',
      ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(topicId) AND ${inc.expression}`,
      ExpressionAttributeValues: { ':tid': w.topicId, ...inc.values },
    },
  };
}

/**
 * Closes a partition incarnation in one transaction: the record of it, the removal of its open
 * ranges (unconditional: a processor holding one loses its lease, as its next write names an item
 * that is gone), and the partition replaced by the next incarnation, conditional on everything the
 * planner read of it.
 */
function closeIncarnationActions(table: string, stream: string, c: ClosedIncarnation, next: PartitionState): TxAction[] {
  if (c.openRanges.length > CLOSE_MAX_OPEN_RANGES) {
    throw new ValidationError(
      `close-incarnation of ${c.topic}/${c.partition} names ${c.openRanges.length} open ranges; at most ${CLOSE_MAX_OPEN_RANGES} fit one transaction`,
    );
  }
  const inc = incarnationCondition(c.incarnation, ':inc');
  const values: Item = { ':st': c.status, ':c': c.committed, ':n': c.nextFrom, ...inc.values };
  let topicCond = 'attribute_not_exists(topicId)';
  if (c.topicId !== undefined) {
    topicCond = 'topicId = :tid';
    values[':tid'] = c.topicId;
  }
  return [
    {
      Put: {
        TableName: table,
        Item: codec.partitionItem(next),
        ConditionExpression: `#st = :st AND committed = :c AND nextFrom = :n AND ${inc.expression} AND ${topicCond}`,
        ExpressionAttributeNames: { '#st': 'status' },
        ExpressionAttributeValues: values,
      },
    },
    { Put: { TableName: table, Item: codec.closedItem(c), ConditionExpression: 'attribute_not_exists(pk)' } },
    ...c.openRanges.map((r): TxAction => ({
      Delete: {
        TableName: table,
        Key: keys.range(stream, { topic: c.topic, partition: c.partition, from: r.from, incarnation: c.incarnation }),
      },
    })),
  ];
}

/**
 * An operator rewind of one partition: committed = nextFrom = `to`, active again, conditional on the
 * cursor the operator's read saw (I2) and on the partition not being retired.
 */
export function rewindPartitionAction(table: string, stream: string, p: RewindPartition): TxAction {
  const inc = incarnationCondition(p.incarnation, ':inc');
  return {
    Update: {
      TableName: table,
      Key: keys.partition(stream, p.topic, p.partition),
      // Counting rewinds gives folded sink writes new marks: the offsets from `to` on apply again.
      UpdateExpression: 'SET committed = :to, nextFrom = :to, #st = :active, rewinds = if_not_exists(rewinds, :zero) + :one REMOVE reason',
      ConditionExpression: `attribute_exists(pk) AND committed = :c AND nextFrom = :n AND #st <> :retired AND ${inc.expression}`,
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: {
        ':to': p.to,
        ':c': p.expect.committed,
        ':n': p.expect.nextFrom,
        ':active': 'active',
        ':retired': 'retired',
        ':zero': 0,
        ':one': 1,
        ...inc.values,
      },
    },
  };
}

/** Records an operator change on META; the update itself carries the planner fence (one action per item). */
export function fencedChangeAction(table: string, stream: string, epoch: number, ownerToken: string, change: OperatorChange): TxAction {
  return {
    Update: {
      TableName: table,
      Key: keys.meta(stream),
      UpdateExpression: 'SET lastChange = :change',
      ConditionExpression: 'epoch = :epoch AND ownerToken = :owner',
      ExpressionAttributeValues: { ':change': change, ':epoch': epoch, ':owner': ownerToken },
    },
  };
}

/** Removes a range item only in the status the operator's read saw (done history, or a parked range). */
export function deleteRangeAction(
  table: string,
  stream: string,
  r: { topic: string; partition: number; from: number; incarnation?: number },
  status: 'done' | 'parked',
): TxAction {
  return {
    Delete: {
      TableName: table,
      Key: keys.range(stream, r),
      ConditionExpression: '#st = :status',
      ExpressionAttributeNames: { '#st': 'status' },
      ExpressionAttributeValues: { ':status': status },
    },
  };
}

/** Marks a dead letter re-driven, once: a second re-drive (or a missing item) fails the condition. */
export function redriveAction(
  table: string,
  stream: string,
  d: { topic: string; partition: number; offset: number; incarnation?: number },
  nowMs: number,
): TxAction {
  return {
    Update: {
      TableName: table,
      Key: keys.deadLetter(stream, d),
      UpdateExpression: 'SET redrivenAtMs = :now',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(redrivenAtMs)',
      ExpressionAttributeValues: { ':now': nowMs },
    },
  };
}
