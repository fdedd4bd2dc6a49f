/**
 * Planner metrics in CloudWatch embedded metric format (Powertools Metrics): per-stream totals, and
 * lag per partition up to a cap (each partition is its own custom metric, which CloudWatch bills).
 */
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { StreamPlanReport } from './run';

/**
 * Every metric of a planner run, with its unit, in the order a run adds them: the one list the
 * emitters take names and units from (a name outside it does not type-check), and that the docs'
 * metric tables are checked against (test/unit/docs/metrics.test.ts).
 */
export const PLANNER_RUN_METRICS = {
  RangesPlanned: MetricUnit.Count,
  RecordsPlanned: MetricUnit.Count,
  RangesInFlight: MetricUnit.Count,
  RangesRedispatched: MetricUnit.Count,
  RangesParked: MetricUnit.Count,
  DispatchFailures: MetricUnit.Count,
  PartitionsFailed: MetricUnit.Count,
  PartitionsRetired: MetricUnit.Count,
  PartitionsUnavailable: MetricUnit.Count,
  DataLossEvents: MetricUnit.Count,
  DataLossRecords: MetricUnit.Count,
  TopicRecreated: MetricUnit.Count,
  TotalLag: MetricUnit.Count,
  MaxPartitionLag: MetricUnit.Count,
  PlannerFailed: MetricUnit.Count,
  TopicsMissing: MetricUnit.Count,
  DeadLettersDelivered: MetricUnit.Count,
  DeliveryFailures: MetricUnit.Count,
  SegmentsMissing: MetricUnit.Count,
  PlannerDurationMs: MetricUnit.Milliseconds,
  PartitionLag: MetricUnit.Count,
} as const;

/** The planner loop's own metrics (loop-metrics.ts), and the handler's count of its invocations (functions/planner.ts). */
export const PLANNER_LOOP_METRICS = {
  Ticks: MetricUnit.Count,
  TickLagMs: MetricUnit.Milliseconds,
  TickGapMs: MetricUnit.Milliseconds,
  TicksPerInvocation: MetricUnit.Count,
  HandoverGapMs: MetricUnit.Milliseconds,
  LoopWaitMs: MetricUnit.Milliseconds,
  PlannerInvocations: MetricUnit.Count,
} as const;

/** Every metric the planner function publishes. */
export const PLANNER_METRICS = { ...PLANNER_RUN_METRICS, ...PLANNER_LOOP_METRICS } as const;
export type PlannerMetric = keyof typeof PLANNER_METRICS;

/** Adds one of the planner's metrics with its unit. */
export function addPlannerMetric(metrics: Pick<Metrics, 'addMetric'>, name: PlannerMetric, value: number): void {
  metrics.addMetric(name, PLANNER_METRICS[name], value);
}

/** Default cap on per-partition lag metrics per stream and run; the structured log has them all. */
export const DEFAULT_MAX_PARTITION_METRICS = 1000;

/** Publishes one run's metrics: one EMF document per stream and one per partition (up to the cap). */
export function recordPlannerMetrics(metrics: Metrics, reports: StreamPlanReport[], opts: { maxPartitionMetrics?: number } = {}): void {
  const cap = opts.maxPartitionMetrics ?? DEFAULT_MAX_PARTITION_METRICS;
  for (const r of reports) {
    const m = metrics;
    m.addDimensions({ stream: r.stream });
    addPlannerMetric(m, 'RangesPlanned', r.rangesPlanned);
    addPlannerMetric(m, 'RecordsPlanned', r.recordsPlanned);
    addPlannerMetric(m, 'RangesInFlight', r.inFlight);
    addPlannerMetric(m, 'RangesRedispatched', r.redispatched);
    addPlannerMetric(m, 'RangesParked', r.parked);
    addPlannerMetric(m, 'DispatchFailures', r.dispatchFailures.length);
    addPlannerMetric(m, 'PartitionsFailed', r.failedPartitions);
    addPlannerMetric(m, 'PartitionsRetired', r.retired);
    addPlannerMetric(m, 'PartitionsUnavailable', r.unavailablePartitions);
    addPlannerMetric(m, 'DataLossEvents', r.dataLoss.length);
    addPlannerMetric(
      m,
      'DataLossRecords',
      r.dataLoss.reduce((s, l) => s + (l.until - l.from), 0),
    );
    // Topics deleted and re-created under their name: the old incarnation's unread records are gone with it.
    addPlannerMetric(m, 'TopicRecreated', r.recreated.length);
    addPlannerMetric(
      m,
      'TotalLag',
      r.partitions.reduce((s, p) => s + p.lag, 0),
    );
    addPlannerMetric(
      m,
      'MaxPartitionLag',
      r.partitions.reduce((s, p) => Math.max(s, p.lag), 0),
    );
    addPlannerMetric(m, 'PlannerFailed', r.status === 'failed' ? 1 : 0);
    // A topic list naming a topic Kafka lacks, or a pattern matching none: plans nothing, fails nothing.
    addPlannerMetric(m, 'TopicsMissing', r.topicsMissing);
    // Dead letters' deliveries to failure destinations retried by the run (streams with onFailure).
    if (r.deliveries) {
      addPlannerMetric(m, 'DeadLettersDelivered', r.deliveries.delivered);
      addPlannerMetric(m, 'DeliveryFailures', r.deliveries.failed);
    }
    // Continuous streams: partitions without a live segment (the segments-missing alarm's metric).
    if (r.segmentsMissing !== undefined) addPlannerMetric(m, 'SegmentsMissing', r.segmentsMissing);
    addPlannerMetric(m, 'PlannerDurationMs', r.durationMs);
    m.publishStoredMetrics(); // one EMF document per stream; also clears the stream dimension
    for (const p of r.partitions.slice(0, cap)) {
      // A single metric is published as soon as it is added.
      const pm = metrics.singleMetric();
      pm.addDimensions({ stream: r.stream, topic: p.topic, partition: String(p.partition) });
      addPlannerMetric(pm, 'PartitionLag', p.lag);
    }
  }
}
