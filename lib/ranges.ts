/** Identity and payload of an offset range, shared by planner, ledger, dispatcher and processor. */

/** The processor's invocation payload: exactly one range `[from, until)` of one partition. */
export type RangePayload = {
  stream: string;
  topic: string;
  partition: number;
  from: number;
  until: number;
  /** The partition incarnation (absent = 0): ranges of a re-created topic are new ranges. */
  incarnation?: number;
  /** Where the ledger keeps the range (`RangeState.shard`): the processor finds it without a look-up. */
  shard?: string;
  /**
   * The topic id the range was planned against: the processor reads it only from that topic (a
   * payload naming another id than the ledger's is checked against the ledger before anything is parked).
   */
  topicId?: string;
  /**
   * Continuous segments: the segment that invoked this one to take over (its lease token) and when it
   * ends (its clock): the range is waited for until that segment gives it back.
   */
  handover?: { from: string; atMs: number };
  /**
   * Continuous segments: the stream's partitions when the planner dispatched the range, which share
   * its rate limit (`partitionRatePerSec`); a successor keeps it.
   */
  streamPartitions?: number;
};

/** Ranges a shared invocation takes at most (a payload of Lambda's 256 KB holds far more). */
export const MAX_RANGES_PER_INVOCATION = 1000;

/** A processor invocation of several ranges of one stream (small ranges sharing an invocation). */
export type RangesPayload = { stream: string; ranges: Array<Omit<RangePayload, 'stream'>> };

/** The ranges of an invocation's payload. */
export function rangesOfPayload(p: RangePayload | RangesPayload): RangePayload[] {
  return 'ranges' in p ? p.ranges.map((r) => ({ stream: p.stream, ...r })) : [p];
}

/**
 * A partition's key, `topic/partition`, wherever partitions are keyed (maps, sets, the DynamoDB
 * ledger's group entry names): Kafka topic names cannot contain '/', so this is unambiguous. The
 * ledger stores names hashed from it (`entryName`), so its format must not change.
 */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}

/** A range's identity, `topic/partition/incarnation/from` (incarnation absent = 0): one range of one partition incarnation. */
export function rangeIdentity(r: { topic: string; partition: number; incarnation?: number; from: number }): string {
  return `${partitionKey(r.topic, r.partition)}/${r.incarnation ?? 0}/${r.from}`;
}

/**
 * The `until` of a continuous stream's segment range: open-ended. Its resident processor reads
 * records as they arrive and commits each small batch as progress; the range is never read to its
 * end, only handed over (docs/architecture.md, "Continuous mode").
 */
export const OPEN_UNTIL = Number.MAX_SAFE_INTEGER;

/** Whether the range is a continuous stream's open segment range (`until` is OPEN_UNTIL). */
export function isOpenRange(r: { until: number }): boolean {
  return r.until === OPEN_UNTIL;
}

/**
 * How far a partition's log must reach for its cursor to be sound: its planning cursor, or, while an
 * open segment range runs (the cursor is OPEN_UNTIL), its committed offset, which that range's
 * commits move. A log ending below it was truncated or re-created.
 */
export function cursorFloor(p: { nextFrom: number; committed: number }): number {
  return p.nextFrom === OPEN_UNTIL ? p.committed : p.nextFrom;
}
