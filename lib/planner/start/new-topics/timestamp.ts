/** `newTopics: { timestampMs }`: a topic that appeared after the stream started is read from a point in time. */
import type { NewTopicsStart } from '../../../config/schema';
import { WILL_START_AT_NEW_TOPICS } from '../../messages';
import type { StartStrategy } from '../strategy';

type Spec = Extract<NewTopicsStart, { timestampMs: number }>;

/** Starts at the partition's offset for the timestamp; one the look-up could not serve waits for a later run. */
export const newTopicTimestamp: StartStrategy<'newTopics.timestampMs', Spec> = {
  kind: 'newTopics.timestampMs',
  lookups: ({ timestampMs }) => [{ kind: 'timestamp', timestampMs }],
  start: ({ timestampMs }, { byTimestamp }) =>
    byTimestamp === undefined
      ? { wait: 'no start offset by timestamp this run' }
      : { offset: byTimestamp, note: `a topic that appeared after the stream started: newTopics timestampMs ${timestampMs}` },
  whereItWillStart: () => WILL_START_AT_NEW_TOPICS,
  wholeTopic: true,
};
