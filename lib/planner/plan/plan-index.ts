/** What the phases look up by partition, indexed once per run (the plan stays linear in partitions and open ranges). */
import { topicMatcher } from '../../config/topics';
import type { PartitionOffsets } from '../../ports/kafka-metadata';
import type { PartitionState, RangeState } from '../../ports/ledger-state';
import { sameIncarnation } from '../../ports/ledger-rules/incarnation';
import { partitionKey } from '../../ranges';
import { startContext, type StartContext } from '../start/rule';
import type { PlanInput } from './types';

/** What the phases look up by partition (key `partitionKey(topic, partition)`), indexed once per run. */
export type PlanIndex = {
  matches: (topic: string) => boolean;
  offsets: Map<string, PartitionOffsets>;
  /** The partitions of each discovered topic. */
  discovered: Map<string, Set<number>>;
  topicIds: Map<string, string | undefined>;
  known: Map<string, PartitionState>;
  openByKey: Map<string, RangeState[]>;
  /** A bounded stream (replay) reads exactly the partitions and offsets it was created with. */
  bounded: boolean;
  starts: StartContext;
};

/** The index of one run's input. */
export function indexInput(input: PlanInput): PlanIndex {
  const openByKey = new Map<string, RangeState[]>();
  for (const r of input.openRanges) {
    const k = partitionKey(r.topic, r.partition);
    const list = openByKey.get(k);
    if (list) list.push(r);
    else openByKey.set(k, [r]);
  }
  return {
    matches: topicMatcher(input.stream),
    offsets: new Map(input.offsets.map((o) => [partitionKey(o.topic, o.partition), o])),
    discovered: new Map(input.discovered.map((t) => [t.topic, new Set(t.partitions)])),
    topicIds: new Map(input.discovered.map((t) => [t.topic, t.topicId])),
    known: new Map(input.known.map((p) => [partitionKey(p.topic, p.partition), p])),
    openByKey,
    bounded: input.known.some((p) => p.stopOffset !== undefined),
    starts: startContext(input.initial, input.pendingStart, input.known),
  };
}

/** An open range of an active candidate partition, in the partition's current incarnation, with that partition. */
export type OwnedRange = { range: RangeState; owner: PartitionState };

/**
 * The open ranges of the run's active candidate partitions, in their current incarnations: the only
 * ones a run ends, sends again or counts as segments (a closed incarnation's ranges never are).
 */
export function ownedOpenRanges(openRanges: RangeState[], candidates: PartitionState[]): OwnedRange[] {
  const active = new Map(candidates.filter((p) => p.status === 'active').map((p) => [partitionKey(p.topic, p.partition), p]));
  return openRanges.flatMap((range) => {
    const owner = active.get(partitionKey(range.topic, range.partition));
    return owner && sameIncarnation(range, owner) ? [{ range, owner }] : [];
  });
}
