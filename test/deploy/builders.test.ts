/**
 * The deploy-time checks of infra/cfn/builders.ts (what `sls package` refuses, and why), without
 * packaging: stage params and streams configs that cannot run as deployed fail with a message that
 * names the param or the stream.
 */
import { parseDeploymentConfig, type DeploymentConfig, type DeploymentConfigInput } from '../../lib/config/schema';
import {
  alarmTopicEncryption,
  checkConfig,
  DeployConfigError,
  iamRoles,
  logGroupEncryption,
  scanSkips,
  needsVpc,
  observability,
  plannerEnvironment,
  processorEnvironment,
  schedulePeriodMs,
  secretResources,
  sinkTableResources,
  streamLogicalNames,
  chainedStreams,
  tickChain,
  tickChainStatements,
} from '../../infra/cfn/builders';
import { deploySettings } from '../support/deploy-settings';

const settings = deploySettings;

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

async function configProblem(s: ReturnType<typeof settings>, c: DeploymentConfig): Promise<string> {
  try {
    await checkConfig(s, c);
  } catch (e) {
    expect(e).toBeInstanceOf(DeployConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a DeployConfigError');
}

const HANDLED = { handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'svc-test-running-totals' } } as const;
const MSK_IAM = {
  brokers: ['b-1.c.abc123.c2.kafka.us-east-1.amazonaws.com:9098'],
  sasl: { mechanism: 'aws-msk-iam' as const, region: 'us-east-1' },
};
const MSK_CLUSTER = 'arn:aws:kafka:us-east-1:123456789012:cluster/c/11111111-2222-3333-4444-555555555555-1';

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

  it('refuse a planner timeout that does not outlast the schedule period by 20 s, in one line naming both params', () => {
    expect(problem(() => settings({ plannerTimeout: 60 }))).toBe(
      'param plannerTimeout is 60 s but param scheduleRate is rate(1 minute) (60 s): set plannerTimeout to at least 80 (the period + 20 s), ' +
        'so that each planner invocation is still ticking when the next one arrives to take over',
    );
    expect(settings({ plannerTimeout: 80 }).plannerTimeoutSeconds).toBe(80);
    expect(problem(() => settings({ scheduleRate: 'rate(5 minutes)' }))).toMatch(/^param plannerTimeout is 90 s .* at least 320 /);
    expect(settings({ scheduleRate: 'rate(5 minutes)', plannerTimeout: '320' }).schedulePeriodMs).toBe(300_000);
    // A cron schedule has no fixed period to compare with.
    expect(settings({ scheduleRate: 'cron(0/5 * * * ? *)', plannerTimeout: 60 }).plannerTimeoutSeconds).toBe(60);
  });

  it('refuse a schedule period no planner timeout can outlast (Lambda stops at 900 s): 14 minutes at most', () => {
    expect(settings({ scheduleRate: 'rate(14 minutes)', plannerTimeout: 900 }).schedulePeriodMs).toBe(840_000);
    for (const rate of ['rate(15 minutes)', 'rate(1 hour)', 'rate(1 day)']) {
      const message = problem(() => settings({ scheduleRate: rate, plannerTimeout: 900 }));
      expect(message.startsWith(`param scheduleRate is ${rate} (`)).toBe(true);
      expect(message).toContain(
        "but the planner's timeout must exceed the schedule period by 20 s and Lambda allows at most 900 s: use rate(14 minutes) or less",
      );
    }
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
      segments: 'svc-test-segments',
      ledgerTable: 'svc-test-ledger',
      dashboard: 'svc-test',
    });
  });
});

