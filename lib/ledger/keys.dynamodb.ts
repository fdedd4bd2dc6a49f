/**
 * The ledger's DynamoDB keys, and the queries over them.
 *
 * One table, one item collection per stream (`pk = S#<stream>`):
 *   META                          planner lease/epoch, start marker (and partitions pending their start)
 *   P#<topic>#<partition:6>       partition state (cursor, committed offset, rate statistics)
 *   R#<topic>#<partition:6>#<from:16>  range (status, lease, progress, attempts)
 *   L#<topic>#<partition:6>#<from:16>  data-loss entry (exact lost span)
 *   D#<topic>#<partition:6>#<offset:16>  dead letter (record the handler kept rejecting)
 *   I#<topic>#<partition:6>#<incarnation:6>  closed incarnation (the topic was re-created)
 *   O#<topic>#<partition:6>#<offset:16>#<destination>  pending delivery of a dead letter (the outbox)
 * R, L, D and O keys of a partition's incarnation n > 0 name the topic `<topic>~<n:4>` (a re-created
 * topic's offsets restart at 0, so its items must not meet the old ones); incarnation 0 keeps the
 * plain name, so ledgers written before incarnations read unchanged.
 * Open ranges also carry `openPk = S#<stream>`, the key of the sparse GSI `open-ranges`, so the
 * planner reads only unfinished ranges however many finished ones the table holds.
 * Kafka topic names are [a-zA-Z0-9._-], so '#' never occurs inside a topic.
 */
import type { QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { ItemRef } from '../ports/ledger-rules/item-step';
import { incarnationTopicName } from '../ports/ledger-rules/incarnation';
import { deliveryOrderKey } from '../ports/ledger-rules/outbox';

export const OPEN_RANGES_INDEX = 'open-ranges';
export type Key = { pk: string; sk: string };

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

export const keys = {
  pk: (stream: string): string => `S#${stream}`,
  meta: (stream: string): Key => ({ pk: keys.pk(stream), sk: 'META' }),
  partition: (stream: string, topic: string, partition: number): Key => ({
    pk: keys.pk(stream),
    sk: `P#${topic}#${pad(partition, 6)}`,
  }),
  range: (stream: string, r: { topic: string; partition: number; from: number; incarnation?: number }): Key => ({
    pk: keys.pk(stream),
    sk: `R#${incarnationTopicName(r.topic, r.incarnation)}#${pad(r.partition, 6)}#${pad(r.from, 16)}`,
  }),
  loss: (stream: string, l: { topic: string; partition: number; from: number; incarnation?: number }): Key => ({
    pk: keys.pk(stream),
    sk: `L#${incarnationTopicName(l.topic, l.incarnation)}#${pad(l.partition, 6)}#${pad(l.from, 16)}`,
  }),
  deadLetter: (stream: string, d: { topic: string; partition: number; offset: number; incarnation?: number }): Key => ({
    pk: keys.pk(stream),
    sk: `D#${incarnationTopicName(d.topic, d.incarnation)}#${pad(d.partition, 6)}#${pad(d.offset, 16)}`,
  }),
  // The outbox's order is this key's: the memory ledger sorts deliveries by the same rule.
  delivery: (stream: string, d: Parameters<typeof deliveryOrderKey>[0]): Key => ({ pk: keys.pk(stream), sk: `O#${deliveryOrderKey(d)}` }),
  closed: (stream: string, c: { topic: string; partition: number; incarnation: number }): Key => ({
    pk: keys.pk(stream),
    sk: `I#${c.topic}#${pad(c.partition, 6)}#${pad(c.incarnation, 6)}`,
  }),
  /**
   * Sort-key bounds of one partition's range items (`'R'`) or dead letters (`'D'`) at offsets
   * `>= from`, for `sk BETWEEN :lo AND :hi` (offsets are zero-padded, so string order is offset order).
   */
  partitionSpan: (kind: 'R' | 'D', topic: string, partition: number, from: number, incarnation?: number): { lo: string; hi: string } => ({
    lo: `${kind}#${incarnationTopicName(topic, incarnation)}#${pad(partition, 6)}#${pad(from, 16)}`,
    hi: `${kind}#${incarnationTopicName(topic, incarnation)}#${pad(partition, 6)}#${'9'.repeat(16)}`,
  }),
};

/** The key of the item a rule's step names. */
export function itemKey(stream: string, ref: ItemRef): Key {
  return ref.item === 'partition' ? keys.partition(stream, ref.topic, ref.partition) : keys.range(stream, ref);
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
