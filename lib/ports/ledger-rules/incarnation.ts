/**
 * Which incarnation of a topic an item belongs to, decided once. A topic deleted and re-created under
 * its name is a new log whose offsets restart at 0: the ledger counts such re-creations per partition
 * (`incarnation`, absent = 0, so items written before re-creations were tracked read as the first),
 * and records the topic id (KIP-516) where the broker gives one. Every comparison of incarnations
 * or topic ids goes through here, so an absent field means the same thing everywhere.
 */

/** An item's partition incarnation: absent = 0 (ledgers written before incarnations keep reading as the first). */
export const incarnationOf = (x: { incarnation?: number }): number => x.incarnation ?? 0;

/** Whether two items belong to the same incarnation of their partition (absent = 0 on either side). */
export function sameIncarnation(a: { incarnation?: number }, b: { incarnation?: number }): boolean {
  return incarnationOf(a) === incarnationOf(b);
}

/**
 * The name an incarnation's items are filed under: the topic for the first, `<topic>~<n:4>` for a
 * re-created one ('~' never occurs in topic names). The ledger's item keys, the outbox's order and
 * the dead letters' S3 keys all use it, so they sort and read alike.
 */
export function incarnationTopicName(topic: string, incarnation: number | undefined): string {
  return incarnation ? `${topic}~${String(incarnation).padStart(4, '0')}` : topic;
}

/** An item of one partition incarnation: its topic, partition and incarnation (absent = 0). */
export type IncarnationRef = { topic: string; partition: number; incarnation?: number };

/** Whether `x` belongs to `p`'s partition and incarnation (its ranges, dead letters, data-loss spans). */
export function ofIncarnation(p: IncarnationRef, x: IncarnationRef): boolean {
  return x.topic === p.topic && x.partition === p.partition && sameIncarnation(x, p);
}

/**
 * Whether a topic id recorded for a partition and the topic's id now name different topics (the
 * topic was re-created in between). Only ids known on both sides can differ: a missing id (a broker
 * without topic ids, a ledger written before ids) says nothing, and callers that must still tell a
 * re-creation apart fall back to the offsets.
 */
export function topicIdChanged(recorded: string | undefined, now: string | undefined): boolean {
  return recorded !== undefined && now !== undefined && recorded !== now;
}