describe('customer managed keys and the kept scan findings', () => {
  const KEY = 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';

  it('refuse a key param that is not a KMS key ARN (logsKmsKey also takes "stack")', () => {
    expect(problem(() => settings({ functionKmsKeyArn: 'alias/aws/lambda' }))).toBe(
      'param functionKmsKeyArn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), got "alias/aws/lambda"',
    );
    expect(problem(() => settings({ logsKmsKey: 'yes' }))).toMatch(/^param logsKmsKey must be a KMS key ARN .*, or "stack", got "yes"$/);
    expect(settings({ logsKmsKey: ' stack ', functionKmsKeyArn: KEY })).toMatchObject({ logsKmsKey: 'stack', functionKmsKeyArn: KEY });
    expect(settings()).toMatchObject({ logsKmsKey: undefined, functionKmsKeyArn: undefined });
  });

  it('log groups: no key by default, the given key, or a stack key and its alias', () => {
    const c = config([{}]);
    expect(logGroupEncryption(settings(), c)).toEqual({ Resources: {}, extensions: {} });
    expect(logGroupEncryption(settings({ logsKmsKey: KEY }), c)).toEqual({
      Resources: {},
      extensions: { PlannerLogGroup: { Properties: { KmsKeyId: KEY } }, ProcessorLogGroup: { Properties: { KmsKeyId: KEY } } },
    });
    const own = logGroupEncryption(settings({ logsKmsKey: 'stack' }), c);
    expect(Object.keys(own.Resources).sort()).toEqual(['LogsKey', 'LogsKeyAlias']);
    expect(own.Resources.LogsKeyAlias!.Properties.AliasName).toBe('alias/svc-test-logs');
    expect(own.extensions.PlannerLogGroup).toEqual({ Properties: { KmsKeyId: { 'Fn::GetAtt': ['LogsKey', 'Arn'] } } });
  });

  it('keep a key finding only while its param is unset, and the others always', () => {
    const c = config([
      {
        processor: { timeoutMs: 300_000 },
        ...HANDLED,
        handler: { ...HANDLED.handler, sinkTable: { name: 'svc-test-totals', key: { partitionKey: 'pk' } } },
      },
    ]);
    const ids = (skips: ReturnType<typeof scanSkips>) =>
      Object.entries(skips)
        .flatMap(([resource, list]) => list.map((skip) => `${skip.id} ${resource}`))
        .sort();
    const always = [
      'CKV_AWS_115 PlannerLambdaFunction',
      'CKV_AWS_116 PlannerLambdaFunction',
      'CKV_AWS_116 ProcessorLambdaFunction',
      'CKV_AWS_18 ServerlessDeploymentBucket',
      'CKV_AWS_27 ProcessorFailureQueue',
      'CKV_AWS_27 ScheduleDeadLetterQueue',
    ];
    expect(ids(scanSkips(settings({ functionKmsKeyArn: KEY, logsKmsKey: 'stack', tableKmsKeyArn: KEY }), c))).toEqual(always);
    expect(ids(scanSkips(settings(), c))).toEqual(
      [
        ...always,
        'CKV_AWS_119 LedgerTable',
        'CKV_AWS_119 TotalsTable',
        'CKV_AWS_158 PlannerLogGroup',
        'CKV_AWS_158 ProcessorLogGroup',
        'CKV_AWS_173 PlannerLambdaFunction',
        'CKV_AWS_173 ProcessorLambdaFunction',
      ].sort(),
    );
    // Two reasons for one check id on different resources say different things.
    const skips = scanSkips(settings(), c);
    expect(skips.PlannerLambdaFunction!.find((x) => x.id === 'CKV_AWS_116')!.comment).toMatch(/schedule/);
    expect(skips.ProcessorLambdaFunction!.find((x) => x.id === 'CKV_AWS_116')!.comment).toMatch(/ProcessorFailureQueue/);
  });
});

