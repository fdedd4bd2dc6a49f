import { Metrics } from '@aws-lambda-powertools/metrics';
import { createLoopMetrics, mergeReports, recordChainTick } from '../../../lib/planner/loop-metrics';
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

  it("publishes a chained tick's own metrics: one tick, its lag, the gap from the tick its message named, partition lag once a minute", () => {
    const c = capture();
    try {
      const partitions = [{ topic: 't', partition: 0, lag: 5 }];
      const ticked = (startedAtMs: number, gapMs?: number) => ({
        stream: 's1',
        seq: 2,
        outcome: 'ticked' as const,
        lagMs: 120,
        startedAtMs,
        ...(gapMs !== undefined ? { gapMs } : {}),
        report: report({ rangesPlanned: 1, partitions } as Partial<StreamPlanReport>),
      });
      recordChainTick(c.metrics, ticked(120_000, 10_000));
      expect(c.docs.find((d) => d.Ticks !== undefined)).toMatchObject({
        stream: 's1',
        Ticks: 1,
        TickLagMs: 120,
        TickGapMs: 10_000,
        RangesPlanned: 1,
      });
      // The first tick of a store-clock minute publishes the partitions' lag; the others of the minute do not.
      expect(c.docs.some((d) => d.PartitionLag !== undefined)).toBe(true);
      c.docs.length = 0;
      recordChainTick(c.metrics, ticked(130_000, 10_000));
      expect(c.docs.find((d) => d.Ticks !== undefined)).toMatchObject({ Ticks: 1, TickGapMs: 10_000 });
      expect(c.docs.some((d) => d.PartitionLag !== undefined)).toBe(false);
      // A chain's first tick has no gap to report; a message that ticked nothing publishes nothing.
      c.docs.length = 0;
      recordChainTick(c.metrics, ticked(131_000));
      expect(c.docs.find((d) => d.Ticks !== undefined)).not.toHaveProperty('TickGapMs');
      c.docs.length = 0;
      recordChainTick(c.metrics, { stream: 's1', seq: 3, outcome: 'duplicate' });
      expect(c.docs).toEqual([]);
    } finally {
      c.restore();
    }
  });
});
