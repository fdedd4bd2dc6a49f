/** The stack's CloudWatch dashboard. */
import type { DeploymentConfig } from '../../lib/config/schema';
import { sub, subLiteral, type Cfn } from './cfn';
import { IDS } from './names';
import type { Settings } from './settings';

/** Dashboard JSON as an Fn::Sub string (region and alarm ARNs filled in by CloudFormation). */
export function dashboardBody(s: Settings, config: DeploymentConfig, alarmIds: string[], period: number): Cfn {
  const ns = s.metricsNamespace;
  const widgets: Record<string, unknown>[] = [];
  let y = 0;
  const text = (markdown: string) => {
    widgets.push({ type: 'text', x: 0, y, width: 24, height: 2, properties: { markdown } });
    y += 2;
  };
  const row = (items: Record<string, unknown>[]) => {
    const width = Math.floor(24 / items.length);
    items.forEach((props, i) => widgets.push({ type: 'metric', x: i * width, y, width, height: 6, properties: { region: '${AWS::Region}', period, ...props } }));
    y += 6;
  };
  text(`# ${subLiteral(s.service)} (${subLiteral(s.stage)})\nPlanner schedule: \`${subLiteral(s.scheduleRate)}\`. Metrics namespace \`${subLiteral(ns)}\`.`);
  widgets.push({ type: 'alarm', x: 0, y, width: 24, height: 4, properties: { title: 'Alarms', alarms: alarmIds.map((id) => `\${${id}.Arn}`) } });
  y += 4;
  for (const stream of config.streams) {
    const id = subLiteral(stream.id);
    const p = (name: string, extra: Record<string, string> = {}) => [ns, name, 'service', 'planner', 'stream', id, extra];
    const q = (name: string, extra: Record<string, string> = {}) => [ns, name, 'service', 'processor', 'stream', id, extra];
    text(`## Stream \`${id}\``);
    row([
      { title: `${id}: lag (records)`, stat: 'Maximum', metrics: [p('TotalLag'), p('MaxPartitionLag')] },
      { title: `${id}: records planned / processed`, stat: 'Sum', metrics: [p('RecordsPlanned'), q('RecordsProcessed')] },
      {
        title: `${id}: ranges`,
        stat: 'Sum',
        metrics: [p('RangesPlanned'), p('RangesInFlight', { stat: 'Maximum' }), p('RangesRedispatched'), q('RangesCompleted'), q('RangesPartial')],
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
  text('## Functions and queues');
  const fn = (name: string, metricName: string, extra: Record<string, string> = {}) => ['AWS/Lambda', metricName, 'FunctionName', name, extra];
  row([
    { title: 'Invocations / errors / throttles', stat: 'Sum', metrics: [fn(s.names.planner, 'Invocations'), fn(s.names.planner, 'Errors'), fn(s.names.processor, 'Invocations'), fn(s.names.processor, 'Errors'), fn(s.names.processor, 'Throttles')] },
    { title: 'Duration (p99, ms)', stat: 'p99', metrics: [fn(s.names.planner, 'Duration'), fn(s.names.processor, 'Duration')] },
    { title: 'Processor concurrency and async queue', stat: 'Maximum', metrics: [fn(s.names.processor, 'ConcurrentExecutions'), fn(s.names.processor, 'AsyncEventAge'), fn(s.names.processor, 'AsyncEventsDropped', { stat: 'Sum' })] },
    {
      title: 'Failure queues (messages)',
      stat: 'Maximum',
      metrics: [
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', `\${${IDS.processorFailureQueue}.QueueName}`, { label: 'processor on-failure' }],
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', `\${${IDS.scheduleDeadLetterQueue}.QueueName}`, { label: 'schedule dead letters' }],
      ],
    },
  ]);
  return sub(JSON.stringify({ widgets }));
}
