/**
 * Partitions whose offsets an operation could not read (a dead or moving leader, see
 * `UnavailablePartition`), as the operations commands name them: one line, partitions grouped by
 * reason, since a dead broker gives every partition it leads the same reason.
 */
import type { TopicPartitions, UnavailablePartition } from '../ports/kafka-metadata';
import { partitionKey } from '../ranges';

/** Partitions named per reason; the rest are counted (a topic may have hundreds). */
const NAMED = 10;

/** `orders/1, orders/4: LEADER_UNREACHABLE: leader broker 2 unreachable: ...; orders/7: NO_LEADER: ...` */
export function unavailableText(list: UnavailablePartition[]): string {
  const byReason = new Map<string, string[]>();
  for (const u of list) {
    const why = `${u.code}: ${u.reason}`;
    byReason.set(why, [...(byReason.get(why) ?? []), partitionKey(u.topic, u.partition)]);
  }
  return [...byReason]
    .map(([why, parts]) => {
      const more = parts.length > NAMED ? ` and ${parts.length - NAMED} more` : '';
      // Reasons quote client messages; a line break would split the one-line report.
      return `${parts.slice(0, NAMED).join(', ')}${more}: ${why.replace(/\s+/g, ' ')}`;
    })
    .join('; ');
}

/** `n partition(s)` of a list. */
export function partitionCount(n: number): string {
  return `${n} partition${n === 1 ? '' : 's'}`;
}

/** Topic partitions grouped by topic, in first-seen order (what the look-ups take). */
export function groupByTopic(parts: Array<{ topic: string; partition: number }>): TopicPartitions[] {
  const byTopic = new Map<string, number[]>();
  for (const p of parts) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
  return [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
}
