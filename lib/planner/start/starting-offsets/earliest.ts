/** `startingOffsets: "earliest"`: every record the log still holds. Also where a partition added to a known topic starts. */
import type { StartStrategy } from '../strategy';

/** Starts at the partition's earliest offset; needs no look-up. */
export const startingEarliest: StartStrategy<'startingOffsets.earliest', 'earliest'> = {
  kind: 'startingOffsets.earliest',
  lookups: () => [],
  start: (_spec, { offsets }) => ({ offset: offsets.earliest }),
  wholeTopic: false,
};
