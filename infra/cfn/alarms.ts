/** Alarms per stream on the custom metrics and stack-wide alarms on Lambda and SQS, with the dashboard. */
import { isContinuous } from '../../lib/config/continuous';
import type { DeploymentConfig, StreamConfig } from '../../lib/config/schema';
import type { PlannerMetric } from '../../lib/planner/metrics';
import type { ProcessorMetric } from '../../lib/processor/invocation-metrics';
import { getAtt, type Cfn, type CfnResource, type CfnResources } from './cfn';
import { dashboardBody } from './dashboard';
import { IDS, streamLogicalNames } from './names';
import type { Settings } from './settings';

/** The function a custom metric comes from (its `service` dimension). */
type Service = 'planner' | 'processor';

/** A metric the function `S` publishes: an alarm on a name no function publishes does not type-check. */
type MetricOf<S extends Service> = S extends 'planner' ? PlannerMetric : ProcessorMetric;

/** A stream's custom metric by its function: [metric id in an expression, metric name, service, statistic]. */
type MetricRef = [string, PlannerMetric, 'planner', string] | [string, ProcessorMetric, 'processor', string];

/** One custom metric of a stream, for an alarm's metric math. */
function metric<S extends Service>(
  s: Settings,
  id: string,
  name: MetricOf<S>,
  service: S,
  stream: string,
  stat: string,
  periodSeconds: number,
) {
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

/** An alarm that notifies the alarm topic when it fires and when it clears. */
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

/** What every alarm of the stack shares: the name prefix `<service>-<stage>` and the period of the planner's metrics. */
type AlarmContext = { s: Settings; prefix: string; periodSeconds: number };

/**
 * A stream's count of something that needs an operator, on one custom metric: alarms after
 * `evaluationPeriods` consecutive periods above 0.
 */
type CountAlarm = { name: string; evaluationPeriods: number; description: string } & (
  { metricName: PlannerMetric; service: 'planner' } | { metricName: ProcessorMetric; service: 'processor' }
);

function countAlarm({ s, prefix, periodSeconds }: AlarmContext, streamId: string, what: CountAlarm): CfnResource {
  return alarm({
    AlarmName: `${prefix}-${streamId}-${what.name}`,
    AlarmDescription: `Stream ${streamId}: ${what.description}`,
    Namespace: s.metricsNamespace,
    MetricName: what.metricName,
    Dimensions: [
      { Name: 'service', Value: what.service },
      { Name: 'stream', Value: streamId },
    ],
    Statistic: 'Sum',
    Period: periodSeconds,
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: 0,
    EvaluationPeriods: what.evaluationPeriods,
    ...(what.evaluationPeriods > 1 ? { DatapointsToAlarm: what.evaluationPeriods } : {}),
    TreatMissingData: 'notBreaching',
  });
}

/** The sum of several custom metrics of a stream (a missing one counts 0): alarms on any period above 0. */
type SumAlarm = {
  name: string;
  description: string;
  metrics: MetricRef[];
  expressionId: string;
  label: string;
};

function sumAlarm({ s, prefix, periodSeconds }: AlarmContext, streamId: string, what: SumAlarm): CfnResource {
  return alarm({
    AlarmName: `${prefix}-${streamId}-${what.name}`,
    AlarmDescription: `Stream ${streamId}: ${what.description}`,
    Metrics: [
      ...what.metrics.map(([id, name, service, stat]) => metric<Service>(s, id, name, service, streamId, stat, periodSeconds)),
      { Id: what.expressionId, Expression: what.metrics.map(([id]) => `FILL(${id}, 0)`).join(' + '), Label: what.label, ReturnData: true },
    ],
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: 0,
    EvaluationPeriods: 1,
    TreatMissingData: 'notBreaching',
  });
}

/** TotalLag above the threshold and still growing in most planner runs of lagAlarmMinutes. */
function lagGrowingAlarm({ s, prefix, periodSeconds }: AlarmContext, streamId: string): CfnResource {
  const lagPeriods = Math.max(2, Math.ceil((s.lagAlarmMinutes * 60) / periodSeconds));
  return alarm({
    AlarmName: `${prefix}-${streamId}-lag-growing`,
    AlarmDescription:
      `Stream ${streamId}: TotalLag above ${s.lagAlarmThreshold} records and still growing in ` +
      `most planner runs of the last ${s.lagAlarmMinutes} minutes (processing falls behind).`,
    Metrics: [
      metric(s, 'lag', 'TotalLag', 'planner', streamId, 'Maximum', periodSeconds),
      {
        Id: 'growing',
        Expression: `IF(lag > ${s.lagAlarmThreshold} AND DIFF(lag) > 0, 1, 0)`,
        Label: 'lag above threshold and growing',
        ReturnData: true,
      },
    ],
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    Threshold: 1,
    EvaluationPeriods: lagPeriods,
    DatapointsToAlarm: Math.max(2, Math.ceil(lagPeriods * 0.6)),
    TreatMissingData: 'notBreaching',
  });
}

/** How many trigger intervals without a tick the no-tick alarm waits for. */
const NO_TICK_INTERVALS = 3;

/**
 * No tick of the stream's planner loop for three trigger intervals: `TickGapMs` (the longest gap
 * between tick starts in a 10 s window, and the gap across each hand-over) above three intervals,
 * or no `TickGapMs` at all (no planner ticking: missing data breaches). CloudWatch fills in missing
 * data only when its evaluation range (several periods) holds too few datapoints, so one minute
 * without one is not an alarm; a period of at least one interval keeps a slow stream's datapoints
 * (one per two ticks, and one per hand-over) within that range.
 */
function noTickAlarm({ s, prefix }: AlarmContext, stream: StreamConfig): CfnResource {
  const thresholdMs = NO_TICK_INTERVALS * stream.triggerIntervalMs;
  return alarm({
    AlarmName: `${prefix}-${stream.id}-no-tick`,
    AlarmDescription:
      `Stream ${stream.id}: no planner tick for ${NO_TICK_INTERVALS} trigger ` +
      `intervals (${thresholdMs} ms; planner TickGapMs), or no planner ticking at all. ` +
      'Nothing is planned meanwhile. Check `status` (the planner loop: its holder, ' +
      'lease and last tick), the planner-errors and planner-not-running alarms, ' +
      "the planner's log (slow ticks: Kafka or the ledger; a timed-out invocation) and the schedule's dead-letter queue.",
    Namespace: s.metricsNamespace,
    MetricName: 'TickGapMs' satisfies PlannerMetric,
    Dimensions: [
      { Name: 'service', Value: 'planner' },
      { Name: 'stream', Value: stream.id },
    ],
    Statistic: 'Maximum',
    Period: 60 * Math.max(1, Math.ceil(stream.triggerIntervalMs / 60_000)),
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: thresholdMs,
    EvaluationPeriods: 1,
    TreatMissingData: 'breaching',
  });
}

/** Periods in a row with a partition of a continuous stream without a live segment before the alarm fires. */
const SEGMENTS_MISSING_PERIODS = 3;

/**
 * A continuous stream with a partition without a live segment (planner `SegmentsMissing`, the most
 * in a period) in 3 periods in a row: one of a minute, or of the trigger interval rounded up to
 * whole minutes, so that each period holds a tick. A dead segment is counted from its lease's end
 * until the tick that sends its ranges again; three periods in a row mean segments that do not
 * start or do not last (throttled, failing, or a concurrency cap that leaves partitions without one).
 */
function segmentsMissingAlarm({ s, prefix }: AlarmContext, stream: StreamConfig): CfnResource {
  const periodSeconds = 60 * Math.max(1, Math.ceil(stream.triggerIntervalMs / 60_000));
  return alarm({
    AlarmName: `${prefix}-${stream.id}-segments-missing`,
    AlarmDescription:
      `Stream ${stream.id}: partitions without a live segment (planner SegmentsMissing above 0) in ` +
      `${SEGMENTS_MISSING_PERIODS} consecutive periods of ${periodSeconds} s: their records are not read. Check \`status\` ` +
      "(the open segment ranges: lease, attempts, last error), the segments function's errors, throttles " +
      '(segmentReservedConcurrency) and log, the processor-failures queue, and partitions waiting for concurrency.',
    Namespace: s.metricsNamespace,
    MetricName: 'SegmentsMissing' satisfies PlannerMetric,
    Dimensions: [
      { Name: 'service', Value: 'planner' },
      { Name: 'stream', Value: stream.id },
    ],
    Statistic: 'Maximum',
    Period: periodSeconds,
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: 0,
    EvaluationPeriods: SEGMENTS_MISSING_PERIODS,
    DatapointsToAlarm: SEGMENTS_MISSING_PERIODS,
    // No planner ticking is the no-tick alarm's to say.
    TreatMissingData: 'notBreaching',
  });
}

/**
 * The alarms of every stream, in this order; logical ID `<kind><stream>Alarm`. `when`: only for a
 * stack whose settings (or a stream whose config) call for it.
 */
const STREAM_ALARMS: {
  kind: string;
  build: (ctx: AlarmContext, streamId: string, stream: StreamConfig) => CfnResource;
  when?: (s: Settings, stream: StreamConfig) => boolean;
}[] = [
  { kind: 'LagGrowing', build: lagGrowingAlarm },
  {
    kind: 'DataLoss',
    build: (ctx, streamId) =>
      sumAlarm(ctx, streamId, {
        name: 'data-loss',
        description:
          'retention deleted offsets that were never processed (planner DataLossEvents/DataLossRecords, ' +
          'processor DataLossRecords). The ledger records the exact spans.',
        metrics: [
          ['plannerEvents', 'DataLossEvents', 'planner', 'Sum'],
          ['plannerRecords', 'DataLossRecords', 'planner', 'Sum'],
          ['processorRecords', 'DataLossRecords', 'processor', 'Sum'],
        ],
        expressionId: 'loss',
        label: 'data loss',
      }),
  },
  {
    // The old topic's unread records are gone with it, and the stream now reads the new one; the ledger
    // keeps what the old incarnation had committed and planned (`status` shows it).
    kind: 'TopicRecreated',
    build: (ctx, streamId) =>
      countAlarm(ctx, streamId, {
        name: 'topic-recreated',
        metricName: 'TopicRecreated',
        service: 'planner',
        evaluationPeriods: 1,
        description:
          'a topic was deleted and re-created under the same name (planner TopicRecreated); the old incarnation was ' +
          'closed with a record of what it had committed and planned, and the new one is read per recreatedTopicOffsets.',
      }),
  },
  {
    // A listed topic Kafka does not have, or a pattern matching none: the stream plans nothing and
    // fails nothing, so without this alarm a typo in the config is silent.
    kind: 'TopicsMissing',
    build: (ctx, streamId) =>
      countAlarm(ctx, streamId, {
        name: 'topics-missing',
        metricName: 'TopicsMissing',
        service: 'planner',
        evaluationPeriods: 1,
        description:
          'a topic of the stream config does not exist in Kafka, or its topicPattern ' +
          'matches no topic (planner TopicsMissing); those topics are not read.',
      }),
  },
  {
    // A dead leader stalls its partitions until re-election (about 10 s); longer means a broker is down
    // for good or a partition has no in-sync replica.
    kind: 'PartitionsUnavailable',
    build: (ctx, streamId) =>
      countAlarm(ctx, streamId, {
        name: 'partitions-unavailable',
        metricName: 'PartitionsUnavailable',
        service: 'planner',
        evaluationPeriods: 3,
        description:
          'partitions whose offsets could not be read (leader unreachable, no leader) in ' +
          '3 consecutive periods (planner PartitionsUnavailable); the run plans the others.',
      }),
  },
  {
    kind: 'FailedRanges',
    build: (ctx, streamId) =>
      sumAlarm(ctx, streamId, {
        name: 'failed-ranges',
        description:
          'ranges parked after maxAttempts, or partitions failed (planner RangesParked/PartitionsFailed, ' +
          'processor RangesParked). Nothing advances there until an operator acts.',
        metrics: [
          ['plannerParked', 'RangesParked', 'planner', 'Sum'],
          ['processorParked', 'RangesParked', 'processor', 'Sum'],
          ['partitionsFailed', 'PartitionsFailed', 'planner', 'Maximum'],
        ],
        expressionId: 'failed',
        label: 'failed ranges',
      }),
  },
  {
    kind: 'DeadLetters',
    build: (ctx, streamId) =>
      countAlarm(ctx, streamId, {
        name: 'dead-letters',
        metricName: 'DeadLetters',
        service: 'processor',
        evaluationPeriods: 1,
        description: 'the handler rejected records after maxAttempts and they were dead-lettered in the ledger (processor DeadLetters).',
      }),
  },
  {
    kind: 'PlannerFailed',
    build: (ctx, streamId) =>
      countAlarm(ctx, streamId, {
        name: 'planner-failed',
        metricName: 'PlannerFailed',
        service: 'planner',
        evaluationPeriods: 3,
        description: "the planner run failed in 3 consecutive triggers (PlannerFailed); see the planner's log for the reason.",
      }),
  },
  // Without the schedule nothing loops, and the missing metric would keep it firing.
  { kind: 'NoTick', build: (ctx, _id, stream) => noTickAlarm(ctx, stream), when: (s) => s.scheduleEnabled },
  // Continuous streams only: their partitions are read by resident segments.
  { kind: 'SegmentsMissing', build: (ctx, _id, stream) => segmentsMissingAlarm(ctx, stream), when: (_s, stream) => isContinuous(stream) },
];

function streamAlarms(ctx: AlarmContext, config: DeploymentConfig): CfnResources {
  const names = streamLogicalNames(config.streams);
  const resources: CfnResources = {};
  for (const stream of config.streams) {
    const n = names.get(stream.id) as string;
    for (const { kind, build, when } of STREAM_ALARMS) {
      if (!when || when(ctx.s, stream)) resources[`${kind}${n}Alarm`] = build(ctx, stream.id, stream);
    }
  }
  return resources;
}

/** The planner function's errors, and its invocations while the schedule is enabled. */
function plannerFunctionAlarms({ s, prefix, periodSeconds }: AlarmContext): CfnResources {
  const dimensions = [{ Name: 'FunctionName', Value: s.names.planner }];
  const resources: CfnResources = {
    PlannerErrorsAlarm: alarm({
      AlarmName: `${prefix}-planner-errors`,
      AlarmDescription: 'The planner function failed (error or timeout) in 3 consecutive periods.',
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: dimensions,
      Statistic: 'Sum',
      Period: periodSeconds,
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    }),
  };
  if (s.scheduleEnabled) {
    resources.PlannerNotRunningAlarm = alarm({
      AlarmName: `${prefix}-planner-not-running`,
      AlarmDescription: `The planner was not invoked for 3 periods although its schedule (${s.scheduleRate}) is enabled.`,
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: dimensions,
      Statistic: 'Sum',
      Period: periodSeconds,
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      EvaluationPeriods: 3,
      TreatMissingData: 'breaching',
    });
  }
  return resources;
}

/** A message in a failure queue. */
function queueAlarm({ prefix }: AlarmContext, queueId: string, what: { name: string; description: string }): CfnResource {
  return alarm({
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
  });
}

function queueAlarms(ctx: AlarmContext): CfnResources {
  return {
    ProcessorFailuresAlarm: queueAlarm(ctx, IDS.processorFailureQueue, {
      name: 'processor-failures',
      description:
        'Processor invocations failed or expired in the async queue (on-failure ' +
        'destination). The planner re-dispatches their ranges; the messages tell why.',
    }),
    ScheduleDeadLettersAlarm: queueAlarm(ctx, IDS.scheduleDeadLetterQueue, {
      name: 'schedule-dead-letters',
      description: 'Scheduled planner invocations could not be delivered to the planner function (dead-letter queue).',
    }),
  };
}

/** Alarms per stream on the custom metrics, stack-wide alarms on Lambda and SQS, and a dashboard. */
export function observability(s: Settings, config: DeploymentConfig): { Resources: CfnResources } {
  // One planner run per period (at least CloudWatch's 60 s): a cron schedule counts as one minute.
  const periodSeconds = Math.max(60, Math.floor((s.schedulePeriodMs ?? 60_000) / 1000));
  const ctx: AlarmContext = { s, prefix: `${s.service}-${s.stage}`, periodSeconds };
  const alarms: CfnResources = { ...streamAlarms(ctx, config), ...plannerFunctionAlarms(ctx), ...queueAlarms(ctx) };
  const resources: CfnResources = {
    ...alarms,
    [IDS.dashboard]: {
      Type: 'AWS::CloudWatch::Dashboard',
      Properties: {
        DashboardName: s.names.dashboard,
        DashboardBody: dashboardBody(s, config, Object.keys(alarms), ctx.periodSeconds, NO_TICK_INTERVALS),
      },
    },
  };
  if (s.alarmEmail) {
    resources.AlarmEmailSubscription = {
      Type: 'AWS::SNS::Subscription',
      Properties: { TopicArn: { Ref: IDS.alarmTopic }, Protocol: 'email', Endpoint: s.alarmEmail },
    };
  }
  return { Resources: resources };
}
