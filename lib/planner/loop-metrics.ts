/**
 * Metrics of a planner loop. A loop ticks every second or so; one EMF document per tick and stream,
 * and one per partition, would cost more in log ingestion than the planner itself. So the ticks of a
 * window (10 s) are published as one run's metrics (counts summed, gauges from the last tick,
 * partition lag once a minute), beside the loop's own: ticks, the longest tick lag and the longest
 * gap between ticks (the alarm's metric: `TickGapMs` above three intervals, or none at all).
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { StreamLoopReport, TickRecord } from './loop';
import { addPlannerMetric, recordPlannerMetrics, DEFAULT_MAX_PARTITION_METRICS } from './metrics';
import type { StreamPlanReport } from './run';
import type { ChainTickReport } from './tick-chain';

export type LoopMetricsOptions = {
  /** Ticks are published together at most this often (default 10 s). */
  windowMs?: number;
  /** Per-partition lag at most this often (default 60 s). */
  partitionEveryMs?: number;
};

/** Per-partition lag is published once a minute: one metric per partition and tick would cost more than the planner. */
const DEFAULT_PARTITION_EVERY_MS = 60_000;

type Window = { reports: StreamPlanReport[]; maxLagMs: number; maxGapMs: number; openedAtMs: number };

export type LoopMetrics = {
  /** Counts a tick in; publishes the window when it is over. */
  tick(t: TickRecord): void;
  /** Publishes what is left, and the invocation's own metrics per stream (ticks, hand-over gap, wait). */
  end(reports: StreamLoopReport[]): void;
};

/** The metrics of one invocation's loop; `previousTickAtMs` per stream starts the gap measure across a hand-over. */
export function createLoopMetrics(metrics: Metrics, opts: LoopMetricsOptions = {}): LoopMetrics {
  const windowMs = opts.windowMs ?? 10_000;
  const partitionEveryMs = opts.partitionEveryMs ?? DEFAULT_PARTITION_EVERY_MS;
  const windows = new Map<string, Window>();
  const lastTickAtMs = new Map<string, number>();
  const partitionsAtMs = new Map<string, number>();

  const publish = (stream: string, w: Window, atMs: number): void => {
    if (w.reports.length === 0) return;
    const withPartitions = atMs - (partitionsAtMs.get(stream) ?? -Infinity) >= partitionEveryMs;
    if (withPartitions) partitionsAtMs.set(stream, atMs);
    // Added first, so the run's document (published by recordPlannerMetrics) carries them too.
    addPlannerMetric(metrics, 'Ticks', w.reports.length);
    addPlannerMetric(metrics, 'TickLagMs', w.maxLagMs);
    if (w.maxGapMs > 0) addPlannerMetric(metrics, 'TickGapMs', w.maxGapMs);
    recordPlannerMetrics(metrics, [mergeReports(w.reports)], { maxPartitionMetrics: withPartitions ? DEFAULT_MAX_PARTITION_METRICS : 0 });
  };

  return {
    tick(t) {
      const w = windows.get(t.stream) ?? { reports: [], maxLagMs: 0, maxGapMs: 0, openedAtMs: t.startedAtMs };
      windows.set(t.stream, w);
      const prev = lastTickAtMs.get(t.stream);
      if (prev !== undefined) w.maxGapMs = Math.max(w.maxGapMs, t.startedAtMs - prev);
      lastTickAtMs.set(t.stream, t.startedAtMs);
      w.reports.push(t.report);
      w.maxLagMs = Math.max(w.maxLagMs, t.lagMs);
      const endedAtMs = t.startedAtMs + t.durationMs;
      if (endedAtMs - w.openedAtMs >= windowMs) {
        publish(t.stream, w, endedAtMs);
        windows.delete(t.stream);
      }
    },
    end(reports) {
      for (const [stream, w] of windows) publish(stream, w, Infinity);
      windows.clear();
      for (const r of reports) {
        metrics.addDimensions({ stream: r.stream });
        addPlannerMetric(metrics, 'TicksPerInvocation', r.ticks);
        addPlannerMetric(metrics, 'LoopWaitMs', r.waitedMs);
        // The gap across the hand-over is a tick gap too: the alarm sees it.
        if (r.handoverGapMs !== undefined) {
          addPlannerMetric(metrics, 'HandoverGapMs', r.handoverGapMs);
          addPlannerMetric(metrics, 'TickGapMs', r.handoverGapMs);
        }
        metrics.publishStoredMetrics();
      }
    },
  };
}