describe('streams config against the stage', () => {
  it('accepts a config that fits', async () => {
    await expect(checkConfig(settings(), config([{ processor: { timeoutMs: 300_000 }, ...HANDLED }]))).resolves.toBeUndefined();
  });

  it('lists every misfit: trigger interval vs schedule, processor timeout, audit table, MSK cluster', async () => {
    const message = await configProblem(
      settings({ processorTimeout: 300, vpcSubnetIds: 'subnet-1', vpcSecurityGroupIds: 'sg-1' }),
      config([
        { triggerIntervalMs: 120_000, processor: { timeoutMs: 300_000 }, ...HANDLED },
        { processor: { timeoutMs: 600_000 }, ...HANDLED },
        { processor: { timeoutMs: 300_000 }, handler: { module: 'audit-log', mode: 'at-least-once' } },
        {
          processor: { timeoutMs: 300_000 },
          kafka: { brokers: ['b-1:9098'], sasl: { mechanism: 'aws-msk-iam', region: 'us-east-1' } },
          ...HANDLED,
        },
      ]),
    );
    expect(message).toContain('stream s0: triggerIntervalMs is 120000 but the planner runs rate(1 minute)');
    expect(message).toContain('stream s1: processor.timeoutMs is 600000 but the processor function times out after 300 s');
    expect(message).toContain('stream s2: handler "audit-log" writes to AUDIT_LOG_TABLE: set the auditLogTable param');
    expect(message).toContain('stream s3: aws-msk-iam needs the mskClusterArns param');
    // Each problem once, one per line.
    expect(message.split('\n')).toHaveLength(5);
    expect(message.match(/AUDIT_LOG_TABLE/g)).toHaveLength(1);
  });

  it('puts a single problem on one line, naming the stage', async () => {
    const message = await configProblem(settings(), config([{ triggerIntervalMs: 120_000, ...HANDLED }]));
    expect(message).toMatch(
      /^the streams config does not fit stage test: stream s0: triggerIntervalMs is 120000 but the planner runs rate\(1 minute\)/,
    );
    expect(message).not.toContain('\n');
  });

  it("refuses a stream maxConcurrency above the processor's reserved concurrency, on one line naming both", async () => {
    const reserved = settings({ processorReservedConcurrency: '8' });
    expect(await configProblem(reserved, config([{ maxConcurrency: 12, ...HANDLED }]))).toBe(
      "the streams config does not fit stage test: stream s0: maxConcurrency is 12 but the processor's reserved concurrency (param processorReservedConcurrency) is 8; lower maxConcurrency or raise the param",
    );
    await expect(checkConfig(reserved, config([{ maxConcurrency: 8, ...HANDLED }, { ...HANDLED }]))).resolves.toBeUndefined();
    // Unreserved: nothing to compare with.
    await expect(checkConfig(settings(), config([{ maxConcurrency: 500, ...HANDLED }]))).resolves.toBeUndefined();
  });

  it('gives the planner the reserved concurrency it shares among the streams, only when the param sets one', () => {
    expect(plannerEnvironment(settings({ processorReservedConcurrency: '20' }), config([{}]))).toEqual({
      PROCESSOR_FUNCTION_NAME: 'svc-test-processor',
      PROCESSOR_RESERVED_CONCURRENCY: '20',
      SCHEDULE_PERIOD_MS: '60000',
      CONNECTION_IDLE_MAX_MS: '10000',
    });
    expect(plannerEnvironment(settings(), config([{}]))).toEqual({
      PROCESSOR_FUNCTION_NAME: 'svc-test-processor',
      SCHEDULE_PERIOD_MS: '60000',
      CONNECTION_IDLE_MAX_MS: '10000',
    });
    // A cron schedule has no period: no variable, every stream loops.
    expect(plannerEnvironment(settings({ scheduleRate: 'cron(0/5 * * * ? *)' }), config([{}])).SCHEDULE_PERIOD_MS).toBeUndefined();
  });

  it('builds the tick chain (queue, mapping, role statement, environment) only when a stream is ticked by it', () => {
    const none = [settings(), config([{ triggerIntervalMs: 1000 }, { triggerIntervalMs: 60_000 }])] as const;
    expect(tickChain(...none)).toEqual({ Resources: {}, Outputs: {} });
    expect(tickChainStatements(...none)).toEqual([]);
    expect(plannerEnvironment(...none).PLANNER_TICK_QUEUE_URL).toBeUndefined();
    // Switched off, a 10 s stream keeps the resident loop.
    expect(tickChain(settings({ tickChainFromMs: '' }), config([{ triggerIntervalMs: 10_000 }])).Resources).toEqual({});
    const chained = [settings({ tickChainFromMs: 8000 }), config([{ triggerIntervalMs: 1000 }, { triggerIntervalMs: 10_000 }])] as const;
    expect(chainedStreams(...chained).map((s) => s.id)).toEqual(['s1']);
    const { Resources, Outputs } = tickChain(...chained);
    expect(Resources.PlannerTickQueue).toMatchObject({
      Type: 'AWS::SQS::Queue',
      Properties: {
        VisibilityTimeout: 540,
        SqsManagedSseEnabled: true,
        RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': ['ScheduleDeadLetterQueue', 'Arn'] }, maxReceiveCount: 3 },
      },
    });
    expect(Resources.PlannerTickQueueMapping).toMatchObject({
      Type: 'AWS::Lambda::EventSourceMapping',
      DependsOn: ['PlannerRole'],
      Properties: {
        EventSourceArn: { 'Fn::GetAtt': ['PlannerTickQueue', 'Arn'] },
        FunctionName: { Ref: 'PlannerLambdaFunction' },
        BatchSize: 1,
      },
    });
    expect(Outputs).toEqual({ PlannerTickQueueUrl: { Value: { Ref: 'PlannerTickQueue' } } });
    expect(tickChainStatements(...chained)).toEqual([
      expect.objectContaining({ Sid: 'TickChain', Resource: [{ 'Fn::GetAtt': ['PlannerTickQueue', 'Arn'] }] }),
    ]);
    expect(plannerEnvironment(...chained)).toMatchObject({
      PLANNER_TICK_QUEUE_URL: { Ref: 'PlannerTickQueue' },
      TICK_CHAIN_FROM_MS: '8000',
    });
    expect(problem(() => settings({ tickChainFromMs: 500 }))).toMatch(
      /param tickChainFromMs must be a whole number between 1000 and 900000/,
    );
    expect(settings({}).tickChainFromMs).toBe(5000);
  });

  it('gives both functions the connection idle limit of the connectionIdleMaxMs param, refusing one out of range', () => {
    const s = settings({ connectionIdleMaxMs: 30000 });
    expect(plannerEnvironment(s, config([{}])).CONNECTION_IDLE_MAX_MS).toBe('30000');
    expect(processorEnvironment(s, config([{}])).CONNECTION_IDLE_MAX_MS).toBe('30000');
    expect(problem(() => settings({ connectionIdleMaxMs: -1 }))).toMatch(
      /param connectionIdleMaxMs must be a whole number between 0 and 900000/,
    );
  });

  it('accepts trigger intervals shorter than the schedule period (the planner loops inside each invocation)', async () => {
    const s = settings({ scheduleRate: 'rate(2 minutes)', plannerTimeout: 140 });
    await expect(
      checkConfig(
        s,
        config([
          { triggerIntervalMs: 1_000, ...HANDLED },
          { triggerIntervalMs: 120_000, ...HANDLED },
        ]),
      ),
    ).resolves.toBeUndefined();
    expect(await configProblem(s, config([{ triggerIntervalMs: 120_001, ...HANDLED }]))).toBe(
      'the streams config does not fit stage test: stream s0: triggerIntervalMs is 120001 but the planner runs rate(2 minutes) (120000 ms); ' +
        'triggerIntervalMs must be at most the schedule period (each scheduled invocation ticks every triggerIntervalMs until the next one takes over)',
    );
  });

  it('does not tie the trigger interval to a cron schedule', async () => {
    await expect(
      checkConfig(settings({ scheduleRate: 'cron(*/2 * * * ? *)' }), config([{ triggerIntervalMs: 120_000, ...HANDLED }])),
    ).resolves.toBeUndefined();
  });
});

