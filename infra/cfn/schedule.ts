/** The planner schedule's target settings (EventBridge Scheduler or an EventBridge rule). */
import { getAtt, type Cfn, type CfnResources } from './cfn';
import { IDS } from './names';
import type { Settings } from './settings';

/** Minimum Lambda async event age / EventBridge retry window, in seconds. */
const MIN_EVENT_AGE_SECONDS = 60;

/**
 * The planner schedule's target settings, applied as `resources.extensions` of the resource the
 * `schedule` event compiles to: a retry window of one schedule period (the next invocation replaces
 * a missed one) and a dead-letter queue for invocations that could not be delivered. With the Scheduler,
 * a dedicated role (not the planner's) is the only principal allowed to invoke the planner.
 */
export function schedule(s: Settings): ScheduleParts {
  const maxAge = Math.max(MIN_EVENT_AGE_SECONDS, Math.min(86_400, Math.floor((s.schedulePeriodMs ?? 60_000) / 1000)));
  const target: TargetSettings = {
    plannerArn: getAtt(IDS.plannerFunction, 'Arn'),
    dlqArn: getAtt(IDS.scheduleDeadLetterQueue, 'Arn'),
    retryPolicy: { MaximumRetryAttempts: s.scheduleMaximumRetryAttempts, MaximumEventAgeInSeconds: maxAge },
    description: `Plans the next Kafka offset ranges (${s.scheduleRate})`,
  };
  return s.scheduleMethod === 'scheduler' ? schedulerSchedule(s, target) : eventsRuleSchedule(target);
}

type ScheduleParts = { Resources: CfnResources; extensions: Record<string, { Properties: Record<string, Cfn> }> };

/** What both kinds of schedule give their target: the planner, the retry window and the dead-letter queue. */
type TargetSettings = { plannerArn: Cfn; dlqArn: Cfn; retryPolicy: Record<string, number>; description: string };

/** EventBridge Scheduler: a role of its own that may invoke the planner and send to the dead-letter queue. */
function schedulerSchedule(s: Settings, { plannerArn, dlqArn, retryPolicy, description }: TargetSettings): ScheduleParts {
  return {
    Resources: {
      [IDS.scheduleRole]: {
        Type: 'AWS::IAM::Role',
        Properties: {
          Description: `EventBridge Scheduler: invokes ${s.names.planner} only`,
          AssumeRolePolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              {
                Effect: 'Allow',
                Principal: { Service: 'scheduler.amazonaws.com' },
                Action: 'sts:AssumeRole',
                Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
              },
            ],
          },
          Policies: [
            {
              PolicyName: 'invoke-planner',
              PolicyDocument: {
                Version: '2012-10-17',
                Statement: [
                  { Sid: 'InvokePlanner', Effect: 'Allow', Action: ['lambda:InvokeFunction'], Resource: [plannerArn] },
                  { Sid: 'DeadLetters', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [dlqArn] },
                ],
              },
            },
          ],
        },
      },
    },
    extensions: {
      [IDS.schedulerSchedule]: {
        Properties: {
          Description: description,
          Target: {
            Arn: plannerArn,
            RoleArn: getAtt(IDS.scheduleRole, 'Arn'),
            // Every stream, in a loop of ticks for the invocation's time (lib/planner/payload.ts); unknown fields are refused.
            Input: '{"loop":true}',
            RetryPolicy: retryPolicy,
            DeadLetterConfig: { Arn: dlqArn },
          },
        },
      },
    },
  };
}

/** EventBridge rule: the rule itself (by its ARN) may send to the dead-letter queue. */
function eventsRuleSchedule({ plannerArn, dlqArn, retryPolicy, description }: TargetSettings): ScheduleParts {
  return {
    Resources: {
      [IDS.scheduleDeadLetterQueuePolicy]: {
        Type: 'AWS::SQS::QueuePolicy',
        Properties: {
          Queues: [{ Ref: IDS.scheduleDeadLetterQueue }],
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              {
                Sid: 'RuleDeadLetters',
                Effect: 'Allow',
                Principal: { Service: 'events.amazonaws.com' },
                Action: 'sqs:SendMessage',
                Resource: dlqArn,
                Condition: { ArnEquals: { 'aws:SourceArn': getAtt(IDS.eventsRule, 'Arn') } },
              },
            ],
          },
        },
      },
    },
    extensions: {
      [IDS.eventsRule]: {
        Properties: {
          Description: description,
          Targets: [{ Arn: plannerArn, Id: 'plannerSchedule', RetryPolicy: retryPolicy, DeadLetterConfig: { Arn: dlqArn } }],
        },
      },
    },
  };
}
