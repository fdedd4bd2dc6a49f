/** The stack's CloudWatch dashboard. */
import { isContinuous } from '../../lib/config/continuous';
import type { DeploymentConfig, StreamConfig } from '../../lib/config/schema';
import type { PlannerMetric } from '../../lib/planner/metrics';
import type { ProcessorMetric } from '../../lib/processor/invocation-metrics';
import { sub, subLiteral, type Cfn } from './cfn';
import { hasSegmentsFunction } from './functions';
import { IDS } from './names';
import type { Settings } from './settings';

type Widget = Record<string, unknown>;

/** Widgets laid out top to bottom on CloudWatch's 24-column grid. */
function dashboardGrid(period: number) {
  const widgets: Widget[] = [];
  let y = 0;
  return {
    widgets,
    text(markdown: string): void {
      widgets.push({ type: 'text', x: 0, y, width: 24, height: 2, properties: { markdown } });
      y += 2;
    },
    alarms(alarmIds: string[]): void {
      widgets.push({
        type: 'alarm',
        x: 0,
        y,
        width: 24,
        height: 4,
        properties: { title: 'Alarms', alarms: alarmIds.map((id) => `\${${id}.Arn}`) },
      });
      y += 4;
    },
    /** One row of metric graphs sharing the width. */
    row(items: Widget[]): void {
      const width = Math.floor(24 / items.length);
      items.forEach((props, i) =>
        widgets.push({ type: 'metric', x: i * width, y, width, height: 6, properties: { region: '${AWS::Region}', period, ...props } }),
      );
      y += 6;
    },
  };
}
type DashboardGrid = ReturnType<typeof dashboardGrid>;

/** A stream's row: lag, records, ranges and failures from the planner's and processor's metrics. */
function streamWidgets(grid: DashboardGrid, ns: string, streamId: string): void {
  const id = subLiteral(streamId);
  // Typed by function: a graph of a name the function does not publish does not type-check.
  const p = (name: PlannerMetric, extra: Record<string, string> = {}) => [ns, name, 'service', 'planner', 'stream', id, extra];
  const q = (name: ProcessorMetric, extra: Record<string, string> = {}) => [ns, name, 'service', 'processor', 'stream', id, extra];
  grid.text(`## Stream \`${id}\``);
  grid.row([
    { title: `${id}: lag (records)`, stat: 'Maximum', metrics: [p('TotalLag'), p('MaxPartitionLag')] },
    { title: `${id}: records planned / processed`, stat: 'Sum', metrics: [p('RecordsPlanned'), q('RecordsProcessed')] },
    {
      title: `${id}: ranges`,
      stat: 'Sum',
      metrics: [
        p('RangesPlanned'),
        p('RangesInFlight', { stat: 'Maximum' }),
        p('RangesRedispatched'),
        q('RangesCompleted'),
        q('RangesPartial'),
      ],
    },
    {
      title: `${id}: failures`,
      stat: 'Sum',
      metrics: [
        p('RangesParked', { label: 'parked (planner)' }),
        q('RangesParked', { label: 'parked (processor)' }),
        p('PartitionsFailed'),
        p('DispatchFailures'),
        q('DeadLetters'),
        p('DataLossRecords', { label: 'data loss (planner)' }),
        q('DataLossRecords', { label: 'data loss (processor)' }),
        p('PlannerFailed'),
      ],
    },
  ]);
}

/**
 * A stream's planner loop: ticks, how late they started, and the gaps between them (the no-tick
 * alarm's metric, with its threshold drawn in); the hand-over gap and the successor's wait per invocation.
 */
