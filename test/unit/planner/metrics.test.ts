/** Planner metrics come out as CloudWatch embedded-metric-format documents. */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { recordPlannerMetrics } from '../../../lib/planner/metrics';
import { emptyReport, type StreamPlanReport } from '../../../lib/planner/run';

const report = (over: Partial<StreamPlanReport>): StreamPlanReport => ({ ...emptyReport('s1', false), durationMs: 5, ...over });

const part = (partition: number, lag: number) => ({
  topic: 'orders',
  partition,
  status: 'active' as const,
  committed: 0,
  nextFrom: 0,
  lag,
  planned: [],
  action: 'idle' as const,
});

describe('planner metrics (EMF)', () => {
  it('emits per-stream totals and lag per partition up to the cap', () => {
    const lines: string[] = [];
    // Powertools writes each EMF document to stdout as one line.
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      return true;
    });
    const disabled = process.env.POWERTOOLS_METRICS_DISABLED;
    delete process.env.POWERTOOLS_METRICS_DISABLED;
    try {
      const metrics = new Metrics({ namespace: 'Test', serviceName: 'planner' });
      recordPlannerMetrics(
        metrics,
        [
          report({
            rangesPlanned: 3,
            recordsPlanned: 300,
            unavailablePartitions: 2,
            dataLoss: [{ stream: 's1', topic: 'orders', partition: 0, from: 10, until: 25, detectedAtMs: 1, reason: 'retention' }],
            recreated: [
              {
                stream: 's1',
                topic: 'orders',
                partition: 1,
                incarnation: 0,
                status: 'active',
                startOffset: 0,
                committed: 5,
                nextFrom: 5,
                openRanges: [],
                newStartOffset: 0,
                detectedAtMs: 1,
                reason: 'TOPIC_RECREATED: test',
              },
            ],
            partitions: [part(0, 7), part(1, 40), part(2, 0)],
            topicsMissing: 2,
          }),
        ],
        { maxPartitionMetrics: 2 },
      );
    } finally {
      spy.mockRestore();
      process.env.POWERTOOLS_METRICS_DISABLED = disabled;
    }
    const docs = lines.map(
      (l) =>
        JSON.parse(l) as Record<string, unknown> & { _aws: { CloudWatchMetrics: Array<{ Namespace: string; Dimensions: string[][] }> } },
    );
    const stream = docs.find((d) => 'RecordsPlanned' in d)!;
    expect(stream).toMatchObject({
      stream: 's1',
      RangesPlanned: 3,
      RecordsPlanned: 300,
      TotalLag: 47,
      MaxPartitionLag: 40,
      DataLossEvents: 1,
      DataLossRecords: 15,
      PartitionsUnavailable: 2,
      TopicRecreated: 1,
      TopicsMissing: 2,
    });
    // Per stream, so an alarm can watch TopicsMissing > 0 with the dimension stream.
    expect(stream._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['service', 'stream']]);
    expect(stream._aws.CloudWatchMetrics[0]?.Namespace).toBe('Test');
    const lags = docs.filter((d) => 'PartitionLag' in d).map((d) => [d.topic, d.partition, d.PartitionLag]);
    expect(lags).toEqual([
      ['orders', '0', 7],
      ['orders', '1', 40],
    ]);
  });
});
