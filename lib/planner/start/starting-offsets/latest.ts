/** `startingOffsets: "latest"`: only records written after the partition's offsets are first read. */
import { WILL_START_AT_STARTING_OFFSETS } from '../../messages';
import type { StartStrategy } from '../strategy';

/**
 * Starts at the end when the partition's offsets are first read: the stream's first run, or, for a
 * partition that run could not read (pending its start), the run that first can.
 */
export const startingLatest: StartStrategy<'startingOffsets.latest', 'latest'> = {
  kind: 'startingOffsets.latest',
  lookups: () => [],
  start: (_spec, { offsets }) => ({ offset: offsets.latest }),
  whereItWillStart: () => WILL_START_AT_STARTING_OFFSETS,
  wholeTopic: false,
};
