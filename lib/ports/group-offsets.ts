/**
 * Port: commits a stream's finished offsets to a Kafka consumer group, for standard lag tools. The
 * group has no members (nothing in the system joins it); the ledger stays the source of truth.
 */
export type GroupOffsetCommitter = {
  /** Sets the group's committed offset of one partition (the next offset to read). */
  commit(group: string, at: { topic: string; partition: number; offset: number }): Promise<void>;
  close(): Promise<void>;
};
