/** Encryption at rest: the tables' SSE settings and the alarm topic's KMS key. */
import { sub, type Cfn, type CfnResources } from './cfn';
import { alarmArnPattern, IDS } from './names';
import type { Settings } from './settings';

/** Table encryption at rest with KMS: the AWS managed key (aws/dynamodb), or tableKmsKeyArn. */
export function tableSse(s: Settings): Record<string, Cfn> {
  return s.tableKmsKeyArn ? { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: s.tableKmsKeyArn } : { SSEEnabled: true, SSEType: 'KMS' };
}

/**
 * The alarm topic's customer managed KMS key, its alias and the topic policy. CloudWatch publishes an
 * alarm to an encrypted topic only with kms:Decrypt and kms:GenerateDataKey* on the topic's key, which
 * the AWS managed alias/aws/sns key's policy cannot grant: with it every alarm would deliver nothing.
 * Both grants are limited to this account's alarms of this stack (confused deputy).
 */
export function alarmTopicEncryption(s: Settings): { Resources: CfnResources } {
  const fromStackAlarms = {
    StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
    ArnLike: { 'aws:SourceArn': alarmArnPattern(s) },
  };
  return {
    Resources: {
      [IDS.alarmTopicKey]: {
        Type: 'AWS::KMS::Key',
        Properties: {
          Description: `${s.service}-${s.stage}: encrypts the alarm topic; CloudWatch alarms of the stack may use it`,
          EnableKeyRotation: true,
          KeyPolicy: {
            Version: '2012-10-17',
            Statement: [
              {
                // Without it nobody could change or delete the key (KMS refuses such a policy).
                Sid: 'AccountAdministers',
                Effect: 'Allow',
                Principal: { AWS: sub('arn:${AWS::Partition}:iam::${AWS::AccountId}:root') },
                Action: 'kms:*',
                Resource: '*',
              },
              {
                Sid: 'CloudWatchAlarmsPublish',
                Effect: 'Allow',
                Principal: { Service: 'cloudwatch.amazonaws.com' },
                Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
                Resource: '*',
                Condition: fromStackAlarms,
              },
            ],
          },
        },
      },
      [IDS.alarmTopicKeyAlias]: {
        Type: 'AWS::KMS::Alias',
        Properties: { AliasName: `alias/${s.service}-${s.stage}-alarms`, TargetKeyId: { Ref: IDS.alarmTopicKey } },
      },
      [IDS.alarmTopicPolicy]: {
        Type: 'AWS::SNS::TopicPolicy',
        Properties: {
          Topics: [{ Ref: IDS.alarmTopic }],
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: [
              {
                Sid: 'CloudWatchAlarmsPublish',
                Effect: 'Allow',
                Principal: { Service: 'cloudwatch.amazonaws.com' },
                Action: 'sns:Publish',
                Resource: { Ref: IDS.alarmTopic },
                Condition: fromStackAlarms,
              },
            ],
          },
        },
      },
    },
  };
}
