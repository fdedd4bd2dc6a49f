/**
 * The start positions, one strategy per variant of the stream's `startingOffsets` and `newTopics`,
 * in one table keyed by kind (`<setting>.<variant>`); and which position places a new partition under
 * each start rule (rule.ts).
 */
import type { NewTopicsStart, StartingOffsets, StreamConfig } from '../../config/schema';
import { newTopicEarliest } from './new-topics/earliest';
import { newTopicLatest } from './new-topics/latest';
import { newTopicTimestamp } from './new-topics/timestamp';
import type { StartRule } from './rule';
import { startingEarliest } from './starting-offsets/earliest';
import { startingFromGroup } from './starting-offsets/from-group';
import { startingLatest } from './starting-offsets/latest';
import { startingOffsetsMap } from './starting-offsets/offsets';
import { startingTimestamp } from './starting-offsets/timestamp';
import type { Start, StartInputs, StartLookup, StartStrategy } from './strategy';

/**
 * A config value's variant name: the string itself, or the key that tells an object variant apart
 * (`fallback` only goes with `fromGroup`). Derived from the schema's types, so a variant added there
 * is a kind the table below must have.
 */
type VariantOf<S> = S extends string ? S : S extends { fromGroup: string } ? 'fromGroup' : keyof S & string;

/** A start position's kind: the setting and its variant, as a stream's config names them. */
export type StartKind = `startingOffsets.${VariantOf<StartingOffsets>}` | `newTopics.${VariantOf<NewTopicsStart>}`;

type VariantSpec<S, V extends string> = Extract<S, V | Record<V, unknown>>;

/** The config value of a kind's variant. */
export type SpecOf<K extends StartKind> = K extends `startingOffsets.${infer V}`
  ? VariantSpec<StartingOffsets, V>
  : K extends `newTopics.${infer V}`
    ? VariantSpec<NewTopicsStart, V>
    : never;

/** One new partition's start position: the kind of its strategy and its variant's value. */
export type StartPosition = { [K in StartKind]: { kind: K; spec: SpecOf<K> } }[StartKind];

/** Every start position's strategy by kind: a variant without one does not type-check. */
export const START_STRATEGIES = {
  'startingOffsets.earliest': startingEarliest,
  'startingOffsets.latest': startingLatest,
  'startingOffsets.timestampMs': startingTimestamp,
  'startingOffsets.offsets': startingOffsetsMap,
  'startingOffsets.fromGroup': startingFromGroup,
  'newTopics.earliest': newTopicEarliest,
  'newTopics.latest': newTopicLatest,
  'newTopics.timestampMs': newTopicTimestamp,
} as const satisfies { [K in StartKind]: StartStrategy<K, SpecOf<K>> };

/**
 * A position's strategy, called with the position's own spec: the table pairs each kind with its
 * spec's type, and a strategy's methods take their parameters bivariantly, so no cast is needed.
 */
function strategyOf(position: StartPosition): StartStrategy<StartKind, StartPosition['spec']> {
  return START_STRATEGIES[position.kind];
}

/** What must be read for a partition starting at `position` (beyond its earliest and latest offsets). */
export function startLookups(position: StartPosition): StartLookup[] {
  return strategyOf(position).lookups(position.spec);
}

/** Where a partition starting at `position` starts, from what the run read for it, or why it waits. */
export function startAt(position: StartPosition, inputs: StartInputs): Start {
  return strategyOf(position).start(position.spec, inputs);
}

/** What a partition that `rule` places at `position`, not registered this run, is told about where it will start. */
export function whereItWillStart(position: StartPosition, rule: StartRule): string {
  return strategyOf(position).whereItWillStart(position.spec, rule);
}

/** Whether a new topic's partitions starting at `position` register all in one run (`StartStrategy.wholeTopic`). */
export function startsWholeTopic(position: StartPosition): boolean {
  return strategyOf(position).wholeTopic;
}

/** The start position of a new partition that `rule` places. */
export function startPosition(stream: Pick<StreamConfig, 'startingOffsets' | 'newTopics'>, rule: StartRule): StartPosition {
  if (rule === 'newTopics') return newTopicsPosition(stream.newTopics);
  const so = stream.startingOffsets;
  if (rule === 'startingOffsets') return startingOffsetsPosition(so);
  // A partition added to a known topic later starts at earliest (FLIP-288), or from the group the
  // stream started from, falling back to earliest as every later partition starts.
  if (typeof so === 'object' && 'fromGroup' in so) return { kind: 'startingOffsets.fromGroup', spec: { ...so, fallback: 'earliest' } };
  return { kind: 'startingOffsets.earliest', spec: 'earliest' };
}

function startingOffsetsPosition(so: StartingOffsets): StartPosition {
  if (so === 'earliest') return { kind: 'startingOffsets.earliest', spec: so };
  if (so === 'latest') return { kind: 'startingOffsets.latest', spec: so };
  if ('timestampMs' in so) return { kind: 'startingOffsets.timestampMs', spec: so };
  if ('offsets' in so) return { kind: 'startingOffsets.offsets', spec: so };
  if ('fromGroup' in so) return { kind: 'startingOffsets.fromGroup', spec: so };
  return unknownVariant(so);
}

function newTopicsPosition(nt: NewTopicsStart): StartPosition {
  if (nt === 'earliest') return { kind: 'newTopics.earliest', spec: nt };
  if (nt === 'latest') return { kind: 'newTopics.latest', spec: nt };
  if ('timestampMs' in nt) return { kind: 'newTopics.timestampMs', spec: nt };
  return unknownVariant(nt);
}

/** A variant the schema gained without a position here: `never` until one is added, so it does not type-check. */
function unknownVariant(value: never): never {
  throw new Error(`no start position for ${JSON.stringify(value)}`);
}