/**
 * The metrics of one tick of the tick chain (tick-chain.ts), an invocation of its own: the loop's
 * tick metrics for its one tick (`TickGapMs` from the tick before, which its message carried: the
 * no-tick alarm watches chained streams as it does looped ones), and its run's metrics, with
 * partition lag once a minute (on the first tick of each store-clock minute).
 */
export function recordChainTick(metrics: Metrics, t: ChainTickReport, partitionEveryMs = DEFAULT_PARTITION_EVERY_MS): void {
  if (!t.report) return;
  addPlannerMetric(metrics, 'Ticks', 1);
  addPlannerMetric(metrics, 'TickLagMs', t.lagMs ?? 0);
  if (t.gapMs !== undefined) addPlannerMetric(metrics, 'TickGapMs', t.gapMs);
  const at = t.startedAtMs ?? 0;
  const previous = t.gapMs === undefined ? undefined : at - t.gapMs;
  const withPartitions = previous === undefined || Math.floor(at / partitionEveryMs) !== Math.floor(previous / partitionEveryMs);
  recordPlannerMetrics(metrics, [t.report], { maxPartitionMetrics: withPartitions ? DEFAULT_MAX_PARTITION_METRICS : 0 });
}

/** The ticks of a window as one run: counts summed, what describes the state now from the last tick. */
export function mergeReports(reports: StreamPlanReport[]): StreamPlanReport {
  const last = reports[reports.length - 1] as StreamPlanReport;
  const sum = (f: (r: StreamPlanReport) => number): number => reports.reduce((s, r) => s + f(r), 0);
  const missing = reports.flatMap((r) => (r.segmentsMissing !== undefined ? [r.segmentsMissing] : []));
  return {
    ...last,
    // PlannerFailed is 1 when any tick of the window failed.
    status: reports.some((r) => r.status === 'failed') ? 'failed' : last.status,
    rangesPlanned: sum((r) => r.rangesPlanned),
    recordsPlanned: sum((r) => r.recordsPlanned),
    redispatched: sum((r) => r.redispatched),
    parked: sum((r) => r.parked),
    retired: sum((r) => r.retired),
    failedPartitions: sum((r) => r.failedPartitions),
    dispatchFailures: reports.flatMap((r) => r.dispatchFailures),
    dataLoss: reports.flatMap((r) => r.dataLoss),
    recreated: reports.flatMap((r) => r.recreated),
    ...(reports.some((r) => r.deliveries) ? { deliveries: mergeDeliveries(reports) } : {}),
    // The most partitions without a live segment in any tick: a dead segment counts until the tick that sends it again.
    ...(missing.length ? { segmentsMissing: Math.max(...missing) } : {}),
    durationMs: Math.max(...reports.map((r) => r.durationMs)),
  };
}

/** The deliveries of a window's ticks added up (their errors: the first few). */
function mergeDeliveries(reports: StreamPlanReport[]): NonNullable<StreamPlanReport['deliveries']> {
  const all = reports.flatMap((r) => (r.deliveries ? [r.deliveries] : []));
  return {
    delivered: all.reduce((s, d) => s + d.delivered, 0),
    failed: all.reduce((s, d) => s + d.failed, 0),
    dropped: all.reduce((s, d) => s + d.dropped, 0),
    errors: all.flatMap((d) => d.errors).slice(0, 5),
  };
}
