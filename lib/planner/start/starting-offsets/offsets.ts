/** `startingOffsets: { offsets: { topic: { partition: offset } } }`: explicit offsets (Spark's JSON of startingOffsets). */
import type { StartingOffsets } from '../../../config/schema';
import { WILL_START_AT_STARTING_OFFSETS } from '../../messages';
import type { StartStrategy } from '../strategy';

type Spec = Extract<StartingOffsets, { offsets: unknown }>;

/** Starts at the offset the map names; needs no look-up. */
export const startingOffsetsMap: StartStrategy<'startingOffsets.offsets', Spec> = {
  kind: 'startingOffsets.offsets',
  lookups: () => [],
  start: ({ offsets: named }, { topic, partition, offsets }) => {
    const explicit = named[topic]?.[String(partition)];
    // A partition the map does not name starts at earliest; an offset past the end starts at the end.
    return { offset: explicit === undefined ? offsets.earliest : Math.min(explicit, offsets.latest) };
  },
  whereItWillStart: () => WILL_START_AT_STARTING_OFFSETS,
  wholeTopic: false,
};
