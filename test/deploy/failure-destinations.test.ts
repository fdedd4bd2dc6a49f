/**
 * IAM of failure destinations (`onFailure`): both roles may write exactly the named queues, topics,
 * bucket prefixes and (MSK IAM) Kafka topics, and delete the ledger's outbox items; a stage without
 * destinations gets none of it. First through the builders, then in a template packaged offline with
 * osls (and checked by cfn-lint).
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseDeploymentConfig, type DeploymentConfig, type StreamConfigInput } from '../../lib/config/schema';
import { iamRoles, type RawSettings, type Statement } from '../../infra/cfn/builders';
import { deploySettings } from '../support/deploy-settings';
import { cfnLint, checkov, ROOT, slsPackage, type Packaged } from './package';

const FIXTURE = 'test/deploy/fixtures/streams.failure-destinations.json';
const MSK_CLUSTER = 'arn:aws:kafka:eu-west-1:123456789012:cluster/ci/abcd1234-ab12-cd34-ef56-abcdef123456-2';
const VPC = { vpcSubnetIds: 'subnet-0123456789abcdef0', vpcSecurityGroupIds: 'sg-0123456789abcdef0' };

/** What every role gets for the fixture's destinations, in order. */
const DESTINATION_STATEMENTS: Statement[] = [
  { Sid: 'LedgerOutbox', Effect: 'Allow', Action: ['dynamodb:DeleteItem'], Resource: [{ 'Fn::GetAtt': ['LedgerTable', 'Arn'] }] },
  {
    Sid: 'DeadLetterQueues',
    Effect: 'Allow',
    Action: ['sqs:SendMessage'],
    Resource: ['arn:aws:sqs:eu-west-1:123456789012:payments-dead-letters', 'arn:aws:sqs:eu-west-1:123456789012:refunds-dead-letters'],
  },
  { Sid: 'DeadLetterTopics', Effect: 'Allow', Action: ['sns:Publish'], Resource: ['arn:aws:sns:eu-west-1:123456789012:payments-failures'] },
  {
    Sid: 'DeadLetterObjects',
    Effect: 'Allow',
    Action: ['s3:PutObject'],
    Resource: [
      { 'Fn::Sub': 'arn:${AWS::Partition}:s3:::payments-failures/dead-letters/*' },
      { 'Fn::Sub': 'arn:${AWS::Partition}:s3:::refunds-failures/*' },
    ],
  },
  {
    Sid: 'MskDeadLetterTopics',
    Effect: 'Allow',
    Action: ['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'],
    Resource: ['arn:aws:kafka:eu-west-1:123456789012:topic/ci/abcd1234-ab12-cd34-ef56-abcdef123456-2/payments-dlt'],
  },
];
const DESTINATION_SIDS = new Set(DESTINATION_STATEMENTS.map((st) => st.Sid));

const raw = () => JSON.parse(readFileSync(join(ROOT, FIXTURE), 'utf8')) as { streams: StreamConfigInput[] };
const config = (streams = raw().streams): DeploymentConfig => parseDeploymentConfig({ ledgerTable: 'svc-test-ledger', streams }, 'test');
const settings = (over: RawSettings = {}) => deploySettings({ mskClusterArns: MSK_CLUSTER, ...VPC, ...over });
type RoleLike = { Properties: Record<string, unknown> };
const statementsOf = (role: unknown): Statement[] =>
  ((role as RoleLike).Properties.Policies as Array<{ PolicyDocument: { Statement: Statement[] } }>).flatMap(
    (p) => p.PolicyDocument.Statement,
  );
const destinationStatements = (role: unknown) => statementsOf(role).filter((st) => DESTINATION_SIDS.has(st.Sid));

describe('the builders', () => {
  it('give both roles exactly the named destinations', () => {
    const roles = iamRoles(settings(), config()).Resources;
    expect(destinationStatements(roles.ProcessorRole)).toEqual(DESTINATION_STATEMENTS);
    expect(destinationStatements(roles.PlannerRole)).toEqual(DESTINATION_STATEMENTS);
  });

  it('grant no Kafka write where the broker or an assumed role decides it', () => {
    const streams = raw().streams;
    const roleArn = 'arn:aws:iam::210987654321:role/kafka-writer';
    streams[0]!.kafka = { ...streams[0]!.kafka, sasl: { mechanism: 'aws-msk-iam', region: 'eu-west-1', roleArn } };
    const viaRole = statementsOf(iamRoles(settings(), config(streams)).Resources.ProcessorRole);
    expect(viaRole.map((st) => st.Sid)).not.toContain('MskDeadLetterTopics');
    streams[0]!.kafka = { brokers: ['kafka-1.example.com:9093'], ssl: true };
    const selfHosted = statementsOf(iamRoles(settings(), config(streams)).Resources.ProcessorRole);
    expect(selfHosted.map((st) => st.Sid)).not.toContain('MskDeadLetterTopics');
    expect(selfHosted.find((st) => st.Sid === 'DeadLetterQueues')?.Resource).toHaveLength(2);
  });

  it('give a stage without destinations none of it', () => {
    const roles = iamRoles(settings(), config(raw().streams.slice(2))).Resources;
    expect(destinationStatements(roles.ProcessorRole)).toEqual([]);
    expect(destinationStatements(roles.PlannerRole)).toEqual([]);
    // The processor's own on-failure queue (failed async invocations) is another matter.
    const own = (st: Statement) => st.Sid !== 'OnFailureDestination';
    const all = JSON.stringify([statementsOf(roles.ProcessorRole).filter(own), statementsOf(roles.PlannerRole)]);
    for (const action of ['sqs:SendMessage', 'sns:Publish', 's3:PutObject', 'kafka-cluster:WriteData', 'dynamodb:DeleteItem'])
      expect(all).not.toContain(action);
  });
});

describe('sls package', () => {
  let packaged: Packaged;
  beforeAll(() => {
    packaged = slsPackage('destinations', 'eu-west-1', { streamsConfig: FIXTURE, mskClusterArns: MSK_CLUSTER, ...VPC });
  }, 240_000);
  afterAll(() => {
    if (packaged) rmSync(packaged.dir, { recursive: true, force: true });
  });

  it('gives both roles exactly the named destinations, and nothing else sends, publishes or puts', () => {
    for (const role of ['ProcessorRole', 'PlannerRole']) {
      const statements = statementsOf(packaged.template.Resources[role]);
      expect(statements.filter((st) => DESTINATION_SIDS.has(st.Sid))).toEqual(DESTINATION_STATEMENTS);
      const others = JSON.stringify(statements.filter((st) => !DESTINATION_SIDS.has(st.Sid) && st.Sid !== 'OnFailureDestination'));
      for (const action of ['sqs:SendMessage', 'sns:Publish', 's3:PutObject', 'kafka-cluster:WriteData', 'dynamodb:DeleteItem'])
        expect(others).not.toContain(action);
    }
  });

  it('is a template cfn-lint finds no error or warning in', () => {
    const { status, output } = cfnLint(packaged.templatePath, 'eu-west-1');
    if (status !== 0) throw new Error(`cfn-lint exited ${status}:\n${output}`);
  }, 300_000);

  it('is a template the security scan fails no check of', () => {
    const report = checkov(packaged.templatePath);
    expect(report.failed.map((f) => `${f.checkId} ${f.resource}`)).toEqual([]);
  }, 300_000);
});
