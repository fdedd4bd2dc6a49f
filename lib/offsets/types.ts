/** Shapes shared by the offset math. Offsets are JS numbers holding safe integers. */

/** One partition's position: plan from `from` (next offset to plan) up to `latest` (end offset, exclusive). */
export type PartitionLag = {
  /** `topic/partition`, as built by `partitionKey` in lib/ranges.ts. */
  key: string;
  from: number;
  latest: number;
};

/** A half-open offset range `[from, until)`. */
export type OffsetRange = { from: number; until: number };
