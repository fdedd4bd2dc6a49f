/**
 * The start look-ups of one run (I/O): for the new partitions whose offsets were read, what their
 * start positions ask for (strategy.ts), read from Kafka. Which variant asks for what is the
 * strategies' to say; this module only groups the look-ups into as few requests as it can.
 */
import type { StreamConfig } from '../../config/schema';
import { KafkaError } from '../../errors';
import type { CommittedOffset, KafkaMetadata, PartitionOffsets, TopicPartitions, UnavailablePartition } from '../../ports/kafka-metadata';
import type { PartitionState } from '../../ports/ledger-state';
import { partitionKey } from '../../ranges';
import { groupOffsetsUnreadableMessage, groupOffsetsWaitingWarning } from '../messages';
import { startRule, type StartContext, type StartRule } from './rule';
import { startLookups, startPosition } from './strategies';
import type { GroupOffsetRead, StartLookup, StartReads } from './strategy';

/** What the run read for the new partitions' starts, by partition key; `unavailable`: those a look-up could not serve. */
export type StartLookupsRead = {
  reads: Map<string, StartReads>;
  unavailable: UnavailablePartition[];
  warnings: string[];
};

/**
 * Reads what the start positions of the run's new partitions ask for: their offsets by timestamp
 * and the committed offsets of the groups they start from, side by side.
 */
export async function readStartLookups(
  kafka: KafkaMetadata,
  stream: StreamConfig,
  ctx: StartContext,
  discovered: TopicPartitions[],
  offsets: PartitionOffsets[],
  known: PartitionState[],
): Promise<StartLookupsRead> {
  const fresh = newPartitions(stream, ctx, available(discovered, offsets), known);
  const each = await Promise.all([timestampStarts(kafka, stream, fresh), groupStarts(kafka, stream, fresh, offsets)]);
  return {
    reads: merged(each.map((a) => a.reads)),
    unavailable: each.flatMap((a) => a.unavailable),
    warnings: each.flatMap((a) => a.warnings),
  };
}

/** Each partition's answers of every look-up, in one `StartReads` (a strategy may ask for more than one). */
function merged(each: Array<Map<string, StartReads>>): Map<string, StartReads> {
  const reads = new Map<string, StartReads>();
  for (const answers of each) for (const [k, read] of answers) reads.set(k, { ...reads.get(k), ...read });
  return reads;
}

/** The discovered partitions whose offsets were read this run (the only ones a timestamp look-up can serve). */
function available(discovered: TopicPartitions[], offsets: PartitionOffsets[]): TopicPartitions[] {
  const read = new Set(offsets.map((o) => partitionKey(o.topic, o.partition)));
  return discovered
    .map((t) => ({ ...t, partitions: t.partitions.filter((p) => read.has(partitionKey(t.topic, p))) }))
    .filter((t) => t.partitions.length);
}

/** A partition the ledger does not know yet, whose offsets were read this run, with the rule that places it and its look-ups. */
type NewPartition = { topic: string; partition: number; rule: StartRule; lookups: StartLookup[] };

function newPartitions(stream: StreamConfig, ctx: StartContext, readable: TopicPartitions[], known: PartitionState[]): NewPartition[] {
  const knownKeys = new Set(known.map((p) => partitionKey(p.topic, p.partition)));
  return readable.flatMap((t) =>
    t.partitions
      .filter((p) => !knownKeys.has(partitionKey(t.topic, p)))
      .map((partition) => {
        const rule = startRule(ctx, t, partition);
        return { topic: t.topic, partition, rule, lookups: startLookups(startPosition(stream, rule)) };
      }),
  );
}

/** Partitions by topic, as the metadata port takes them. */
function byTopic(parts: Array<{ topic: string; partition: number }>): TopicPartitions[] {
  const topics = new Map<string, number[]>();
  for (const { topic, partition } of parts) topics.set(topic, [...(topics.get(topic) ?? []), partition]);
  return [...topics].map(([topic, partitions]) => ({ topic, partitions }));
}

/** The new partitions asking for each look-up `keyOf` names (undefined: not one of its kind), by its key (the timestamp, the group). */
function asking<Key>(fresh: NewPartition[], keyOf: (l: StartLookup) => Key | undefined): Map<Key, NewPartition[]> {
  const by = new Map<Key, NewPartition[]>();
  for (const p of fresh) {
    for (const l of p.lookups) {
      const key = keyOf(l);
      if (key !== undefined) by.set(key, [...(by.get(key) ?? []), p]);
    }
  }
  return by;
}