describe('Amazon MSK needs a VPC', () => {
  it('tells MSK streams (IAM auth, or brokers on amazonaws.com, unless all are public endpoints) from others', () => {
    expect(needsVpc({ kafka: { ...MSK_IAM } } as never)).toBe(true);
    expect(needsVpc({ kafka: { brokers: ['b-1.c.abc123.c2.kafka.eu-west-1.amazonaws.com:9096'] } } as never)).toBe(true);
    expect(needsVpc({ kafka: { brokers: ['boot-abc.c2.kafka-serverless.us-east-1.amazonaws.com:9098'] } } as never)).toBe(true);
    expect(
      needsVpc({ kafka: { brokers: ['b-1-public.c.abc123.c2.kafka.us-east-1.amazonaws.com:9198'], sasl: MSK_IAM.sasl } } as never),
    ).toBe(false);
    expect(needsVpc({ kafka: { brokers: ['kafka-1.example.com:9093'] } } as never)).toBe(false);
  });

  it('refuses an MSK stream without subnets and security groups, naming the stream and the params', async () => {
    const message = await configProblem(settings({ mskClusterArns: MSK_CLUSTER }), config([{ kafka: MSK_IAM, ...HANDLED }]));
    expect(message).toBe(
      "the streams config does not fit stage test: stream s0: Amazon MSK brokers are reachable only from the cluster's VPC: set the vpcSubnetIds and vpcSecurityGroupIds params",
    );
    await expect(
      checkConfig(
        settings({ mskClusterArns: MSK_CLUSTER, vpcSubnetIds: 'subnet-1', vpcSecurityGroupIds: 'sg-1' }),
        config([{ kafka: MSK_IAM, ...HANDLED }]),
      ),
    ).resolves.toBeUndefined();
  });
});

