/** `startingOffsets: { timestampMs }`: the first record written at or after a point in time. */
import type { StartingOffsets } from '../../../config/schema';
import { WILL_START_AT_STARTING_OFFSETS } from '../../messages';
import type { StartStrategy } from '../strategy';

type Spec = Extract<StartingOffsets, { timestampMs: number }>;

/** Starts at the partition's offset for the timestamp; one the look-up could not serve waits for a later run. */
export const startingTimestamp: StartStrategy<'startingOffsets.timestampMs', Spec> = {
  kind: 'startingOffsets.timestampMs',
  lookups: ({ timestampMs }) => [{ kind: 'timestamp', timestampMs }],
  start: (_spec, { byTimestamp }) =>
    byTimestamp === undefined ? { wait: 'no start offset by timestamp this run' } : { offset: byTimestamp },
  whereItWillStart: () => WILL_START_AT_STARTING_OFFSETS,
  wholeTopic: false,
};
