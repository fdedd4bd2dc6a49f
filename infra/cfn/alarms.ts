/** Alarms per stream on the custom metrics and stack-wide alarms on Lambda and SQS, with the dashboard. */
import type { DeploymentConfig } from '../../lib/config/schema';
import { getAtt, type Cfn, type CfnResource, type CfnResources } from './cfn';
import { dashboardBody } from './dashboard';
import { IDS, streamLogicalNames } from './names';
import type { Settings } from './settings';

function metric(s: Settings, id: string, name: string, service: 'planner' | 'processor', stream: string, stat: string, periodSeconds: number) {
  return {
    Id: id,
    ReturnData: false,
    MetricStat: {
      Metric: {
        Namespace: s.metricsNamespace,
        MetricName: name,
        // Powertools adds `service`; the handlers add `stream` (see lib/planner/metrics.ts, functions/processor.ts).
        Dimensions: [
          { Name: 'service', Value: service },
          { Name: 'stream', Value: stream },
        ],
      },
      Period: periodSeconds,
      Stat: stat,
    },
  };
}

function alarm(props: Record<string, Cfn>): CfnResource {
  const actions = [{ Ref: IDS.alarmTopic }];
  return {
    Type: 'AWS::CloudWatch::Alarm',
    Properties: {
      ActionsEnabled: true,
      AlarmActions: actions,
      OKActions: actions,
      ...props,
    },
  };
}

/**
 * A topic of the stream was deleted and re-created under its name (planner TopicRecreated): the old
 * topic's unread records are gone with it, and the stream now reads the new one. The ledger keeps
 * what the old incarnation had committed and planned (`status` shows it).
 */
function topicRecreatedAlarm(s: Settings, prefix: string, streamId: string, period: number): CfnResource {
  return alarm({
    AlarmName: `${prefix}-${streamId}-topic-recreated`,
    AlarmDescription: `Stream ${streamId}: a topic was deleted and re-created under the same name (planner TopicRecreated); the old incarnation was closed with a record of what it had committed and planned, and the new one is read per recreatedTopicOffsets.`,
    Namespace: s.metricsNamespace,
    MetricName: 'TopicRecreated',
    Dimensions: [
      { Name: 'service', Value: 'planner' },
      { Name: 'stream', Value: streamId },
    ],
    Statistic: 'Sum',
    Period: period,
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: 0,
    EvaluationPeriods: 1,
    TreatMissingData: 'notBreaching',
  });
}