describe('what the processor refuses at its first range, refused at package time', () => {
  it('an unknown handler.module, naming the stream, the module and the registered ones', async () => {
    const message = await configProblem(settings(), config([{ id: 'clicks', handler: { module: 'click-count', mode: 'at-least-once' } }]));
    expect(message).toBe(
      'the streams config does not fit stage test: stream clicks: unknown handler.module "click-count" (registered: running-totals, audit-log, noop; a handler file is named by a path such as "./handlers/click-count.ts")',
    );
  });

  it('a handler whose mode is not the one declared', async () => {
    const message = await configProblem(settings(), config([{ handler: { module: 'running-totals', mode: 'at-least-once' } }]));
    expect(message).toContain('stream s0: handler "running-totals" is dynamodb-exactly-once, but handler.mode says at-least-once');
  });

  it('a stream without a handler, except on the local stage (never deployed; peeks and dry runs need none)', async () => {
    expect(await configProblem(settings(), config([{}]))).toContain(
      'stream s0 has no handler: set handler.module to one of running-totals, audit-log, noop, or to the path of your handler file',
    );
    await expect(checkConfig(settings({ stage: 'local' }), config([{}]))).resolves.toBeUndefined();
  });

  it('a password read from an environment variable the deployed functions do not have', async () => {
    const kafka = {
      brokers: ['b:9096'],
      sasl: { mechanism: 'scram-sha-512' as const, username: 'u', password: { env: 'KAFKA_PASSWORD' } },
    };
    const message = await configProblem(settings(), config([{ kafka, ...HANDLED }]));
    expect(message).toContain('stream s0: kafka.sasl.password: environment variable KAFKA_PASSWORD (a secret reference) is not set');
  });

  it('accepts audit-log once auditLogTable is set (the processor gets AUDIT_LOG_TABLE)', async () => {
    await expect(
      checkConfig(settings({ auditLogTable: 'audit' }), config([{ handler: { module: 'audit-log', mode: 'at-least-once' } }])),
    ).resolves.toBeUndefined();
  });
});

describe('alarm topic encryption', () => {
  type Statement = { Sid: string; Principal: unknown; Action: unknown; Condition?: unknown };
  const key = () => alarmTopicEncryption(settings()).Resources.AlarmTopicKey!;
  const alarmArns = { 'Fn::Sub': 'arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:svc-test-*' };

  it('lets CloudWatch alarms of this stack and account, and only them, use the key', () => {
    expect(key().Type).toBe('AWS::KMS::Key');
    const statements = (key().Properties.KeyPolicy as { Statement: Statement[] }).Statement;
    expect(statements.find((s) => s.Sid === 'CloudWatchAlarmsPublish')).toEqual({
      Sid: 'CloudWatchAlarmsPublish',
      Effect: 'Allow',
      Principal: { Service: 'cloudwatch.amazonaws.com' },
      Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
      Resource: '*',
      Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } }, ArnLike: { 'aws:SourceArn': alarmArns } },
    });
    // No other service may use it.
    expect(statements.filter((s) => JSON.stringify(s.Principal).includes('Service'))).toHaveLength(1);
  });

  it('matches the name of every alarm the stack creates', () => {
    const names = Object.values(observability(settings(), config([{ ...HANDLED }])).Resources)
      .filter((r) => r.Type === 'AWS::CloudWatch::Alarm')
      .map((r) => r.Properties.AlarmName as string);
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) expect(name.startsWith('svc-test-')).toBe(true);
  });
});

