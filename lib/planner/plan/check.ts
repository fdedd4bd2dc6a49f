/**
 * Phase "check" (trigger): offset anomalies, in-flight ranges and the trigger rule decide which
 * active partitions are due a range now.
 */
import { shouldTrigger, timeBudget, type PartitionClampInput } from '../../offsets';
import type { PlanWrite } from '../../ports/ledger';
import type { PartitionState } from '../../ports/ledger-state';
import { sameIncarnation } from '../../ports/ledger-rules/incarnation';
import { isContinuous } from '../../config/continuous';
import { isOpenRange } from '../../ranges';
import { partitionKey } from '../../ranges';
import { backpressure } from './backpressure';
import { offsetAnomaly } from './data-loss';
import type { PlanIndex } from './plan-index';
import { report } from './report';
import type { Draft, Eligible, PartitionReport, PlanInput } from './types';

/** Check candidates: offset anomalies, in-flight ranges and the trigger rule decide which partitions get a range. */
export function checkCandidates(
  input: PlanInput,
  ix: PlanIndex,
  candidates: PartitionState[],
  draft: Draft,
): { eligible: Eligible[]; checkCommitted: PartitionState[] } {
  const eligible: Eligible[] = [];
  const checkCommitted: PartitionState[] = [];
  for (const p of candidates) {
    const k = partitionKey(p.topic, p.partition);
    const c = checkCandidate(input, ix, p, k);
    draft.writes.push(...c.writes);
    if (c.report) draft.reports.set(k, c.report);
    if (c.checkCommitted) checkCommitted.push(c.checkCommitted);
    if (c.eligible) eligible.push(c.eligible);
  }
  return { eligible, checkCommitted };
}

type CandidateCheck = { writes: PlanWrite[]; report?: PartitionReport; checkCommitted?: PartitionState; eligible?: Eligible };

/** One active partition: what its offsets say about it, and whether it is due a range now. */
function checkCandidate(input: PlanInput, ix: PlanIndex, p0: PartitionState, k: string): CandidateCheck {
  const { stream, nowMs } = input;
  const o = ix.offsets.get(k);
  if (!o) return { writes: [], report: report(p0, undefined, 'no-offsets', 'no offsets for this partition in this run') };
  const stop = p0.stopOffset;
  if (stop !== undefined && p0.committed >= stop) return { writes: [], report: report(p0, o, 'finished') };
  const anomaly = offsetAnomaly(stream, p0, o, nowMs);
  if (anomaly && anomaly.skipTo === undefined) return { writes: [anomaly.write], report: anomaly.report };
  const p = anomaly?.skipTo !== undefined ? { ...p0, committed: anomaly.skipTo, nextFrom: anomaly.skipTo } : p0;
  // The data-loss report stands unless a later check says more.
  const base: CandidateCheck = { writes: anomaly ? [anomaly.write] : [], report: anomaly?.report };
  if (p.committed < p.nextFrom) {
    const open = ix.openByKey.get(k) ?? [];
    // An open segment range's commits move the committed offset themselves: nothing to repair.
    const repairs = !open.some((r) => sameIncarnation(r, p) && (r.from === p.committed || isOpenRange(r)));
    if (repairs) base.checkCommitted = p;
    if (!stream.split.orderInsensitive) return { ...base, report: report(p, o, 'in-flight') };
  }
  // A bounded partition plans nothing at or past its stop offset (Spark's endingOffsets).
  const end = stop === undefined ? o.latest : Math.min(o.latest, stop);
  const lag = end - p.nextFrom;
  // A continuous partition gets its open segment range whether or not records wait: they are read as they arrive.
  if (isContinuous(stream) && stop === undefined) return { ...base, eligible: { p, input: { key: k, from: p.nextFrom, latest: end } } };
  if (lag <= 0) return { ...base, report: base.report ?? report(p, o, ix.known.has(k) ? 'idle' : 'registered') };
  const trig = shouldTrigger({
    lag,
    minOffsetsPerTrigger: stream.minOffsetsPerTrigger,
    maxTriggerDelayMs: stream.maxTriggerDelayMs,
    lastTriggerMs: p.lastPlannedAtMs,
    firstSeenMs: p.firstSeenAtMs,
    nowMs,
  });
  if (!trig.trigger) {
    return { ...base, report: report(p, o, 'waiting-for-min-offsets', `lag ${lag} < minOffsetsPerTrigger ${stream.minOffsetsPerTrigger}`) };
  }
  const bp = backpressure(stream, p, nowMs);
  const clampInput: PartitionClampInput = {
    key: k,
    from: p.nextFrom,
    latest: end,
    pidRatePerSec: bp?.ratePerSec,
    timeBudget: timeBudget(p.observedRecordsPerSec, stream.processor.timeoutMs, stream.processor.safetyFactor),
  };
  return {
    ...base,
    eligible: { p, input: clampInput, pidUpdate: bp ? { pid: bp.pid, backpressureRatePerSec: bp.ratePerSec } : undefined },
  };
}