/** Alarms per stream on the custom metrics, stack-wide alarms on Lambda and SQS, and a dashboard. */
export function observability(s: Settings, config: DeploymentConfig): { Resources: CfnResources } {
  const period = Math.max(60, Math.floor((s.schedulePeriodMs ?? 60_000) / 1000));
  const names = streamLogicalNames(config.streams);
  const resources: CfnResources = {};
  const alarmIds: string[] = [];
  const add = (id: string, resource: CfnResource) => {
    resources[id] = resource;
    alarmIds.push(id);
  };
  const prefix = `${s.service}-${s.stage}`;

  for (const stream of config.streams) {
    const n = names.get(stream.id) as string;
    const lagPeriods = Math.max(2, Math.ceil((s.lagAlarmMinutes * 60) / period));
    add(
      `LagGrowing${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-lag-growing`,
        AlarmDescription: `Stream ${stream.id}: TotalLag above ${s.lagAlarmThreshold} records and still growing in most planner runs of the last ${s.lagAlarmMinutes} minutes (processing falls behind).`,
        Metrics: [
          metric(s, 'lag', 'TotalLag', 'planner', stream.id, 'Maximum', period),
          { Id: 'growing', Expression: `IF(lag > ${s.lagAlarmThreshold} AND DIFF(lag) > 0, 1, 0)`, Label: 'lag above threshold and growing', ReturnData: true },
        ],
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Threshold: 1,
        EvaluationPeriods: lagPeriods,
        DatapointsToAlarm: Math.max(2, Math.ceil(lagPeriods * 0.6)),
        TreatMissingData: 'notBreaching',
      }),
    );
    add(
      `DataLoss${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-data-loss`,
        AlarmDescription: `Stream ${stream.id}: retention deleted offsets that were never processed (planner DataLossEvents/DataLossRecords, processor DataLossRecords). The ledger records the exact spans.`,
        Metrics: [
          metric(s, 'plannerEvents', 'DataLossEvents', 'planner', stream.id, 'Sum', period),
          metric(s, 'plannerRecords', 'DataLossRecords', 'planner', stream.id, 'Sum', period),
          metric(s, 'processorRecords', 'DataLossRecords', 'processor', stream.id, 'Sum', period),
          { Id: 'loss', Expression: 'FILL(plannerEvents, 0) + FILL(plannerRecords, 0) + FILL(processorRecords, 0)', Label: 'data loss', ReturnData: true },
        ],
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    add(`TopicRecreated${n}Alarm`, topicRecreatedAlarm(s, prefix, stream.id, period));
    add(
      `FailedRanges${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-failed-ranges`,
        AlarmDescription: `Stream ${stream.id}: ranges parked after maxAttempts, or partitions failed (planner RangesParked/PartitionsFailed, processor RangesParked). Nothing advances there until an operator acts.`,
        Metrics: [
          metric(s, 'plannerParked', 'RangesParked', 'planner', stream.id, 'Sum', period),
          metric(s, 'processorParked', 'RangesParked', 'processor', stream.id, 'Sum', period),
          metric(s, 'partitionsFailed', 'PartitionsFailed', 'planner', stream.id, 'Maximum', period),
          { Id: 'failed', Expression: 'FILL(plannerParked, 0) + FILL(processorParked, 0) + FILL(partitionsFailed, 0)', Label: 'failed ranges', ReturnData: true },
        ],
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    add(
      `DeadLetters${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-dead-letters`,
        AlarmDescription: `Stream ${stream.id}: the handler rejected records after maxAttempts and they were dead-lettered in the ledger (processor DeadLetters).`,
        Namespace: s.metricsNamespace,
        MetricName: 'DeadLetters',
        Dimensions: [
          { Name: 'service', Value: 'processor' },
          { Name: 'stream', Value: stream.id },
        ],
        Statistic: 'Sum',
        Period: period,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    add(
      `PlannerFailed${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-planner-failed`,
        AlarmDescription: `Stream ${stream.id}: the planner run failed in 3 consecutive triggers (PlannerFailed); see the planner's log for the reason.`,
        Namespace: s.metricsNamespace,
        MetricName: 'PlannerFailed',
        Dimensions: [
          { Name: 'service', Value: 'planner' },
          { Name: 'stream', Value: stream.id },
        ],
        Statistic: 'Sum',
        Period: period,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        TreatMissingData: 'notBreaching',
      }),
    );
  }

  const lambdaDim = (name: string) => [{ Name: 'FunctionName', Value: name }];
  add(
    'PlannerErrorsAlarm',
    alarm({
      AlarmName: `${prefix}-planner-errors`,
      AlarmDescription: 'The planner function failed (error or timeout) in 3 consecutive periods.',
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: lambdaDim(s.names.planner),
      Statistic: 'Sum',
      Period: period,
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    }),
  );
  if (s.scheduleEnabled) {
    add(
      'PlannerNotRunningAlarm',
      alarm({
        AlarmName: `${prefix}-planner-not-running`,
        AlarmDescription: `The planner was not invoked for 3 periods although its schedule (${s.scheduleRate}) is enabled.`,
        Namespace: 'AWS/Lambda',
        MetricName: 'Invocations',
        Dimensions: lambdaDim(s.names.planner),
        Statistic: 'Sum',
        Period: period,
        ComparisonOperator: 'LessThanThreshold',
        Threshold: 1,
        EvaluationPeriods: 3,
        TreatMissingData: 'breaching',
      }),
    );
  }
  const queueAlarm = (id: string, queueId: string, what: { name: string; description: string }) =>
    add(
      id,
      alarm({
        AlarmName: `${prefix}-${what.name}`,
        AlarmDescription: what.description,
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: getAtt(queueId, 'QueueName') }],
        Statistic: 'Maximum',
        Period: 300,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
  queueAlarm('ProcessorFailuresAlarm', IDS.processorFailureQueue, {
    name: 'processor-failures',
    description:
      'Processor invocations failed or expired in the async queue (on-failure destination). The planner re-dispatches their ranges; the messages tell why.',
  });
  queueAlarm('ScheduleDeadLettersAlarm', IDS.scheduleDeadLetterQueue, {
    name: 'schedule-dead-letters',
    description: 'Planner schedule ticks could not be delivered to the planner function (dead-letter queue).',
  });

  resources[IDS.dashboard] = { Type: 'AWS::CloudWatch::Dashboard', Properties: { DashboardName: s.names.dashboard, DashboardBody: dashboardBody(s, config, alarmIds, period) } };
  if (s.alarmEmail) {
    resources.AlarmEmailSubscription = { Type: 'AWS::SNS::Subscription', Properties: { TopicArn: { Ref: IDS.alarmTopic }, Protocol: 'email', Endpoint: s.alarmEmail } };
  }
  return { Resources: resources };
}
