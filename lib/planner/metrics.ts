/**
 * Planner metrics in CloudWatch embedded metric format (Powertools Metrics): per-stream totals, and
 * lag per partition up to a cap (each partition is its own custom metric, which CloudWatch bills).
 */
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { StreamPlanReport } from './run';

/** Default cap on per-partition lag metrics per stream and run; the structured log has them all. */
export const DEFAULT_MAX_PARTITION_METRICS = 1000;

/** Publishes one run's metrics: one EMF document per stream and one per partition (up to the cap). */
export function recordPlannerMetrics(metrics: Metrics, reports: StreamPlanReport[], opts: { maxPartitionMetrics?: number } = {}): void {
  const cap = opts.maxPartitionMetrics ?? DEFAULT_MAX_PARTITION_METRICS;
  for (const r of reports) {
    const m = metrics;
    m.addDimensions({ stream: r.stream });
    m.addMetric('RangesPlanned', MetricUnit.Count, r.rangesPlanned);
    m.addMetric('RecordsPlanned', MetricUnit.Count, r.recordsPlanned);
    m.addMetric('RangesInFlight', MetricUnit.Count, r.inFlight);
    m.addMetric('RangesRedispatched', MetricUnit.Count, r.redispatched);
    m.addMetric('RangesParked', MetricUnit.Count, r.parked);
    m.addMetric('DispatchFailures', MetricUnit.Count, r.dispatchFailures.length);
    m.addMetric('PartitionsFailed', MetricUnit.Count, r.failedPartitions);
    m.addMetric('PartitionsRetired', MetricUnit.Count, r.retired);
    m.addMetric('PartitionsUnavailable', MetricUnit.Count, r.unavailablePartitions);
    m.addMetric('DataLossEvents', MetricUnit.Count, r.dataLoss.length);
    m.addMetric(
      'DataLossRecords',
      MetricUnit.Count,
      r.dataLoss.reduce((s, l) => s + (l.until - l.from), 0),
    );
    // Topics deleted and re-created under their name: the old incarnation's unread records are gone with it.
    m.addMetric('TopicRecreated', MetricUnit.Count, r.recreated.length);
    m.addMetric(
      'TotalLag',
      MetricUnit.Count,
      r.partitions.reduce((s, p) => s + p.lag, 0),
    );
    m.addMetric(
      'MaxPartitionLag',
      MetricUnit.Count,
      r.partitions.reduce((s, p) => Math.max(s, p.lag), 0),
    );
    m.addMetric('PlannerFailed', MetricUnit.Count, r.status === 'failed' ? 1 : 0);
    // A topic list naming a topic Kafka lacks, or a pattern matching none: plans nothing, fails nothing.
    m.addMetric('TopicsMissing', MetricUnit.Count, r.topicsMissing);
    // Dead letters' deliveries to failure destinations retried by the run (streams with onFailure).
    if (r.deliveries) {
      m.addMetric('DeadLettersDelivered', MetricUnit.Count, r.deliveries.delivered);
      m.addMetric('DeliveryFailures', MetricUnit.Count, r.deliveries.failed);
    }
    m.addMetric('PlannerDurationMs', MetricUnit.Milliseconds, r.durationMs);
    m.publishStoredMetrics(); // one EMF document per stream; also clears the stream dimension
    for (const p of r.partitions.slice(0, cap)) {
      // A single metric is published as soon as it is added.
      const pm = metrics.singleMetric();
      pm.addDimensions({ stream: r.stream, topic: p.topic, partition: String(p.partition) });
      pm.addMetric('PartitionLag', MetricUnit.Count, p.lag);
    }
  }
}
