/**
 * The outbox rules both ledgers execute: which pending deliveries a dead letter brings, in what
 * order they are read, and which of them are due.
 */
import { DELIVERY_GRACE_MS } from '../ledger';
import { DESTINATION_KINDS, type DeadLetter, type DeadLetterRef, type PendingDelivery } from '../ledger-state';
import { incarnationTopicName, ofIncarnation } from './incarnation';

/** The pending deliveries written with a dead letter: one per destination it names, due after the grace period. */
export function pendingDeliveriesOf(d: DeadLetter): PendingDelivery[] {
  return DESTINATION_KINDS.filter((kind) => d.deliveries?.includes(kind)).map((destination) => ({
    stream: d.stream,
    topic: d.topic,
    partition: d.partition,
    offset: d.offset,
    ...(d.incarnation ? { incarnation: d.incarnation } : {}),
    destination,
    attempts: 0,
    nextAttemptAtMs: d.createdAtMs + DELIVERY_GRACE_MS,
    createdAtMs: d.createdAtMs,
    ...(d.expiresAtMs !== undefined ? { expiresAtMs: d.expiresAtMs } : {}),
  }));
}

/** Whether two references name the same dead letter (incarnation absent = 0). */
export function sameDeadLetter(a: DeadLetterRef, b: DeadLetterRef): boolean {
  return a.offset === b.offset && ofIncarnation(a, b);
}

/**
 * Where a pending delivery sorts (the DynamoDB adapter's sort key order, which the memory ledger
 * keeps too): topic (with its incarnation), partition, offset, then destination by name.
 */
export function deliveryOrderKey(p: Pick<PendingDelivery, 'topic' | 'partition' | 'offset' | 'incarnation' | 'destination'>): string {
  const topic = incarnationTopicName(p.topic, p.incarnation);
  return `${topic}#${String(p.partition).padStart(6, '0')}#${String(p.offset).padStart(16, '0')}#${p.destination}`;
}
