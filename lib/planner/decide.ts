/**
 * The planner's decisions for one stream and one run, as a pure function of what the run read
 * (ledger state, Kafka metadata and offsets) and `nowMs`. run.ts does the I/O around it.
 */
import { boundedFinished } from './plan/finished';
import { checkCandidates } from './plan/check';
import { clampAndSplit } from './plan/clamp-split';
import { classifyKnown } from './plan/classify';
import { discoverNew } from './plan/discover';
import { endSegments } from './plan/end-segments';
import { indexInput, ownedOpenRanges } from './plan/plan-index';
import { redispatchOpen } from './plan/redispatch';
import { sortedReports } from './plan/report';
import { segmentsMissing } from './plan/segments';
import { grantSlots } from './plan/slots';
import type { Draft, PlanDecision, PlanInput } from './plan/types';
import { withArchives } from './archive';

export type { PartitionReport, PlanDecision, PlanInput, RedispatchReason } from './plan/types';

/**
 * The pure planning step: registrations, retirements, data loss, clamped ranges and re-dispatches.
 * Its phases (docs/architecture.md, "Planning, one run"): discover -> classify known -> check
 * candidates -> grant slots -> clamp and split -> end segments (a stream back in micro-batches) ->
 * redispatch and park. Linear in the partitions and open ranges: every look-up by partition goes
 * through the index built once.
 */
export function decidePlan(input: PlanInput): PlanDecision {
  const ix = indexInput(input);
  const draft: Draft = { writes: [], reports: new Map(), startNotes: new Map() };
  const { registrations, pendingStart } = discoverNew(input, ix, draft);
  const known = classifyKnown(input, ix, draft);
  // New partitions are candidates too, ahead of the known ones.
  const candidates = [...registrations, ...known.candidates];
  const { eligible, checkCommitted } = checkCandidates(input, ix, candidates, draft);
  const slots = grantSlots(input, ix, candidates, eligible, draft);
  const { newRanges, recordsPlanned } = clampAndSplit(input, ix, slots, draft);
  const owned = ownedOpenRanges(input.openRanges, candidates);
  const ended = endSegments(input, owned);
  draft.writes.push(...ended.writes);
  const { redispatch, parks } = redispatchOpen(input, owned, ended.ended);
  const partitions = sortedReports(draft, registrations);
  const missing = segmentsMissing(input, owned, partitions);
  return {
    registrations,
    pendingStart,
    writes: withArchives(draft.writes, input.finishedRanges ?? []),
    newRanges,
    redispatch,
    parks,
    checkCommitted,
    partitions,
    recordsPlanned,
    finished: ix.bounded && boundedFinished(input.known, draft.writes),
    recreated: known.recreated,
    noTopicIds: input.discovered.length > 0 && input.discovered.every((t) => t.topicId === undefined),
    ...(missing !== undefined ? { segmentsMissing: missing } : {}),
  };
}
