/** `newTopics: "latest"`: a topic that appeared after the stream started is read from when the planner first saw it. */
import { WILL_START_AT_NEW_TOPICS } from '../../messages';
import type { StartStrategy } from '../strategy';

/** Starts at the partition's end when first read; needs no look-up. */
export const newTopicLatest: StartStrategy<'newTopics.latest', 'latest'> = {
  kind: 'newTopics.latest',
  lookups: () => [],
  start: (_spec, { offsets }) => ({ offset: offsets.latest, note: 'a topic that appeared after the stream started: newTopics latest' }),
  whereItWillStart: () => WILL_START_AT_NEW_TOPICS,
  wholeTopic: true,
};