function loopWidgets(grid: DashboardGrid, ns: string, stream: StreamConfig, noTickIntervals: number): void {
  const id = subLiteral(stream.id);
  const p = (name: PlannerMetric, extra: Record<string, string> = {}) => [ns, name, 'service', 'planner', 'stream', id, extra];
  // A continuous stream's partitions without a live segment (the segments-missing alarm's metric).
  const segments = isContinuous(stream)
    ? [{ title: `${id}: partitions without a live segment`, stat: 'Maximum', metrics: [p('SegmentsMissing')] }]
    : [];
  grid.row([
    { title: `${id}: planner ticks`, stat: 'Sum', metrics: [p('Ticks'), p('TicksPerInvocation', { stat: 'Maximum' })] },
    { title: `${id}: tick lag (ms)`, stat: 'Maximum', metrics: [p('TickLagMs'), p('LoopWaitMs', { label: 'successor wait' })] },
    {
      title: `${id}: tick gap / hand-over gap (ms)`,
      stat: 'Maximum',
      metrics: [p('TickGapMs'), p('HandoverGapMs')],
      annotations: {
        horizontal: [{ label: `no-tick alarm (${noTickIntervals} intervals)`, value: noTickIntervals * stream.triggerIntervalMs }],
      },
    },
    ...segments,
  ]);
}

/** The functions' Lambda metrics (the segments function's when there is one) and the two failure queues. */
function functionWidgets(grid: DashboardGrid, s: Settings, withSegments: boolean): void {
  const fn = (name: string, metricName: string, extra: Record<string, string> = {}) => [
    'AWS/Lambda',
    metricName,
    'FunctionName',
    name,
    extra,
  ];
  const { planner, processor, segments } = s.names;
  const segmentsOnly = (...metrics: unknown[][]) => (withSegments ? metrics : []);
  grid.text('## Functions and queues');
  grid.row([
    {
      title: 'Invocations / errors / throttles',
      stat: 'Sum',
      metrics: [
        fn(planner, 'Invocations'),
        fn(planner, 'Errors'),
        fn(processor, 'Invocations'),
        fn(processor, 'Errors'),
        fn(processor, 'Throttles'),
        ...segmentsOnly(fn(segments, 'Invocations'), fn(segments, 'Errors'), fn(segments, 'Throttles')),
      ],
    },
    {
      title: 'Duration (p99, ms)',
      stat: 'p99',
      metrics: [fn(planner, 'Duration'), fn(processor, 'Duration'), ...segmentsOnly(fn(segments, 'Duration'))],
    },
    {
      title: withSegments ? 'Processor and segments concurrency, async queue' : 'Processor concurrency and async queue',
      stat: 'Maximum',
      metrics: [
        fn(processor, 'ConcurrentExecutions'),
        fn(processor, 'AsyncEventAge'),
        fn(processor, 'AsyncEventsDropped', { stat: 'Sum' }),
        ...segmentsOnly(fn(segments, 'ConcurrentExecutions'), fn(segments, 'AsyncEventsDropped', { stat: 'Sum' })),
      ],
    },
    {
      title: 'Failure queues (messages)',
      stat: 'Maximum',
      metrics: [
        [
          'AWS/SQS',
          'ApproximateNumberOfMessagesVisible',
          'QueueName',
          `\${${IDS.processorFailureQueue}.QueueName}`,
          { label: 'processor on-failure' },
        ],
        [
          'AWS/SQS',
          'ApproximateNumberOfMessagesVisible',
          'QueueName',
          `\${${IDS.scheduleDeadLetterQueue}.QueueName}`,
          { label: 'schedule dead letters' },
        ],
      ],
    },
  ]);
}

/** Dashboard JSON as an Fn::Sub string (region and alarm ARNs filled in by CloudFormation). */
export function dashboardBody(s: Settings, config: DeploymentConfig, alarmIds: string[], period: number, noTickIntervals: number): Cfn {
  const grid = dashboardGrid(period);
  grid.text(
    `# ${subLiteral(s.service)} (${subLiteral(s.stage)})\nPlanner schedule: ` +
      `\`${subLiteral(s.scheduleRate)}\`. Metrics namespace \`${subLiteral(s.metricsNamespace)}\`.`,
  );
  grid.alarms(alarmIds);
  for (const stream of config.streams) {
    streamWidgets(grid, s.metricsNamespace, stream.id);
    loopWidgets(grid, s.metricsNamespace, stream, noTickIntervals);
  }
  functionWidgets(grid, s, hasSegmentsFunction(config));
  return sub(JSON.stringify({ widgets: grid.widgets }));
}
