/** Encryption at rest: the tables' SSE settings, the alarm topic's KMS key and the log groups' optional key. */
import { getAtt, sub, subLiteral, type Cfn, type CfnResources } from './cfn';
import { alarmArnPattern, IDS } from './names';
import type { DeploymentConfig } from '../../lib/config/schema';
import { hasSegmentsFunction } from './functions';
import type { Settings } from './settings';

/** Table encryption at rest with KMS: the AWS managed key (aws/dynamodb), or tableKmsKeyArn. */
export function tableSse(s: Settings): Record<string, Cfn> {
  return s.tableKmsKeyArn ? { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: s.tableKmsKeyArn } : { SSEEnabled: true, SSEType: 'KMS' };
}

/** The key policy statement without which nobody could change or delete a key (KMS refuses such a policy). */
const ACCOUNT_ADMINISTERS = {
  Sid: 'AccountAdministers',
  Effect: 'Allow',
  Principal: { AWS: sub('arn:${AWS::Partition}:iam::${AWS::AccountId}:root') },
  Action: 'kms:*',
  Resource: '*',
};

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
              ACCOUNT_ADMINISTERS,
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

/**
 * The log groups' customer managed key (logsKmsKey): none (CloudWatch Logs' own encryption at rest),
 * a key ARN (whose policy must already admit CloudWatch Logs), or `stack`: a key of the stack whose
 * policy admits `logs.<region>.amazonaws.com` for exactly the functions' log groups (the
 * encryption context CloudWatch Logs sends names the group). The functions write their logs as
 * before: CloudWatch Logs encrypts, so their roles need no KMS permission.
 */
export function logGroupEncryption(
  s: Settings,
  config: Pick<DeploymentConfig, 'streams'>,
): {
  Resources: CfnResources;
  extensions: Record<string, { Properties: Record<string, Cfn> }>;
} {
  if (s.logsKmsKey === undefined) return { Resources: {}, extensions: {} };
  const keyId = s.logsKmsKey === 'stack' ? getAtt(IDS.logsKey, 'Arn') : s.logsKmsKey;
  // The segments function's log group exists only with a continuous stream.
  const segments = hasSegmentsFunction(config);
  const extensions = {
    [IDS.plannerLogGroup]: { Properties: { KmsKeyId: keyId } },
    [IDS.processorLogGroup]: { Properties: { KmsKeyId: keyId } },
    ...(segments ? { [IDS.segmentsLogGroup]: { Properties: { KmsKeyId: keyId } } } : {}),
  };
  const functionNames = [s.names.planner, s.names.processor, ...(segments ? [s.names.segments] : [])];
  if (s.logsKmsKey !== 'stack') return { Resources: {}, extensions };
  const logGroupArn = (fn: string) =>
    sub(`arn:\${AWS::Partition}:logs:\${AWS::Region}:\${AWS::AccountId}:log-group:/aws/lambda/${subLiteral(fn)}`);
  return {
    Resources: {
      [IDS.logsKey]: {
        Type: 'AWS::KMS::Key',
        Properties: {
          Description: `${s.service}-${s.stage}: encrypts the functions' log groups`,
          EnableKeyRotation: true,
          KeyPolicy: {
            Version: '2012-10-17',
            Statement: [
              ACCOUNT_ADMINISTERS,
              {
                Sid: 'CloudWatchLogsOfTheFunctions',
                Effect: 'Allow',
                Principal: { Service: sub('logs.${AWS::Region}.amazonaws.com') },
                Action: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
                Resource: '*',
                Condition: {
                  ArnEquals: { 'kms:EncryptionContext:aws:logs:arn': functionNames.map(logGroupArn) },
                },
              },
            ],
          },
        },
      },
      [IDS.logsKeyAlias]: {
        Type: 'AWS::KMS::Alias',
        Properties: { AliasName: `alias/${s.service}-${s.stage}-logs`, TargetKeyId: { Ref: IDS.logsKey } },
      },
    },
    extensions,
  };
}
