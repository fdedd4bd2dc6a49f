/**
 * What one processor invocation reports: its metrics (counts over its ranges) and a one-line summary.
 * A count of zero is not published: a metric with no datapoint in a period reads as zero to the
 * stack's alarms (`TreatMissingData: notBreaching`) and to a Sum, and an invocation's EMF line then
 * carries only what happened (two or three metrics for a range completed), which keeps a processor
 * invocation's logs under 400 bytes.
 */
import type { ProcessResult } from './process-range';

/** The processor's metrics (all counts), in the order they are published. */
export const PROCESSOR_METRICS = [
  'RecordsProcessed',
  'DeadLetters',
  'RecordsFiltered',
  'RecordsExpired',
  'RangesCompleted',
  'RangesParked',
  'RangesPartial',
  'DataLossRecords',
  'DeadLettersDelivered',
  'DeliveryFailures',
] as const;
export type ProcessorMetric = (typeof PROCESSOR_METRICS)[number];

/** The invocation's counts, summed over its ranges. */
export function invocationCounts(results: readonly ProcessResult[]): Record<ProcessorMetric, number> {
  const sum = (f: (r: ProcessResult) => number) => results.reduce((s, r) => s + f(r), 0);
  return {
    RecordsProcessed: sum((r) => r.records),
    DeadLetters: sum((r) => r.deadLetters),
    RecordsFiltered: sum((r) => r.filtered),
    RecordsExpired: sum((r) => r.expired),
    RangesCompleted: sum((r) => (r.status === 'done' ? 1 : 0)),
    RangesParked: sum((r) => (r.status === 'parked' ? 1 : 0)),
    RangesPartial: sum((r) => (r.status === 'partial' ? 1 : 0)),
    DataLossRecords: sum((r) => (r.dataLoss ? r.dataLoss.until - r.dataLoss.from : 0)),
    DeadLettersDelivered: sum((r) => r.deliveries?.delivered ?? 0),
    DeliveryFailures: sum((r) => r.deliveries?.failed ?? 0),
  };
}

/** The counts to publish: those above zero. */
export function countsToPublish(counts: Record<ProcessorMetric, number>): Array<[ProcessorMetric, number]> {
  return PROCESSOR_METRICS.filter((m) => counts[m] > 0).map((m) => [m, counts[m]]);
}

/** Each range's outcome in a few characters (`topic/partition/from-until:status`), for the debug line and errors. */
export function rangesSummary(results: readonly ProcessResult[]): string {
  return results.map((r) => `${r.range.topic}/${r.range.partition}/${r.range.from}-${r.range.until}:${r.status}`).join(' ');
}
