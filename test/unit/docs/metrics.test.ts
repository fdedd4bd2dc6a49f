/**
 * The metric tables of docs/operations.md ("Metrics") list exactly the metrics the functions
 * publish, with their units. The names come from the lists the emitters publish by
 * (`PLANNER_RUN_METRICS`, `PLANNER_LOOP_METRICS`, `PROCESSOR_METRICS`); that the emitters publish
 * every listed name, and no other, is checked by running them on a recording `Metrics`.
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { TickRecord } from '../../../lib/planner/loop';
import { createLoopMetrics } from '../../../lib/planner/loop-metrics';
import { PLANNER_LOOP_METRICS, PLANNER_METRICS, PLANNER_RUN_METRICS, recordPlannerMetrics } from '../../../lib/planner/metrics';
import { emptyReport, type StreamPlanReport } from '../../../lib/planner/run';
import { countsToPublish, PROCESSOR_METRICS, type ProcessorMetric } from '../../../lib/processor/invocation-metrics';
import { codeSpans, markdownTable } from '../../support/markdown-table';

const DOC = 'docs/operations.md';

/** A metric table as metric name -> unit (the name is the first cell's code span). */
function documented(after: string): Record<string, string> {
  const table = markdownTable(DOC, 'Metrics', { after, columns: ['metric', 'unit'] });
  return Object.fromEntries(table.rows.map((r) => [codeSpans(r[0] as string)[0] ?? r[0], r[1]]));
}

/** A `Metrics` that records the name and unit of every metric added (single metrics included). */
function recordingMetrics(): { metrics: Metrics; added: Map<string, string> } {
  const added = new Map<string, string>();
  const fake = {
    addMetric: (name: string, unit: string) => void added.set(name, unit),
    addDimensions: () => undefined,
    publishStoredMetrics: () => undefined,
    singleMetric: () => fake,
  };
  return { metrics: fake as unknown as Metrics, added };
}

/** A run that reaches every branch of recordPlannerMetrics (deliveries, a continuous stream's segments, a partition). */
const fullReport = (): StreamPlanReport => ({
  ...emptyReport('s1', false),
  durationMs: 5,
  deliveries: { delivered: 1, failed: 1, dropped: 0, errors: [] },
  segmentsMissing: 1,
  partitions: [{ topic: 't', partition: 0, status: 'active', committed: 0, nextFrom: 0, lag: 3, planned: [], action: 'idle' }],
});

describe('docs: metric tables (docs/operations.md "Metrics")', () => {
  it('the planner table lists every metric of a planner run, with its unit, and no other', () => {
    expect(documented('**Planner**')).toEqual(PLANNER_RUN_METRICS);
  });

  it('the planner loop table lists every metric of the loop and the handler, with its unit, and no other', () => {
    expect(documented('**Planner loop**')).toEqual(PLANNER_LOOP_METRICS);
  });

  it('the processor table lists every metric of an invocation (all counts), and no other', () => {
    const doc = documented('**Processor**');
    expect(Object.keys(doc).sort()).toEqual([...PROCESSOR_METRICS].sort());
    // functions/processor.ts publishes each of them as a Count.
    for (const unit of Object.values(doc)) expect(unit).toBe('Count');
  });
});

describe('the metric lists are what the emitters publish', () => {
  it('a planner run and a loop publish every planner metric but the invocation count, with the listed units', () => {
    const { metrics, added } = recordingMetrics();
    recordPlannerMetrics(metrics, [fullReport()]);
    const loop = createLoopMetrics(metrics, { windowMs: 1 });
    const tick = (startedAtMs: number): TickRecord => ({
      stream: 's1',
      dueMs: startedAtMs,
      startedAtMs,
      storeStartedAtMs: startedAtMs,
      lagMs: 2,
      durationMs: 5,
      report: fullReport(),
    });
    // Two ticks: the second has a gap after the first, and ends the window.
    loop.tick(tick(0));
    loop.tick(tick(10));
    loop.end([{ stream: 's1', outcome: 'time-up', ticks: 2, failedTicks: 0, handoverGapMs: 900, maxTickLagMs: 2, waitedMs: 1 }]);
    // PlannerInvocations is added by the handler (functions/planner.ts), once per invocation.
    const { PlannerInvocations, ...rest } = PLANNER_METRICS;
    expect(PlannerInvocations).toBe('Count');
    expect(Object.fromEntries(added)).toEqual(rest);
  });

  it('an invocation with every count above zero publishes every processor metric', () => {
    const all = Object.fromEntries(PROCESSOR_METRICS.map((m) => [m, 1])) as Record<ProcessorMetric, number>;
    expect(countsToPublish(all).map(([name]) => name)).toEqual([...PROCESSOR_METRICS]);
  });
});
