/**
 * IAM for failure destinations (`onFailure`): exactly the named queues, topics, bucket prefixes and
 * Kafka topics, on both roles (the processor delivers right after a dead letter's commit, the planner
 * retries what is pending), and the ledger's DeleteItem that removes a delivery once made.
 */
import type { DeploymentConfig, StreamConfig } from '../../lib/config/schema';
import { getAtt, sub, subLiteral, type Statement } from './cfn';
import { IDS } from './names';
import type { Settings } from './settings';

const sorted = (items: Iterable<string>): string[] => [...new Set(items)].sort();

/** Statements for every stream's failure destinations; none when no stream has any. */
export function failureDestinationStatements(s: Settings, config: DeploymentConfig): Statement[] {
  const streams = config.streams.filter((st) => st.onFailure);
  if (streams.length === 0) return [];
  const queues = sorted(streams.flatMap((st) => (st.onFailure?.sqs ? [st.onFailure.sqs] : [])));
  const topics = sorted(streams.flatMap((st) => (st.onFailure?.sns ? [st.onFailure.sns] : [])));
  const objects = sorted(streams.flatMap((st) => (st.onFailure?.s3 ? [`${st.onFailure.s3.bucket}/${st.onFailure.s3.prefix}*`] : [])));
  const statements: Statement[] = [
    // A made delivery's outbox item is deleted (conditionally); nothing else in the ledger is.
    { Sid: 'LedgerOutbox', Effect: 'Allow', Action: ['dynamodb:DeleteItem'], Resource: [getAtt(IDS.ledgerTable, 'Arn')] },
  ];
  if (queues.length) statements.push({ Sid: 'DeadLetterQueues', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: queues });
  if (topics.length) statements.push({ Sid: 'DeadLetterTopics', Effect: 'Allow', Action: ['sns:Publish'], Resource: topics });
  if (objects.length) {
    statements.push({
      Sid: 'DeadLetterObjects',
      Effect: 'Allow',
      Action: ['s3:PutObject'],
      Resource: objects.map((o) => sub(`arn:\${AWS::Partition}:s3:::${subLiteral(o)}`)),
    });
  }
  const kafkaTopics = mskFailureTopicArns(s, streams);
  if (kafkaTopics.length) {
    statements.push({
      Sid: 'MskDeadLetterTopics',
      Effect: 'Allow',
      Action: ['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'],
      Resource: kafkaTopics,
    });
  }
  return statements;
}

/**
 * Failure topics of streams that sign MSK IAM with the functions' own role: WriteData on each
 * cluster's topic. Under SCRAM or mTLS the broker's ACLs decide; with `roleArn` the assumed role's
 * own policy does (the role in the other account must allow WriteData on the topic).
 */
function mskFailureTopicArns(s: Settings, streams: StreamConfig[]): string[] {
  const own = streams.filter(
    (st) => st.kafka.sasl?.mechanism === 'aws-msk-iam' && st.kafka.sasl.roleArn === undefined && st.onFailure?.kafka,
  );
  return sorted(
    s.mskClusterArns.flatMap((cluster) => own.map((st) => `${cluster.replace(':cluster/', ':topic/')}/${st.onFailure?.kafka?.topic}`)),
  );
}
