/**
 * `startingOffsets: { fromGroup, fallback }`: the committed offsets of a consumer group (a migration
 * from a consumer-group application). Also where a partition added to a known topic starts when the
 * stream started from a group, with fallback earliest.
 */
import type { StartingOffsets, StreamConfig } from '../../../config/schema';
import type { PartitionOffsets } from '../../../ports/kafka-metadata';
import { WILL_START_AT_STARTING_OFFSETS } from '../../messages';
import type { GroupOffsetRead, Start, StartStrategy } from '../strategy';

type Spec = Extract<StartingOffsets, { fromGroup: string }>;

/** Starts at the group's committed offset, or the fallback where it has no usable one; needs the group read. */
export const startingFromGroup: StartStrategy<'startingOffsets.fromGroup', Spec> = {
  kind: 'startingOffsets.fromGroup',
  lookups: ({ fromGroup }) => [{ kind: 'group', group: fromGroup }],
  start: ({ fromGroup, fallback }, { group, offsets, isolationLevel }) => groupStart(fromGroup, group, offsets, fallback, isolationLevel),
  // A partition added to a known topic starts here too, with fallback earliest whatever the setting's: it is told the position.
  whereItWillStart: ({ fromGroup, fallback }, rule) =>
    rule === 'newPartition'
      ? `it will start at the committed offset of group ${JSON.stringify(fromGroup)}, else ${fallback}`
      : WILL_START_AT_STARTING_OFFSETS,
  wholeTopic: false,
};

/**
 * Where a partition starts from consumer group `group` (`read`: what the run read of it; undefined
 * when it was not read this run), with `fallback` where the group has no usable offset, as Kafka's
 * consumer applies `auto.offset.reset` and Flink's `committedOffsets(resetStrategy)`:
 *
 * - no committed offset: the fallback (earliest, or the end);
 * - within the log: the committed offset;
 * - below the log start (retention deleted what the group had not read): the committed offset, so the
 *   planner's data-loss check applies to the span at once (failOnDataLoss fails the partition, or the
 *   exact lost span is recorded and reading continues at the log start), never a silent skip;
 * - past the high watermark (a log truncated or re-created since the commit): out of range, the fallback;
 * - past the last stable offset but not the high watermark (read_committed, a transaction open that
 *   the group's consumer read uncommitted): the partition waits until the offset is stable, then starts
 *   exactly there.
 */
export function groupStart(
  group: string,
  read: GroupOffsetRead | undefined,
  o: PartitionOffsets,
  fallback: 'earliest' | 'latest',
  isolationLevel: StreamConfig['isolationLevel'],
): Start {
  const name = JSON.stringify(group);
  if (!read) return { wait: `committed offsets of group ${name} not read this run` };
  const fallbackOffset = fallback === 'earliest' ? o.earliest : o.latest;
  const { committed } = read;
  if (committed === undefined) {
    return { offset: fallbackOffset, note: `group ${name} has no committed offset: fallback ${fallback} (${fallbackOffset})` };
  }
  if (committed < o.earliest) {
    return { offset: committed, note: `committed offset ${committed} of group ${name} is below the log start ${o.earliest}` };
  }
  if (committed <= o.latest) return { offset: committed, note: `committed offset ${committed} of group ${name}` };
  const highWatermark = isolationLevel === 'read_uncommitted' ? o.latest : read.highWatermark;
  if (highWatermark === undefined) return { wait: `committed offset ${committed} of group ${name} is past the end ${o.latest}` };
  const past = `committed offset ${committed} of group ${name} is past`;
  if (committed <= highWatermark) {
    return { wait: `${past} the last stable offset ${o.latest} (a transaction is open): starts there once stable` };
  }
  return { offset: fallbackOffset, note: `${past} the end ${highWatermark} (out of range): fallback ${fallback} (${fallbackOffset})` };
}
