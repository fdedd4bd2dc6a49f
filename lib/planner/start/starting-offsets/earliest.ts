/** `startingOffsets: "earliest"`: every record the log still holds. Also where a partition added to a known topic starts. */
import { WILL_START_AT_STARTING_OFFSETS } from '../../messages';
import type { StartStrategy } from '../strategy';

/** Starts at the partition's earliest offset; needs no look-up. */
export const startingEarliest: StartStrategy<'startingOffsets.earliest', 'earliest'> = {
  kind: 'startingOffsets.earliest',
  lookups: () => [],
  start: (_spec, { offsets }) => ({ offset: offsets.earliest }),
  // A partition added to a known topic starts here too, at no setting's value: it is told the position.
  whereItWillStart: (_spec, rule) => (rule === 'newPartition' ? 'it will start at earliest' : WILL_START_AT_STARTING_OFFSETS),
  wholeTopic: false,
};
