import { Metrics } from '@aws-lambda-powertools/metrics';
import { createLoopMetrics, mergeReports } from '../../../lib/planner/loop-metrics';
import type { TickRecord } from '../../../lib/planner/loop';
import { emptyReport, type StreamPlanReport } from '../../../lib/planner/run';

/** The EMF documents the metrics write (Powertools writes each to stdout as one line), as objects. */
function capture() {
  const docs: Array<Record<string, unknown>> = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
    for (const line of String(chunk).split('\n').filter(Boolean)) docs.push(JSON.parse(line) as Record<string, unknown>);
    return true;
  });
  const disabled = process.env.POWERTOOLS_METRICS_DISABLED;
  delete process.env.POWERTOOLS_METRICS_DISABLED;
  const metrics = new Metrics({ namespace: 'Test', serviceName: 'planner' });
  return {
    docs,
    metrics,
    restore: () => {
      spy.mockRestore();
      process.env.POWERTOOLS_METRICS_DISABLED = disabled;
    },
  };
}

const report = (over: Partial<StreamPlanReport>): StreamPlanReport => ({ ...emptyReport('s1', false), ...over });
const tick = (startedAtMs: number, over: Partial<StreamPlanReport> = {}, lagMs = 0): TickRecord => ({
  stream: 's1',
  dueMs: startedAtMs - lagMs,
  startedAtMs,
  storeStartedAtMs: startedAtMs,
  lagMs,
  durationMs: 100,
  report: report(over),
});

describe('loop metrics', () => {
  it('merges a window of ticks: counts summed, the state from the last, failed if any failed', () => {
    const merged = mergeReports([
      report({ rangesPlanned: 2, recordsPlanned: 100, inFlight: 2, durationMs: 50 }),
      report({ rangesPlanned: 1, recordsPlanned: 40, inFlight: 1, status: 'failed', durationMs: 300 }),
      report({ rangesPlanned: 0, recordsPlanned: 0, inFlight: 3, durationMs: 20 }),
    ]);
    expect(merged).toMatchObject({ rangesPlanned: 3, recordsPlanned: 140, inFlight: 3, status: 'failed', durationMs: 300 });
  });

  it('publishes a window of ticks at once, with its tick count, lag and longest gap, then the invocation totals', () => {
    const c = capture();
    try {
      const m = createLoopMetrics(c.metrics, { windowMs: 10_000 });
      for (let i = 0; i < 10; i++) m.tick(tick(1000 * i, { rangesPlanned: 1 }, i === 4 ? 300 : 0));
      // The tenth tick ended at 9100 ms: nothing published yet.
      expect(c.docs).toEqual([]);
      m.tick(tick(12_000, { rangesPlanned: 1 }));
      const window = c.docs.find((d) => d.Ticks !== undefined);
      expect(window).toMatchObject({ stream: 's1', Ticks: 11, RangesPlanned: 11, TickLagMs: 300, TickGapMs: 3000 });
      m.end([{ stream: 's1', outcome: 'handed-over', ticks: 11, failedTicks: 0, maxTickLagMs: 300, waitedMs: 40, handoverGapMs: 1200 }]);
      const totals = c.docs.find((d) => d.TicksPerInvocation !== undefined);
      expect(totals).toMatchObject({ stream: 's1', TicksPerInvocation: 11, LoopWaitMs: 40, HandoverGapMs: 1200, TickGapMs: 1200 });
    } finally {
      c.restore();
    }
  });
});
