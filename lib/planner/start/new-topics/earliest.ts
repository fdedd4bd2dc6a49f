/** `newTopics: "earliest"`: a topic that appeared after the stream started is read from its first record. */
import { WILL_START_AT_NEW_TOPICS } from '../../messages';
import type { StartStrategy } from '../strategy';

/**
 * Starts at the partition's earliest offset; needs no look-up. Where a partition added to a known
 * topic starts too, so a new topic's partitions may register over several runs.
 */
export const newTopicEarliest: StartStrategy<'newTopics.earliest', 'earliest'> = {
  kind: 'newTopics.earliest',
  lookups: () => [],
  start: (_spec, { offsets }) => ({ offset: offsets.earliest }),
  whereItWillStart: () => WILL_START_AT_NEW_TOPICS,
  wholeTopic: false,
};
