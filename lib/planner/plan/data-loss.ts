/** Data loss: offsets the cursor cannot continue from (a log that ends below it, or retention past it). */
import type { StreamConfig } from '../../config/schema';
import type { PartitionOffsets } from '../../ports/kafka-metadata';
import type { PlanWrite } from '../../ports/ledger';
import type { PartitionState } from '../../ports/ledger-state';
import { dataLossReason, offsetRegressionReason } from '../messages';
import { report } from './report';
import { cursorFloor } from '../../ranges';
import type { PartitionReport } from './types';

/**
 * Offsets the cursor cannot continue from, for a partition not finished: a log that ends below the
 * cursor fails it; retention past the cursor (nothing in flight) fails it under failOnDataLoss, or
 * records the lost span and moves the cursor to `skipTo`.
 */
export function offsetAnomaly(
  stream: StreamConfig,
  p: PartitionState,
  o: PartitionOffsets,
  nowMs: number,
): { write: PlanWrite; report: PartitionReport; skipTo?: number } | undefined {
  if (o.latest < cursorFloor(p)) {
    const reason = offsetRegressionReason(o.latest, cursorFloor(p));
    return {
      write: { kind: 'fail-partition', topic: p.topic, partition: p.partition, reason, nowMs },
      report: report(p, o, 'failed', reason),
    };
  }
  const stop = p.stopOffset;
  const inFlight = p.committed < p.nextFrom;
  if (!(o.earliest > p.nextFrom && !inFlight && (stop === undefined || p.nextFrom < stop))) return undefined;
  // A bounded partition only lost what lies below its stop offset.
  const lostUntil = stop === undefined ? o.earliest : Math.min(o.earliest, stop);
  const span = `[${p.nextFrom}, ${lostUntil})`;
  if (stream.failOnDataLoss) {
    const reason = dataLossReason(span);
    return {
      write: { kind: 'fail-partition', topic: p.topic, partition: p.partition, reason, nowMs },
      report: report(p, o, 'failed', reason),
    };
  }
  const write: PlanWrite = {
    kind: 'record-data-loss',
    expectFrom: p.nextFrom,
    loss: {
      stream: stream.id,
      topic: p.topic,
      partition: p.partition,
      from: p.nextFrom,
      until: lostUntil,
      detectedAtMs: nowMs,
      reason: 'retention deleted offsets before they were processed',
    },
  };
  return { write, report: report({ ...p, committed: lostUntil, nextFrom: lostUntil }, o, 'data-loss', `lost ${span}`), skipTo: lostUntil };
}
