/**
 * Topic names and topic selection, shared by config validation and the planner's discovery so both
 * agree on what a stream subscribes to.
 */

/** Kafka's legal topic name characters and length (kafka.common.internals.Topic). */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

/** Kafka's convention for broker-internal topics (`__consumer_offsets`, `__transaction_state`, ...). */
const INTERNAL_TOPIC_PREFIX = '__';

/** True when `name` is a legal Kafka topic name ('.' and '..' are reserved by Kafka). */
export function isValidTopicName(name: string): boolean {
  return TOPIC_NAME.test(name) && name !== '.' && name !== '..';
}

/**
 * True for broker-internal topics, which a stream never consumes: by the broker's own flag where
 * Metadata gives one (`isInternal`), else by name.
 */
export function isInternalTopic(name: string, isInternal?: boolean): boolean {
  return isInternal === true || name.startsWith(INTERNAL_TOPIC_PREFIX);
}

/** Why `source` is not a usable JS regex, or undefined when it is. */
export function regexSourceError(source: string): string | undefined {
  try {
    new RegExp(source);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/**
 * A topic pattern (the stream's `topicPattern`, or a RegExp a caller passes) as a RegExp matching
 * whole topic names. Wrapping in `^(?:...)$` is sound only for a source that is a valid regex on its
 * own (else `a)|(b` would escape the group), which config validation and RegExp guarantee. A RegExp
 * keeps its flags but g and y, whose lastIndex would make `test` stateful.
 */
export function anchoredTopicPattern(pattern: string | RegExp): RegExp {
  if (typeof pattern === 'string') return new RegExp(`^(?:${pattern})$`);
  return new RegExp(`^(?:${pattern.source})$`, pattern.flags.replace(/[gy]/g, ''));
}

/** The part of a stream config that says which topics it reads. */
export type TopicSubscription = { topics?: readonly string[]; topicPattern?: string };

/** Predicate: does the stream consume `topic`? Explicit list = membership; pattern = whole-name match. */
export function topicMatcher(stream: TopicSubscription): (topic: string) => boolean {
  if (stream.topics !== undefined) {
    const names = new Set(stream.topics);
    return (topic) => !isInternalTopic(topic) && names.has(topic);
  }
  if (stream.topicPattern !== undefined) {
    const pattern = anchoredTopicPattern(stream.topicPattern);
    return (topic) => !isInternalTopic(topic) && pattern.test(topic);
  }
  // Validated configs always have one of the two; an empty subscription matches nothing rather than all.
  return () => false;
}

/** What a stream subscribes to, for messages: `topics a, b` or `topicPattern /orders-.+/`. */
export function describeSubscription(stream: TopicSubscription): string {
  if (stream.topics !== undefined) return `topics ${stream.topics.join(', ') || '(none)'}`;
  if (stream.topicPattern !== undefined) return `topicPattern /${stream.topicPattern}/`;
  return 'no topics';
}

/** The selector `KafkaMetadata.describeTopics` takes for this stream (pattern anchored). */
export function topicSelector(stream: TopicSubscription): { topics: string[] } | { pattern: RegExp } {
  if (stream.topicPattern !== undefined) return { pattern: anchoredTopicPattern(stream.topicPattern) };
  return { topics: [...(stream.topics ?? [])] };
}

/** What of a stream's subscription Kafka does not have: listed topics that do not exist, or a pattern matching none. */
export type UnmatchedSubscription = {
  /** Listed topics Kafka does not have (empty for a pattern). */
  missingTopics: string[];
  /** The value of the planner's `TopicsMissing` metric: missing listed topics, or 1 for a pattern matching none. */
  count: number;
  /** One line for an operator, e.g. `topic payments-x of stream payments does not exist in Kafka`. */
  text: string;
};

/** Compares the subscription with the topics Kafka reported for it; undefined when everything is there. */
export function unmatchedSubscription(
  stream: TopicSubscription & { id: string },
  foundTopics: Iterable<string>,
): UnmatchedSubscription | undefined {
  const found = new Set(foundTopics);
  if (stream.topics !== undefined) {
    const missingTopics = stream.topics.filter((t) => !found.has(t));
    if (!missingTopics.length) return undefined;
    const what = missingTopics.length === 1 ? `topic ${missingTopics[0]}` : `topics ${missingTopics.join(', ')}`;
    return {
      missingTopics,
      count: missingTopics.length,
      text: `${what} of stream ${stream.id} ${missingTopics.length === 1 ? 'does' : 'do'} not exist in Kafka (topics in the stream config)`,
    };
  }
  if (stream.topicPattern !== undefined && found.size === 0) {
    return { missingTopics: [], count: 1, text: `topicPattern /${stream.topicPattern}/ of stream ${stream.id} matches no topic in Kafka` };
  }
  return undefined;
}