describe('IAM resources', () => {
  it('turns secret names, partial and complete ARNs into the ARNs IAM matches', () => {
    const { secrets, parameters } = secretResources(
      settings({ kafkaSecretArns: 'arn:aws:ssm:us-east-1:123456789012:parameter/extra' }),
      config([
        { kafka: { brokers: ['b:9096'], sasl: { mechanism: 'scram-sha-512', username: 'u', password: { secretArn: 'kafka/app' } } } },
        {
          kafka: {
            brokers: ['b:9096'],
            sasl: {
              mechanism: 'scram-sha-512',
              username: 'u',
              password: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/app2' },
            },
          },
        },
        {
          kafka: {
            brokers: ['b:9096'],
            sasl: {
              mechanism: 'scram-sha-512',
              username: 'u',
              password: { secretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/app3-Ab12Cd' },
            },
          },
        },
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
      config([
        {
          topics: undefined,
          topicPattern: 'orders-.*',
          kafka: { brokers: ['b:9098'], sasl: { mechanism: 'aws-msk-iam', region: 'us-east-1' } },
        },
      ]),
    );
    const statements = (
      roles.Resources.ProcessorRole!.Properties.Policies as Array<{
        PolicyDocument: { Statement: Array<{ Sid: string; Resource: unknown[] }> };
      }>
    )[0]!.PolicyDocument.Statement;
    expect(statements.find((s) => s.Sid === 'MskTopics')!.Resource).toEqual([
      'arn:aws:kafka:us-east-1:123456789012:topic/c/11111111-2222-3333-4444-555555555555-1/*',
    ]);
    expect(statements.find((s) => s.Sid === 'MskConsumerGroups')).toBeUndefined();
    expect(statements.find((s) => s.Sid === 'SinkTables')).toBeUndefined();
  });

  it('MSK IAM with roleArn: both roles may assume exactly the streams roles, and get no kafka-cluster:* for those streams', async () => {
    const partner = 'arn:aws:iam::210987654321:role/msk-reader';
    const audit = 'arn:aws:iam::210987654321:role/teams/audit-reader';
    const viaRole = (roleArn: string, topic: string) => ({
      topics: [topic],
      processor: { timeoutMs: 300_000 },
      consumerGroup: `${topic}-group`,
      kafka: { ...MSK_IAM, sasl: { ...MSK_IAM.sasl, roleArn, externalId: 'ext-42' } },
      ...HANDLED,
    });
    const own = { topics: ['own'], processor: { timeoutMs: 300_000 }, kafka: MSK_IAM, ...HANDLED };
    const vpc = { vpcSubnetIds: 'subnet-1', vpcSecurityGroupIds: 'sg-1' };
    const statementsOf = (roles: ReturnType<typeof iamRoles>, id: 'PlannerRole' | 'ProcessorRole') =>
      (
        roles.Resources[id]!.Properties.Policies as Array<{
          PolicyDocument: { Statement: Array<{ Sid: string; Action: string[]; Resource: unknown[] }> };
        }>
      )[0]!.PolicyDocument.Statement;

    const onlyRoles = config([viaRole(partner, 'orders'), viaRole(audit, 'audit'), viaRole(partner, 'refunds')]);
    // No cluster of this account to scope anything to, and none needed.
    await expect(checkConfig(settings(vpc), onlyRoles)).resolves.toBeUndefined();
    for (const id of ['PlannerRole', 'ProcessorRole'] as const) {
      const statements = statementsOf(iamRoles(settings(vpc), onlyRoles), id);
      expect(statements.filter((st) => st.Action.some((a) => a.startsWith('kafka-cluster:')))).toEqual([]);
      expect(statements.filter((st) => st.Action.some((a) => a.startsWith('sts:')))).toEqual([
        { Sid: 'MskAssumeRole', Effect: 'Allow', Action: ['sts:AssumeRole'], Resource: [partner, audit] },
      ]);
    }

    // Mixed: the own-credentials stream keeps its scoped kafka-cluster:* (its topic and group only).
    const mixed = iamRoles(settings({ ...vpc, mskClusterArns: MSK_CLUSTER }), config([own, viaRole(partner, 'orders')]));
    const processor = statementsOf(mixed, 'ProcessorRole');
    expect(processor.find((st) => st.Sid === 'MskTopics')!.Resource).toEqual([`${MSK_CLUSTER.replace(':cluster/', ':topic/')}/own`]);
    expect(processor.find((st) => st.Sid === 'MskConsumerGroups')).toBeUndefined();
    expect(processor.find((st) => st.Sid === 'MskAssumeRole')!.Resource).toEqual([partner]);
    expect(await configProblem(settings(vpc), config([own, viaRole(partner, 'orders')]))).toContain(
      'stream s0: aws-msk-iam needs the mskClusterArns param',
    );
  });

  it.each([
    ['TopicsMissing', 'topics-missing', 1],
    ['PartitionsUnavailable', 'partitions-unavailable', 3],
  ] as const)('alarms per stream on the planner metric %s', (metricName, name, periods) => {
    const { Resources } = observability(settings(), config([{ id: 'orders' }]));
    expect(Resources[`${metricName}OrdersAlarm`]?.Properties).toMatchObject({
      AlarmName: expect.stringMatching(new RegExp(`-orders-${name}$`)),
      MetricName: metricName,
      Dimensions: [
        { Name: 'service', Value: 'planner' },
        { Name: 'stream', Value: 'orders' },
      ],
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      EvaluationPeriods: periods,
      AlarmActions: [{ Ref: 'AlarmTopic' }],
    });
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

  it('alarms per stream when no planner tick ran for 3 trigger intervals, or no tick metric arrives at all', () => {
    const { Resources } = observability(settings(), config([{ id: 'orders', triggerIntervalMs: 1_000 }, { id: 'slow' }]));
    expect(Resources.NoTickOrdersAlarm?.Properties).toMatchObject({
      AlarmName: 'svc-test-orders-no-tick',
      AlarmDescription: expect.stringMatching(
        /^Stream orders: no planner tick for 3 trigger intervals \(3000 ms; planner TickGapMs\).*`status`/,
      ),
      Namespace: 'KafkaLambdaDirect',
      MetricName: 'TickGapMs',
      Dimensions: [
        { Name: 'service', Value: 'planner' },
        { Name: 'stream', Value: 'orders' },
      ],
      Statistic: 'Maximum',
      Period: 60,
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 3_000,
      EvaluationPeriods: 1,
      // A dead planner publishes nothing: that alarms too.
      TreatMissingData: 'breaching',
      AlarmActions: [{ Ref: 'AlarmTopic' }],
      OKActions: [{ Ref: 'AlarmTopic' }],
    });
    expect(Resources.NoTickSlowAlarm?.Properties).toMatchObject({ Threshold: 180_000, Period: 60 });
    // An interval above a minute: a period of at least one interval (a datapoint every other tick).
    const long = observability(
      settings({ scheduleRate: 'rate(5 minutes)', plannerTimeout: 320 }),
      config([{ id: 'o', triggerIntervalMs: 150_000 }]),
    );
    expect(long.Resources.NoTickOAlarm?.Properties).toMatchObject({ Threshold: 450_000, Period: 180 });
    // Without the schedule nothing ticks: no alarm that would only fire.
    expect(observability(settings({ scheduleEnabled: false }), config([{ id: 'orders' }])).Resources.NoTickOrdersAlarm).toBeUndefined();
  });

  it('shows each stream loop on the dashboard: ticks, tick lag, tick and hand-over gaps with the alarm threshold', () => {
    const { Resources } = observability(settings(), config([{ id: 'orders', triggerIntervalMs: 2_000 }]));
    const body = (Resources.Dashboard!.Properties.DashboardBody as { 'Fn::Sub': string })['Fn::Sub'];
    type Widget = { properties: { title?: string; metrics?: unknown[][]; annotations?: { horizontal: { value: number }[] } } };
    const widgets = (JSON.parse(body) as { widgets: Widget[] }).widgets;
    const named = (title: string) => widgets.find((w) => w.properties.title === title)!.properties;
    const metricNames = (title: string) => named(title).metrics!.map((m) => m[1]);
    expect(metricNames('orders: planner ticks')).toEqual(['Ticks', 'TicksPerInvocation']);
    expect(metricNames('orders: tick lag (ms)')).toEqual(['TickLagMs', 'LoopWaitMs']);
    expect(metricNames('orders: tick gap / hand-over gap (ms)')).toEqual(['TickGapMs', 'HandoverGapMs']);
    expect(named('orders: tick gap / hand-over gap (ms)').annotations!.horizontal[0]!.value).toBe(6_000);
  });

  it('names alarm resources uniquely per stream', () => {
    expect([...streamLogicalNames([{ id: 'a-b' }, { id: 'a_b' }, { id: 'orders' }]).values()]).toEqual(['AB', 'AB2', 'Orders']);
  });
});

describe('declared sink tables', () => {
  const declared = (
    name: string,
    key: { partitionKey: string | { name: string; type: 'S' | 'N' | 'B' }; sortKey?: { name: string; type: 'S' | 'N' | 'B' } } = {
      partitionKey: 'pk',
    },
  ) => ({ handler: { module: './h.ts', mode: 'dynamodb-exactly-once', sinkTable: { name, key } } }) as const;

  it('become stack tables with the declared key, named by the table without the stack prefix; plain names are not created', () => {
    const c = config([
      declared('svc-test-click-counts', { partitionKey: 'userId', sortKey: { name: 'day', type: 'N' } }),
      declared('svc-test-running-totals'),
      { handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'legacy-totals' } },
    ]);
    const { Resources, Outputs } = sinkTableResources(settings({ tableDeletionPolicy: 'Retain', tableDeletionProtection: true }), c);
    expect(Object.keys(Resources).sort()).toEqual(['ClickCountsTable', 'RunningTotalsTable']);
    expect(Resources.ClickCountsTable).toMatchObject({
      Type: 'AWS::DynamoDB::Table',
      DeletionPolicy: 'Retain',
      Properties: {
        TableName: 'svc-test-click-counts',
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: 'userId', KeyType: 'HASH' },
          { AttributeName: 'day', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'userId', AttributeType: 'S' },
          { AttributeName: 'day', AttributeType: 'N' },
        ],
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        DeletionProtectionEnabled: true,
      },
    });
    expect(Outputs).toEqual({
      ClickCountsTableName: { Value: { Ref: 'ClickCountsTable' } },
      RunningTotalsTableName: { Value: { Ref: 'RunningTotalsTable' } },
    });
  });

  it('the processor may write exactly the sink tables: declared ones by their resource, existing ones by name', () => {
    const c = config([
      declared('svc-test-click-counts'),
      { handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'legacy-totals' } },
    ]);
    const role = iamRoles(settings(), c).Resources.ProcessorRole as unknown as {
      Properties: { Policies: [{ PolicyDocument: { Statement: { Sid: string; Resource: unknown }[] } }] };
    };
    const sinks = role.Properties.Policies[0].PolicyDocument.Statement.find((st) => st.Sid === 'SinkTables');
    expect(sinks?.Resource).toEqual([
      { 'Fn::Sub': 'arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/legacy-totals' },
      { 'Fn::GetAtt': ['ClickCountsTable', 'Arn'] },
    ]);
  });

  it('refuses one table declared with two keys, naming both streams', () => {
    const c = config([declared('svc-test-t1'), declared('svc-test-t1', { partitionKey: 'id' })]);
    expect(problem(() => sinkTableResources(settings(), c))).toBe(
      'stream s1: handler.sinkTable svc-test-t1 is declared with another key by stream s0; declare one key per table',
    );
  });
});
