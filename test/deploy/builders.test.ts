/**
 * The deploy-time checks of infra/cfn/builders.ts (what `sls package` refuses, and why), without
 * packaging: stage params and streams configs that cannot run as deployed fail with a message that
 * names the param or the stream.
 */
import { parseDeploymentConfig, type DeploymentConfig, type DeploymentConfigInput } from '../../lib/config/schema';
import { checkConfig, DeployConfigError, iamRoles, observability, parseSettings, schedulePeriodMs, secretResources, streamLogicalNames, type RawSettings } from '../../infra/cfn/builders';

const DEFAULTS: RawSettings = {
  service: 'svc',
  stage: 'test',
  scheduleRate: 'rate(1 minute)',
  scheduleMethod: 'scheduler',
  scheduleEnabled: true,
  plannerTimeout: 60,
  processorTimeout: 900,
  processorMaximumEventAge: 960,
  processorReservedConcurrency: '',
  mskClusterArns: '',
  vpcSubnetIds: '',
  vpcSecurityGroupIds: '',
};
const settings = (over: RawSettings = {}) => parseSettings({ ...DEFAULTS, ...over });

function config(streams: Array<Partial<DeploymentConfigInput['streams'][number]>>): DeploymentConfig {
  return parseDeploymentConfig(
    {
      ledgerTable: 'svc-test-ledger',
      streams: streams.map((s, i) => ({ id: `s${i}`, kafka: { brokers: ['localhost:9092'] }, topics: ['t'], ...s })),
    },
    'test',
  );
}

function problem(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DeployConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a DeployConfigError');
}

describe('stage params', () => {
  it('parse the schedule period from rate expressions (cron has none)', () => {
    expect(schedulePeriodMs('rate(1 minute)')).toBe(60_000);
    expect(schedulePeriodMs('rate(5 minutes)')).toBe(300_000);
    expect(schedulePeriodMs('rate(2 hours)')).toBe(7_200_000);
    expect(schedulePeriodMs('cron(0/5 * * * ? *)')).toBeUndefined();
    expect(problem(() => schedulePeriodMs('rate(1 minutes)'))).toMatch(/rate\(1 minute\)/);
    expect(problem(() => schedulePeriodMs('every minute'))).toMatch(/scheduleRate/);
  });

  it('refuse half a VPC, a malformed MSK cluster ARN and an unknown schedule method', () => {
    expect(problem(() => settings({ vpcSubnetIds: 'subnet-1' }))).toMatch(/vpcSubnetIds and vpcSecurityGroupIds go together/);
    expect(problem(() => settings({ mskClusterArns: 'arn:aws:kafka:us-east-1:123456789012:topic/x/y/z' }))).toMatch(/mskClusterArns/);
    expect(problem(() => settings({ scheduleMethod: 'cron' }))).toMatch(/scheduleMethod/);
    expect(problem(() => settings({ processorReservedConcurrency: '0' }))).toMatch(/processorReservedConcurrency/);
    expect(problem(() => settings({ processorTimeout: '901' }))).toMatch(/processorTimeout must be a whole number between 1 and 900/);
  });

  it('take comma-separated lists and unset optional values as "none"', () => {
    const s = settings({ vpcSubnetIds: 'subnet-1, subnet-2', vpcSecurityGroupIds: 'sg-1', processorReservedConcurrency: '10' });
    expect(s.vpc).toEqual({ subnetIds: ['subnet-1', 'subnet-2'], securityGroupIds: ['sg-1'] });
    expect(s.processorReservedConcurrency).toBe(10);
    expect(settings().vpc).toBeUndefined();
    expect(settings().processorReservedConcurrency).toBeUndefined();
    expect(settings().names).toEqual({
      planner: 'svc-test-planner',
      processor: 'svc-test-processor',
      ledgerTable: 'svc-test-ledger',
      runningTotalsTable: 'svc-test-running-totals',
      dashboard: 'svc-test',
    });
  });
});

