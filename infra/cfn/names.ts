/** Logical IDs and resource names the stack's parts share. */
import type { StreamConfig } from '../../lib/config/schema';
import { sub, subLiteral, type Cfn } from './cfn';
import type { Settings } from './settings';

/** Logical IDs that serverless.yml, infra/cfn/*.yml and these builders share. */
export const IDS = {
  plannerFunction: 'PlannerLambdaFunction',
  processorFunction: 'ProcessorLambdaFunction',
  segmentsFunction: 'SegmentsLambdaFunction',
  plannerRole: 'PlannerRole',
  processorRole: 'ProcessorRole',
  segmentsRole: 'SegmentsRole',
  scheduleRole: 'PlannerScheduleRole',
  schedulerSchedule: 'PlannerSchedulerSchedule1',
  eventsRule: 'PlannerEventsRuleSchedule1',
  ledgerTable: 'LedgerTable',
  processorFailureQueue: 'ProcessorFailureQueue',
  scheduleDeadLetterQueue: 'ScheduleDeadLetterQueue',
  scheduleDeadLetterQueuePolicy: 'ScheduleDeadLetterQueuePolicy',
  tickQueue: 'PlannerTickQueue',
  tickQueueMapping: 'PlannerTickQueueMapping',
  alarmTopic: 'AlarmTopic',
  alarmTopicKey: 'AlarmTopicKey',
  alarmTopicKeyAlias: 'AlarmTopicKeyAlias',
  alarmTopicPolicy: 'AlarmTopicPolicy',
  logsKey: 'LogsKey',
  logsKeyAlias: 'LogsKeyAlias',
  plannerLogGroup: 'PlannerLogGroup',
  processorLogGroup: 'ProcessorLogGroup',
  segmentsLogGroup: 'SegmentsLogGroup',
  deploymentBucket: 'ServerlessDeploymentBucket',
  dashboard: 'Dashboard',
} as const;

/** A logical-ID-safe, unique name part for each stream id ([a-z0-9_-] -> PascalCase). */
export function streamLogicalNames(streams: Pick<StreamConfig, 'id'>[]): Map<string, string> {
  const used = new Map<string, number>();
  const out = new Map<string, string>();
  for (const { id } of streams) {
    const base = id
      .split(/[^a-z0-9]+/i)
      .filter(Boolean)
      .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
      .join('');
    const n = (used.get(base) ?? 0) + 1;
    used.set(base, n);
    out.set(id, n === 1 ? base : `${base}${n}`);
  }
  return out;
}

/** Every alarm of the stack is named `<service>-<stage>-...`; key and topic policies match them by this ARN pattern. */
export function alarmArnPattern(s: Settings): Cfn {
  return sub(`arn:\${AWS::Partition}:cloudwatch:\${AWS::Region}:\${AWS::AccountId}:alarm:${subLiteral(`${s.service}-${s.stage}`)}-*`);
}