/**
 * Start offsets by timestamp, one look-up per timestamp asked for. Partial: one the look-up cannot
 * serve is not registered this run and waits for a later one, so a dead leader costs only its own
 * partitions here too.
 */
async function timestampStarts(kafka: KafkaMetadata, stream: StreamConfig, fresh: NewPartition[]): Promise<StartLookupsRead> {
  const atTimestamp = asking(fresh, (l) => (l.kind === 'timestamp' ? l.timestampMs : undefined));
  const answers = await Promise.all(
    [...atTimestamp].map(([ts, parts]) => kafka.fetchAvailableOffsetsForTimestamp(byTopic(parts), ts, stream.isolationLevel)),
  );
  return {
    reads: new Map(answers.flatMap((a) => a.offsets.map((o) => [partitionKey(o.topic, o.partition), { byTimestamp: o.offset }] as const))),
    unavailable: answers.flatMap((a) => a.unavailable),
    warnings: [],
  };
}

type GroupStarts = { reads: Map<string, GroupOffsetRead>; unavailable: UnavailablePartition[]; warnings: string[] };

/** The committed offsets of every group asked for (a stream starts from one group at most: `startingOffsets.fromGroup`). */
async function groupStarts(
  kafka: KafkaMetadata,
  stream: StreamConfig,
  fresh: NewPartition[],
  offsets: PartitionOffsets[],
): Promise<StartLookupsRead> {
  const groups = asking(fresh, (l) => (l.kind === 'group' ? l.group : undefined));
  const each = await Promise.all([...groups].map(([group, wanted]) => groupOffsets(kafka, stream, group, wanted, offsets)));
  return {
    reads: new Map(each.flatMap((g) => [...g.reads].map(([k, group]) => [k, { group }] as const))),
    unavailable: each.flatMap((g) => g.unavailable),
    warnings: each.flatMap((g) => g.warnings),
  };
}

/**
 * The committed offsets of `group` for the new partitions that start from it (read_committed: with
 * the high watermark of those past the last stable offset, to tell an open transaction from an
 * offset out of range). A failed read fails the run, before anything is registered, when a partition
 * present at the stream's start needs it; when only partitions added later do, they wait (reported)
 * and the rest of the stream is planned.
 */
async function groupOffsets(
  kafka: KafkaMetadata,
  stream: StreamConfig,
  group: string,
  wanted: NewPartition[],
  offsets: PartitionOffsets[],
): Promise<GroupStarts> {
  let committed: CommittedOffset[];
  try {
    committed = await kafka.committedOffsets(group, byTopic(wanted));
  } catch (err) {
    const message = groupOffsetsUnreadableMessage(group, err);
    if (wanted.some((p) => p.rule === 'startingOffsets')) {
      throw new KafkaError(`${message}; nothing was registered`, {
        cause: err,
        type: (err as KafkaError)?.type,
        retriable: (err as KafkaError)?.retriable,
      });
    }
    const unavailable = wanted.map(({ topic, partition }) => ({ topic, partition, code: 'ERROR' as const, reason: message }));
    return { reads: new Map(), unavailable, warnings: [groupOffsetsWaitingWarning(group, wanted.length, message)] };
  }
  const reads = new Map<string, GroupOffsetRead>(wanted.map((p) => [partitionKey(p.topic, p.partition), {}]));
  for (const c of committed) {
    const read = reads.get(partitionKey(c.topic, c.partition));
    if (read) read.committed = c.offset;
  }
  const ends = new Map(offsets.map((o) => [partitionKey(o.topic, o.partition), o.latest]));
  const past = wanted.filter((p) => {
    const k = partitionKey(p.topic, p.partition);
    return (reads.get(k)?.committed ?? -1) > (ends.get(k) ?? Infinity);
  });
  if (!past.length || stream.isolationLevel === 'read_uncommitted') return { reads, unavailable: [], warnings: [] };
  const high = await kafka.fetchAvailableOffsets(byTopic(past), 'read_uncommitted');
  for (const o of high.offsets) reads.get(partitionKey(o.topic, o.partition))!.highWatermark = o.latest;
  return { reads, unavailable: high.unavailable, warnings: [] };
}