describe('streams config against the stage', () => {
  it('accepts a config that fits', () => {
    expect(() => checkConfig(settings(), config([{ processor: { timeoutMs: 300_000 } }]))).not.toThrow();
  });

  it('lists every misfit: trigger interval vs schedule, processor timeout, audit table, MSK cluster', () => {
    const message = problem(() =>
      checkConfig(
        settings({ processorTimeout: 300 }),
        config([
          { triggerIntervalMs: 120_000, processor: { timeoutMs: 300_000 } },
          { processor: { timeoutMs: 600_000 } },
          { processor: { timeoutMs: 300_000 }, handler: { module: 'audit-log', mode: 'at-least-once' } },
          { processor: { timeoutMs: 300_000 }, kafka: { brokers: ['b-1:9098'], sasl: { mechanism: 'aws-msk-iam', region: 'us-east-1' } } },
        ]),
      ),
    );
    expect(message).toContain('stream s0: triggerIntervalMs is 120000 but the planner runs rate(1 minute)');
    expect(message).toContain('stream s1: processor.timeoutMs is 600000 but the processor function times out after 300 s');
    expect(message).toContain('stream s2: handler "audit-log" writes to AUDIT_LOG_TABLE: set the auditLogTable param');
    expect(message).toContain('stream s3: aws-msk-iam needs the mskClusterArns param');
  });

  it('does not tie the trigger interval to a cron schedule', () => {
    expect(() => checkConfig(settings({ scheduleRate: 'cron(*/2 * * * ? *)' }), config([{ triggerIntervalMs: 120_000 }]))).not.toThrow();
  });
});

describe('IAM resources', () => {
  it('turns secret names, partial and complete ARNs into the ARNs IAM matches', () => {
    const { secrets, parameters } = secretResources(
      settings({ kafkaSecretArns: 'arn:aws:ssm:us-east-1:123456789012:parameter/extra' }),
      config([
        { kafka: { brokers: ['b:9096'], sasl: { mechanism: 'scram-sha-512', username: 'u', password: { secretArn: 'kafka/app' } } } },
        { kafka: { brokers: ['b:9096'], sasl: { mechanism: 'scram-sha-512', username: 'u', password: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/app2' } } } },
        { kafka: { brokers: ['b:9096'], sasl: { mechanism: 'scram-sha-512', username: 'u', password: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/app3-Ab12Cd' } } } },
        { kafka: { brokers: ['b:9096'], sasl: { mechanism: 'plain', username: 'u', password: { ssmParameter: 'kafka-password' } } } },
        { kafka: { brokers: ['b:9096'], sasl: { mechanism: 'plain', username: 'u', password: { env: 'KAFKA_PASSWORD' } } } },
      ]),
    );
    expect(secrets).toEqual([
      { 'Fn::Sub': 'arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:kafka/app-??????' },
      'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/app2-??????',
      'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/app3-Ab12Cd',
    ]);
    expect(parameters).toEqual([
      { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/kafka-password' },
      'arn:aws:ssm:us-east-1:123456789012:parameter/extra',
    ]);
    expect(problem(() => secretResources(settings({ kafkaSecretArns: 'arn:aws:s3:::bucket' }), config([{}])))).toMatch(/kafkaSecretArns/);
  });

  it('gives a topicPattern stream every topic of the MSK cluster (a regex has no IAM form)', () => {
    const cluster = 'arn:aws:kafka:us-east-1:123456789012:cluster/c/11111111-2222-3333-4444-555555555555-1';
    const roles = iamRoles(
      settings({ mskClusterArns: cluster }),
      config([{ topics: undefined, topicPattern: 'orders-.*', kafka: { brokers: ['b:9098'], sasl: { mechanism: 'aws-msk-iam', region: 'us-east-1' } } }]),
    );
    const statements = (roles.Resources.ProcessorRole!.Properties.Policies as Array<{ PolicyDocument: { Statement: Array<{ Sid: string; Resource: unknown[] }> } }>)[0]!
      .PolicyDocument.Statement;
    expect(statements.find((s) => s.Sid === 'MskTopics')!.Resource).toEqual(['arn:aws:kafka:us-east-1:123456789012:topic/c/11111111-2222-3333-4444-555555555555-1/*']);
    expect(statements.find((s) => s.Sid === 'MskConsumerGroups')).toBeUndefined();
    expect(statements.find((s) => s.Sid === 'SinkTables')).toBeUndefined();
  });

  it('alarms on a topic re-created under its name, per stream (planner TopicRecreated)', () => {
    const { Resources } = observability(settings(), config([{ id: 'orders' }]));
    expect(Resources.TopicRecreatedOrdersAlarm?.Properties).toMatchObject({
      AlarmName: expect.stringMatching(/-orders-topic-recreated$/),
      MetricName: 'TopicRecreated',
      Dimensions: [
        { Name: 'service', Value: 'planner' },
        { Name: 'stream', Value: 'orders' },
      ],
      Statistic: 'Sum',
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      AlarmActions: [{ Ref: 'AlarmTopic' }],
    });
  });

  it('names alarm resources uniquely per stream', () => {
    expect([...streamLogicalNames([{ id: 'a-b' }, { id: 'a_b' }, { id: 'orders' }]).values()]).toEqual(['AB', 'AB2', 'Orders']);
  });
});
