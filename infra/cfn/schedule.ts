/** The planner schedule's target settings (EventBridge Scheduler or an EventBridge rule). */
import { getAtt, type Cfn, type CfnResources } from './cfn';
import { IDS } from './names';
import type { Settings } from './settings';

/** Minimum Lambda async event age / EventBridge retry window, in seconds. */
const MIN_EVENT_AGE_SECONDS = 60;


/**
 * The planner schedule's target settings, applied as `resources.extensions` of the resource the
 * `schedule` event compiles to: a retry window of one trigger interval (a later tick replaces a
 * missed one) and a dead-letter queue for ticks that could not be delivered. With the Scheduler,
 * a dedicated role (not the planner's) is the only principal allowed to invoke the planner.
 */
export function schedule(s: Settings): { Resources: CfnResources; extensions: Record<string, { Properties: Record<string, Cfn> }> } {
  const plannerArn = getAtt(IDS.plannerFunction, 'Arn');
  const dlqArn = getAtt(IDS.scheduleDeadLetterQueue, 'Arn');
  const maxAge = Math.max(MIN_EVENT_AGE_SECONDS, Math.min(86_400, Math.floor((s.schedulePeriodMs ?? 60_000) / 1000)));
  const retryPolicy = { MaximumRetryAttempts: s.scheduleMaximumRetryAttempts, MaximumEventAgeInSeconds: maxAge };
  if (s.scheduleMethod === 'scheduler') {
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
            Description: `Plans the next Kafka offset ranges (${s.scheduleRate})`,
            Target: {
              Arn: plannerArn,
              RoleArn: getAtt(IDS.scheduleRole, 'Arn'),
              // The planner accepts exactly {} (plan every stream); unknown fields are refused.
              Input: '{}',
              RetryPolicy: retryPolicy,
              DeadLetterConfig: { Arn: dlqArn },
            },
          },
        },
      },
    };
  }
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
          Description: `Plans the next Kafka offset ranges (${s.scheduleRate})`,
          Targets: [{ Arn: plannerArn, Id: 'plannerSchedule', RetryPolicy: retryPolicy, DeadLetterConfig: { Arn: dlqArn } }],
        },
      },
    },
  };
}
