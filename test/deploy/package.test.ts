/**
 * The deployable bundle, packaged offline with osls exactly as `npx sls package` would: once for a
 * `ci` stage whose params and streams config (fixtures/streams.ci.json) exercise every option (MSK
 * IAM with the functions' credentials and through a role of another account, SCRAM passwords in
 * Secrets Manager and SSM, a VPC, reserved concurrency, the audit-log handler, customer managed
 * keys for tables, environment and logs), once for the `dev` stage with its defaults (the README's
 * example) and once for a self-hosted Kafka outside any VPC with an EventBridge rule instead of the
 * Scheduler. Asserts on the CloudFormation and the zips, validates the templates with cfn-lint and
 * scans them with checkov (the same packages). Bad input fails packaging with one line and exit code 1.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import { loadDeploymentConfig } from '../../lib/config/load';
import type { DeploymentConfig } from '../../lib/config/schema';
import { codec, TTL_ATTRIBUTE } from '../../lib/ledger/items.dynamodb';
import { ledgerTableDefinition } from '../../lib/ledger/table';
import { parsePlannerPayload } from '../../lib/planner/payload';
import { LEDGER_ACTIONS, RUNTIME_PROVIDED, SINK_ACTIONS } from '../../infra/cfn/builders';
import {
  cfnLint,
  checkov,
  ROOT,
  runSlsPackage,
  slsInvokeLocal,
  slsPackage,
  type CfnResource,
  type CheckovFinding,
  type Packaged,
  type Template,
} from './package';
import { readZip } from './zip';
import { PLANNER_METRICS } from '../../lib/planner/metrics';
import { PROCESSOR_METRICS } from '../../lib/processor/invocation-metrics';

const MAX_ZIP_BYTES = 5 * 1024 * 1024;
const REGION = 'eu-west-1';
const MSK_CLUSTER = 'arn:aws:kafka:eu-west-1:123456789012:cluster/ci/abcd1234-ab12-cd34-ef56-abcdef123456-2';
const KMS_KEY = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const CI_PARAMS = {
  streamsConfig: 'test/deploy/fixtures/streams.ci.json',
  scheduleRate: 'rate(2 minutes)',
  plannerTimeout: '150',
  processorTimeout: '300',
  processorReservedConcurrency: '20',
  mskClusterArns: MSK_CLUSTER,
  vpcSubnetIds: 'subnet-0123456789abcdef0,subnet-0fedcba9876543210',
  vpcSecurityGroupIds: 'sg-0123456789abcdef0',
  kafkaSecretsKmsKeyArn: KMS_KEY,
  auditLogTable: 'kafka-lambda-direct-ci-audit-log',
  alarmEmail: 'oncall@example.com',
  tableKmsKeyArn: KMS_KEY,
  functionKmsKeyArn: KMS_KEY,
  logsKmsKey: 'stack',
};

/** A Kafka cluster outside AWS's networks: no VPC needed. */
const SELF_HOSTED_CONFIG = JSON.stringify({
  ledgerTable: 'unused',
  streams: [
    {
      id: 'orders',
      kafka: { brokers: ['kafka-1.example.com:9093'], ssl: true },
      topics: ['orders'],
      processor: { timeoutMs: 300_000 },
      handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'kafka-lambda-direct-selfhosted-running-totals' },
    },
  ],
});

const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });
const subArn = (service: string, rest: string) => ({
  'Fn::Sub': `arn:\${AWS::Partition}:${service}:\${AWS::Region}:\${AWS::AccountId}:${rest}`,
});

type Statement = { Sid: string; Effect: string; Action: string[]; Resource: unknown[]; Condition?: unknown };

let ci: Packaged;
let dev: Packaged;
let rule: Packaged;
let ciConfig: DeploymentConfig;
const sizes: string[] = [];

beforeAll(() => {
  ci = slsPackage('ci', REGION, CI_PARAMS);
  dev = slsPackage('dev', 'us-east-1');
  // On x86_64, where the dev and ci packages take the default arm64: each architecture's CRC binding.
  rule = slsPackage('selfhosted', 'us-east-1', { scheduleMethod: 'eventBus', streamsConfig: SELF_HOSTED_CONFIG, architecture: 'x86_64' });
  ciConfig = loadDeploymentConfig({ STREAMS_CONFIG: join(ROOT, CI_PARAMS.streamsConfig), LEDGER_TABLE: 'kafka-lambda-direct-ci-ledger' });
}, 240_000);

afterAll(() => {
  if (sizes.length) console.log(`Lambda packages:\n${sizes.join('\n')}`);
  for (const p of [ci, dev, rule]) if (p) rmSync(p.dir, { recursive: true, force: true });
});

/** Whether npm installed @node-rs/crc32's binding for `platform` here (it installs only this machine's). */
function crcBindingInstalled(platform: string): boolean {
  try {
    require.resolve(`@node-rs/crc32-${platform}/package.json`, { paths: [ROOT] });
    return true;
  } catch {
    return false;
  }
}

function resource(t: Template, id: string): CfnResource {
  const r = t.Resources[id];
  if (!r) throw new Error(`no resource ${id} in the template (has: ${Object.keys(t.Resources).join(', ')})`);
  return r;
}

function ofType(t: Template, type: string): Array<[string, CfnResource]> {
  return Object.entries(t.Resources).filter(([, r]) => r.Type === type);
}

function statements(t: Template, roleId: string): Statement[] {
  const policies = resource(t, roleId).Properties.Policies as Array<{ PolicyDocument: { Statement: Statement[] } }>;
  return policies.flatMap((p) => p.PolicyDocument.Statement);
}

const bySid = (list: Statement[], sid: string): Statement => {
  const s = list.find((x) => x.Sid === sid);
  if (!s) throw new Error(`no statement ${sid} (have ${list.map((x) => x.Sid).join(', ')})`);
  return s;
};

describe('functions', () => {
  it.each(['planner', 'processor'])('%s runs nodejs22.x on arm64 with its own role, in the VPC', (name) => {
    const fn = resource(ci.template, `${name[0]!.toUpperCase()}${name.slice(1)}LambdaFunction`).Properties;
    expect(fn.Runtime).toBe('nodejs22.x');
    expect(fn.Architectures).toEqual(['arm64']);
    expect(fn.Handler).toBe(`functions/${name}.handler`);
    expect(fn.FunctionName).toBe(`kafka-lambda-direct-ci-${name}`);
    expect(fn.Role).toEqual(getAtt(`${name[0]!.toUpperCase()}${name.slice(1)}Role`));
    expect(fn.VpcConfig).toEqual({ SubnetIds: CI_PARAMS.vpcSubnetIds.split(','), SecurityGroupIds: [CI_PARAMS.vpcSecurityGroupIds] });
    const env = (fn.Environment as { Variables: Record<string, string> }).Variables;
    expect(env).toMatchObject({
      STREAMS_CONFIG: CI_PARAMS.streamsConfig,
      LEDGER_TABLE: 'kafka-lambda-direct-ci-ledger',
      METRICS_NAMESPACE: 'KafkaLambdaDirect',
      NODE_OPTIONS: '--enable-source-maps',
    });
    if (name === 'planner') {
      expect(env.PROCESSOR_FUNCTION_NAME).toBe('kafka-lambda-direct-ci-processor');
      expect(env.PROCESSOR_RESERVED_CONCURRENCY).toBe(CI_PARAMS.processorReservedConcurrency);
      expect(env.AUDIT_LOG_TABLE).toBeUndefined();
    } else {
      expect(env.PROCESSOR_FUNCTION_NAME).toBeUndefined();
      expect(env.PROCESSOR_RESERVED_CONCURRENCY).toBeUndefined();
      expect(env.AUDIT_LOG_TABLE).toBe(CI_PARAMS.auditLogTable);
    }
  });

  it('caps the processor with reserved concurrency only when configured', () => {
    expect(resource(ci.template, 'ProcessorLambdaFunction').Properties.ReservedConcurrentExecutions).toBe(20);
    // The planner's invocations overlap by design (a loop's holder and its successor): never reserved.
    expect(resource(ci.template, 'PlannerLambdaFunction').Properties.ReservedConcurrentExecutions).toBeUndefined();
    expect(resource(dev.template, 'PlannerLambdaFunction').Properties.ReservedConcurrentExecutions).toBeUndefined();
    expect(resource(dev.template, 'ProcessorLambdaFunction').Properties.ReservedConcurrentExecutions).toEqual({ Ref: 'AWS::NoValue' });
    // Unreserved: the planner gets no cap to share (only the streams' own maxConcurrency applies).
    const devPlannerEnv = (resource(dev.template, 'PlannerLambdaFunction').Properties.Environment as { Variables: Record<string, string> })
      .Variables;
    expect(devPlannerEnv.PROCESSOR_FUNCTION_NAME).toBe('kafka-lambda-direct-dev-processor');
    expect(devPlannerEnv).not.toHaveProperty('PROCESSOR_RESERVED_CONCURRENCY');
    expect(resource(rule.template, 'ProcessorLambdaFunction').Properties.VpcConfig).toBeUndefined();
    // The dev example is on MSK, so it carries (placeholder) VPC params.
    expect(resource(dev.template, 'ProcessorLambdaFunction').Properties.VpcConfig).toEqual({
      SubnetIds: ['subnet-00000000000000000', 'subnet-11111111111111111'],
      SecurityGroupIds: ['sg-00000000000000000'],
    });
  });

  it('gives each function a processor timeout that fits the streams and a lease-long async queue', () => {
    const processor = resource(ci.template, 'ProcessorLambdaFunction').Properties;
    expect(processor.Timeout).toBe(300);
    for (const s of ciConfig.streams) expect(s.processor.timeoutMs).toBeLessThanOrEqual(300_000);
    const conf = resource(ci.template, 'ProcessorLambdaEvConf').Properties;
    // Lambda's retries would take range leases the planner counts against maxAttempts; the planner retries.
    expect(conf.MaximumRetryAttempts).toBe(0);
    expect(conf.MaximumEventAgeInSeconds).toBe(960);
    // An event older than the range lease has been superseded by the planner's re-dispatch.
    for (const s of ciConfig.streams) expect(960_000).toBeGreaterThanOrEqual(s.processor.leaseMs);
    expect(conf.DestinationConfig).toEqual({ OnFailure: { Destination: getAtt('ProcessorFailureQueue') } });
    const planner = resource(ci.template, 'PlannerLambdaEvConf').Properties;
    expect(planner).toMatchObject({ MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 });
  });

  it('gives the planner a timeout beyond the schedule period, so each invocation is still ticking when the next arrives', () => {
    // ci: rate(2 minutes) and plannerTimeout 150; dev: the defaults, rate(1 minute) and 90 s.
    expect(resource(ci.template, 'PlannerLambdaFunction').Properties.Timeout).toBe(150);
    expect(resource(dev.template, 'PlannerLambdaFunction').Properties.Timeout).toBe(90);
    expect(resource(rule.template, 'PlannerLambdaFunction').Properties.Timeout).toBe(90);
  });
});

describe('schedule', () => {
  it('runs the planner with EventBridge Scheduler through a dedicated role, input {}, a retry window of one period and a DLQ', () => {
    const schedules = ofType(ci.template, 'AWS::Scheduler::Schedule');
    expect(schedules).toHaveLength(1);
    const props = schedules[0]![1].Properties;
    expect(props.ScheduleExpression).toBe('rate(2 minutes)');
    expect(props.State).toBe('ENABLED');
    expect(props.FlexibleTimeWindow).toEqual({ Mode: 'OFF' });
    const target = props.Target as Record<string, unknown>;
    expect(target.Arn).toEqual(getAtt('PlannerLambdaFunction'));
    expect(target.RoleArn).toEqual(getAtt('PlannerScheduleRole'));
    expect(target.RetryPolicy).toEqual({ MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 120 });
    expect(target.DeadLetterConfig).toEqual({ Arn: getAtt('ScheduleDeadLetterQueue') });
    // What the schedule sends is a valid planner payload: plan every stream, for real, in a loop of ticks.
    const request = parsePlannerPayload(JSON.parse(target.Input as string), ciConfig);
    if (request.chain) throw new Error('the schedule sends a tick chain message');
    expect(request.dryRun).toBe(false);
    expect(request.loop).toBe(true);
    expect(request.streams.map((s) => s.id)).toEqual(ciConfig.streams.map((s) => s.id));
    // Role-based invocation: no rule, no resource policy on the function.
    expect(ofType(ci.template, 'AWS::Events::Rule')).toEqual([]);
    expect(ofType(ci.template, 'AWS::Lambda::Permission')).toEqual([]);
  });

  it('lets the schedule role invoke the planner and write its DLQ, nothing else', () => {
    const role = resource(ci.template, 'PlannerScheduleRole').Properties;
    const trust = (role.AssumeRolePolicyDocument as { Statement: Array<{ Principal: unknown; Condition: unknown }> }).Statement;
    expect(trust).toEqual([
      expect.objectContaining({
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
      }),
    ]);
    expect(statements(ci.template, 'PlannerScheduleRole').map((s) => [s.Action, s.Resource])).toEqual([
      [['lambda:InvokeFunction'], [getAtt('PlannerLambdaFunction')]],
      [['sqs:SendMessage'], [getAtt('ScheduleDeadLetterQueue')]],
    ]);
  });

  it('alternatively runs it with an EventBridge rule (scheduleMethod: eventBus), with the same retry window and DLQ', () => {
    expect(ofType(rule.template, 'AWS::Scheduler::Schedule')).toEqual([]);
    expect(() => resource(rule.template, 'PlannerScheduleRole')).toThrow();
    const rules = ofType(rule.template, 'AWS::Events::Rule');
    expect(rules).toHaveLength(1);
    const [ruleId, r] = rules[0]!;
    expect(r.Properties).toMatchObject({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' });
    expect(r.Properties.Targets).toEqual([
      {
        Arn: getAtt('PlannerLambdaFunction'),
        Id: 'plannerSchedule',
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
        DeadLetterConfig: { Arn: getAtt('ScheduleDeadLetterQueue') },
      },
    ]);
    // The rule sends the scheduled-event envelope, which the planner takes as "plan every stream".
    const ruleConfig = loadDeploymentConfig({ STREAMS_CONFIG: SELF_HOSTED_CONFIG });
    const envelope = {
      version: '0',
      id: 'x',
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '1',
      time: 't',
      region: 'us-east-1',
      resources: [],
      detail: {},
    };
    expect(parsePlannerPayload(envelope, ruleConfig)).toMatchObject({ dryRun: false, loop: true });
    const permissions = ofType(rule.template, 'AWS::Lambda::Permission').map(([, p]) => p.Properties);
    expect(permissions).toEqual([
      {
        FunctionName: getAtt('PlannerLambdaFunction'),
        Action: 'lambda:InvokeFunction',
        Principal: 'events.amazonaws.com',
        SourceArn: getAtt(ruleId),
      },
    ]);
    const dlqPolicy = resource(rule.template, 'ScheduleDeadLetterQueuePolicy').Properties.PolicyDocument as { Statement: unknown[] };
    expect(dlqPolicy.Statement).toEqual([
      expect.objectContaining({
        Principal: { Service: 'events.amazonaws.com' },
        Condition: { ArnEquals: { 'aws:SourceArn': getAtt(ruleId) } },
      }),
    ]);
  });

  it('has every stream trigger interval at most the schedule period (dev: every minute)', () => {
    const [, schedule] = ofType(dev.template, 'AWS::Scheduler::Schedule')[0]!;
    expect(schedule.Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(ciConfig.streams.map((s) => s.triggerIntervalMs)).toEqual([1_000, 120_000, 120_000, 120_000]);
  });
});

describe('IAM, one least-privilege role per function', () => {
  // The ledger has no index: the table alone.
  const ledgerResources = [getAtt('LedgerTable')];

  it('planner: ledger table, invoke the processor only, no sink table, no Kafka data', () => {
    const planner = statements(ci.template, 'PlannerRole');
    expect(planner.map((s) => s.Sid)).toEqual([
      'Logs',
      'EnvironmentKms',
      'Ledger',
      'DispatchRanges',
      'KafkaSecretsManager',
      'KafkaSsmParameters',
      'KafkaSecretsKms',
      'MskConnect',
      'MskTopics',
      'MskAssumeRole',
    ]);
    expect(bySid(planner, 'Ledger')).toMatchObject({ Action: LEDGER_ACTIONS, Resource: ledgerResources });
    expect(bySid(planner, 'DispatchRanges')).toMatchObject({
      Action: ['lambda:InvokeFunction'],
      Resource: [getAtt('ProcessorLambdaFunction')],
    });
    // DynamoDB only on the ledger; lambda only for dispatch.
    for (const s of planner) {
      if (s.Action.some((a) => a.startsWith('dynamodb:'))) expect(s.Resource).toEqual(ledgerResources);
      if (s.Action.some((a) => a.startsWith('lambda:'))) expect(s.Sid).toBe('DispatchRanges');
    }
    expect(planner.flatMap((s) => s.Action)).not.toContain('kafka-cluster:ReadData');
    expect(bySid(planner, 'Logs').Resource).toEqual([subArn('logs', 'log-group:/aws/lambda/kafka-lambda-direct-ci-planner:*')]);
  });

  it('processor: ledger and exactly the configured sink tables, its failure queue, and no lambda action', () => {
    const processor = statements(ci.template, 'ProcessorRole');
    expect(processor.map((s) => s.Sid)).toEqual([
      'Logs',
      'EnvironmentKms',
      'Ledger',
      'SinkTables',
      'OnFailureDestination',
      'KafkaSecretsManager',
      'KafkaSsmParameters',
      'KafkaSecretsKms',
      'MskConnect',
      'MskTopics',
      'MskConsumerGroups',
      'MskAssumeRole',
    ]);
    expect(processor.flatMap((s) => s.Action).filter((a) => a.startsWith('lambda:'))).toEqual([]);
    expect(bySid(processor, 'Ledger')).toMatchObject({ Action: LEDGER_ACTIONS, Resource: ledgerResources });
    expect(bySid(processor, 'SinkTables')).toMatchObject({
      Action: SINK_ACTIONS,
      // audit-log's AUDIT_LOG_TABLE, the running-totals table the config declares, and an existing sink table.
      Resource: [
        subArn('dynamodb', 'table/kafka-lambda-direct-ci-audit-log'),
        getAtt('RunningTotalsTable'),
        subArn('dynamodb', 'table/legacy-totals'),
      ],
    });
    expect(bySid(processor, 'OnFailureDestination')).toMatchObject({
      Action: ['sqs:SendMessage'],
      Resource: [getAtt('ProcessorFailureQueue')],
    });
  });

  it('both: Kafka passwords only from the secrets the streams name, decrypted only through those services', () => {
    for (const role of ['PlannerRole', 'ProcessorRole']) {
      const list = statements(ci.template, role);
      expect(bySid(list, 'KafkaSecretsManager')).toMatchObject({
        Action: ['secretsmanager:GetSecretValue'],
        Resource: ['arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_audit-AbC123'],
      });
      expect(bySid(list, 'KafkaSsmParameters')).toMatchObject({
        Action: ['ssm:GetParameter'],
        Resource: [subArn('ssm', 'parameter/kafka/legacy/password')],
      });
      expect(bySid(list, 'KafkaSecretsKms')).toEqual({
        Sid: 'KafkaSecretsKms',
        Effect: 'Allow',
        Action: ['kms:Decrypt'],
        Resource: [KMS_KEY],
        Condition: {
          StringEquals: {
            'kms:ViaService': [
              { 'Fn::Sub': 'secretsmanager.${AWS::Region}.amazonaws.com' },
              { 'Fn::Sub': 'ssm.${AWS::Region}.amazonaws.com' },
            ],
          },
        },
      });
    }
  });

  it('both: MSK IAM actions scoped to the cluster, the IAM streams topics and (processor) consumer group', () => {
    const topic = (name: string) => `${MSK_CLUSTER.replace(':cluster/', ':topic/')}/${name}`;
    const planner = statements(ci.template, 'PlannerRole');
    const processor = statements(ci.template, 'ProcessorRole');
    for (const list of [planner, processor]) {
      expect(bySid(list, 'MskConnect')).toMatchObject({
        Action: ['kafka-cluster:Connect', 'kafka-cluster:DescribeCluster'],
        Resource: [MSK_CLUSTER],
      });
      expect(bySid(list, 'MskTopics').Resource).toEqual([topic('payments'), topic('refunds')]);
    }
    expect(bySid(planner, 'MskTopics').Action).toEqual(['kafka-cluster:DescribeTopic']);
    expect(bySid(processor, 'MskTopics').Action).toEqual(['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData']);
    expect(bySid(processor, 'MskConsumerGroups')).toMatchObject({
      Action: ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'],
      Resource: [`${MSK_CLUSTER.replace(':cluster/', ':group/')}/payments-totals`],
    });
  });

  it('both: MSK IAM through a role of another account: sts:AssumeRole on exactly that role, and its topics are not ours to grant', () => {
    for (const role of ['PlannerRole', 'ProcessorRole']) {
      const list = statements(ci.template, role);
      expect(bySid(list, 'MskAssumeRole')).toEqual({
        Sid: 'MskAssumeRole',
        Effect: 'Allow',
        Action: ['sts:AssumeRole'],
        Resource: ['arn:aws:iam::210987654321:role/kafka-direct-reader'],
      });
      // The only sts:* statement, and partner-orders is authorized by the assumed role's own policy.
      expect(list.filter((s) => s.Action.some((a) => a.startsWith('sts:'))).map((s) => s.Sid)).toEqual(['MskAssumeRole']);
      expect(JSON.stringify(list)).not.toContain('partner-orders');
    }
    expect(statements(dev.template, 'ProcessorRole').map((s) => s.Sid)).not.toContain('MskAssumeRole');
  });

  it('both: no wildcard action or resource, VPC access only through the managed ENI policy', () => {
    for (const role of ['PlannerRole', 'ProcessorRole', 'PlannerScheduleRole']) {
      for (const s of statements(ci.template, role)) {
        expect(s.Effect).toBe('Allow');
        for (const a of s.Action) expect(a).not.toMatch(/\*/);
        expect(s.Resource).not.toContain('*');
      }
    }
    const vpcPolicy = [{ 'Fn::Sub': 'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole' }];
    expect(resource(ci.template, 'PlannerRole').Properties.ManagedPolicyArns).toEqual(vpcPolicy);
    expect(resource(ci.template, 'ProcessorRole').Properties.ManagedPolicyArns).toEqual(vpcPolicy);
    expect(resource(rule.template, 'ProcessorRole').Properties.ManagedPolicyArns).toEqual({ Ref: 'AWS::NoValue' });
    // Only the two function roles and the schedule role: no framework default role with shared rights.
    expect(
      ofType(ci.template, 'AWS::IAM::Role')
        .map(([id]) => id)
        .sort(),
    ).toEqual(['PlannerRole', 'PlannerScheduleRole', 'ProcessorRole']);
  });

  it('dev: no secret or KMS statements when no stream uses a secret store', () => {
    const sids = statements(dev.template, 'ProcessorRole').map((s) => s.Sid);
    expect(sids).not.toContain('KafkaSecretsManager');
    expect(sids).not.toContain('KafkaSsmParameters');
    expect(sids).not.toContain('KafkaSecretsKms');
  });
});

describe('tables', () => {
  it('the ledger matches lib/ledger/table.ts and is on-demand, point-in-time recoverable, TTL-expiring and KMS-encrypted', () => {
    const ledger = resource(ci.template, 'LedgerTable');
    const expected = ledgerTableDefinition('kafka-lambda-direct-ci-ledger');
    expect(ledger.Properties).toMatchObject({
      TableName: expected.TableName,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: expected.KeySchema,
      AttributeDefinitions: expected.AttributeDefinitions,
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
      DeletionProtectionEnabled: false,
    });
    // No index: the planner reads its partitions' group items by key (an earlier release's open-ranges index is dropped).
    expect(ledger.Properties.GlobalSecondaryIndexes).toBeUndefined();
    // ensureLedgerTable (local stack, tests) enables TTL on this attribute; the stack must too.
    expect(ledger.Properties.TimeToLiveSpecification).toEqual({ AttributeName: TTL_ATTRIBUTE, Enabled: true });
    expect(ledger.DeletionPolicy).toBe('Delete');
  });

  it('dead letters expire on the attribute the stack expires, and only the two function roles can read the ledger', () => {
    const ledger = resource(ci.template, 'LedgerTable');
    expect(ledger.Properties.TimeToLiveSpecification).toEqual({ AttributeName: TTL_ATTRIBUTE, Enabled: true });
    const item = codec.deadLetterItem({
      stream: 's',
      topic: 't',
      partition: 0,
      offset: 1,
      timestampMs: 0,
      keyBase64: null,
      valueBase64: null,
      valueBytes: 0,
      truncated: false,
      headers: [],
      error: 'e',
      attempts: 1,
      rangeFrom: 0,
      createdAtMs: 0,
      kept: 'coordinates',
      expiresAtMs: 86_400_000,
    });
    expect(item[TTL_ATTRIBUTE]).toBe(86_400);
    // docs/operations.md names who can read dead letters: keep it true. Any policy in the stack
    // that grants reads on the ledger table (or on every table) is listed here.
    const reads = new Set(['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:Scan', 'dynamodb:BatchGetItem', 'dynamodb:*', '*']);
    const readers: string[] = [];
    for (const [id, r] of Object.entries(ci.template.Resources)) {
      const docs = [
        ...((r.Properties?.Policies as Array<{ PolicyDocument: { Statement: Statement[] } }> | undefined) ?? []).map(
          (p) => p.PolicyDocument,
        ),
        ...(r.Properties?.PolicyDocument ? [r.Properties.PolicyDocument as { Statement: Statement[] }] : []),
      ];
      const grants = docs
        .flatMap((d) => d.Statement)
        .some((st) => {
          const actions = ([] as string[]).concat(st.Action);
          const onLedger = JSON.stringify(st.Resource).includes('LedgerTable') || JSON.stringify(st.Resource) === '["*"]';
          return onLedger && actions.some((a) => reads.has(a));
        });
      if (grants) readers.push(id);
    }
    expect(readers.sort()).toEqual(['PlannerRole', 'ProcessorRole']);
  });

  it('a declared sink table (running-totals: key pk, S) is on-demand, recoverable and encrypted; an existing one is not created', () => {
    const tables = Object.entries(ci.template.Resources).filter(([, r]) => r.Type === 'AWS::DynamoDB::Table');
    expect(tables.map(([id]) => id).sort()).toEqual(['LedgerTable', 'RunningTotalsTable']);
    expect(ci.template.Outputs?.RunningTotalsTableName).toEqual({ Value: { Ref: 'RunningTotalsTable' } });
    expect(resource(ci.template, 'RunningTotalsTable').Properties).toMatchObject({
      TableName: 'kafka-lambda-direct-ci-running-totals',
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
    });
  });
});

describe('alarms and dashboard', () => {
  /** Metric names each function emits: each publishes by name from one list (a name outside it does not type-check). */
  const emittedBy = {
    planner: new Set<string>(Object.keys(PLANNER_METRICS)),
    processor: new Set<string>(PROCESSOR_METRICS),
  };

  type MetricRef = { Namespace: string; MetricName: string; Dimensions: Array<{ Name: string; Value: unknown }> };
  function metricsOf(alarm: CfnResource): MetricRef[] {
    const p = alarm.Properties;
    if (p.MetricName)
      return [
        { Namespace: p.Namespace as string, MetricName: p.MetricName as string, Dimensions: p.Dimensions as MetricRef['Dimensions'] },
      ];
    return (p.Metrics as Array<{ MetricStat?: { Metric: MetricRef } }>).flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric] : []));
  }

  it('watch lag growth, data loss, failed ranges, dead letters and planner failures per stream', () => {
    const alarms = ofType(ci.template, 'AWS::CloudWatch::Alarm');
    const names = alarms.map(([, a]) => a.Properties.AlarmName);
    for (const s of ciConfig.streams) {
      for (const kind of [
        'lag-growing',
        'data-loss',
        'topic-recreated',
        'topics-missing',
        'partitions-unavailable',
        'failed-ranges',
        'dead-letters',
        'planner-failed',
        'no-tick',
      ]) {
        expect(names).toContain(`kafka-lambda-direct-ci-${s.id}-${kind}`);
      }
    }
    const byName = (name: string) => alarms.find(([, a]) => a.Properties.AlarmName === name)![1];
    const metricNames = (name: string) => metricsOf(byName(name)).map((m) => `${m.Dimensions[0]!.Value}:${m.MetricName}`);
    expect(metricNames('kafka-lambda-direct-ci-payments-lag-growing')).toEqual(['planner:TotalLag']);
    expect(metricNames('kafka-lambda-direct-ci-payments-data-loss')).toEqual([
      'planner:DataLossEvents',
      'planner:DataLossRecords',
      'processor:DataLossRecords',
    ]);
    expect(metricNames('kafka-lambda-direct-ci-payments-failed-ranges')).toEqual([
      'planner:RangesParked',
      'processor:RangesParked',
      'planner:PartitionsFailed',
    ]);
    expect(metricNames('kafka-lambda-direct-ci-payments-dead-letters')).toEqual(['processor:DeadLetters']);
    expect(metricNames('kafka-lambda-direct-ci-payments-planner-failed')).toEqual(['planner:PlannerFailed']);
    expect(metricNames('kafka-lambda-direct-ci-payments-topic-recreated')).toEqual(['planner:TopicRecreated']);
    expect(metricNames('kafka-lambda-direct-ci-payments-topics-missing')).toEqual(['planner:TopicsMissing']);
    expect(metricNames('kafka-lambda-direct-ci-payments-partitions-unavailable')).toEqual(['planner:PartitionsUnavailable']);
    expect(metricNames('kafka-lambda-direct-ci-payments-no-tick')).toEqual(['planner:TickGapMs']);
    // Three of each stream's trigger intervals.
    expect(byName('kafka-lambda-direct-ci-payments-no-tick').Properties.Threshold).toBe(3_000);
    expect(byName('kafka-lambda-direct-ci-legacy-no-tick').Properties.Threshold).toBe(360_000);
  });

  it('use only metrics the functions emit, with exactly their dimensions (service, stream)', () => {
    const alarms = ofType(ci.template, 'AWS::CloudWatch::Alarm');
    const streamIds = ciConfig.streams.map((s) => s.id);
    let custom = 0;
    for (const [, alarm] of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: 'AlarmTopic' }]);
      for (const m of metricsOf(alarm)) {
        if (m.Namespace === 'AWS/Lambda') {
          expect(m.Dimensions).toEqual([{ Name: 'FunctionName', Value: 'kafka-lambda-direct-ci-planner' }]);
          continue;
        }
        if (m.Namespace === 'AWS/SQS') continue;
        custom++;
        expect(m.Namespace).toBe('KafkaLambdaDirect');
        expect(m.Dimensions.map((d) => d.Name)).toEqual(['service', 'stream']);
        const service = m.Dimensions[0]!.Value as 'planner' | 'processor';
        expect(emittedBy[service]).toContain(m.MetricName);
        expect(streamIds).toContain(m.Dimensions[1]!.Value);
      }
    }
    expect(custom).toBeGreaterThanOrEqual(ciConfig.streams.length * 10);
  });

  it('watch the planner itself and both failure queues, and notify the alarm topic', () => {
    const names = ofType(ci.template, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties.AlarmName);
    for (const n of ['planner-errors', 'planner-not-running', 'processor-failures', 'schedule-dead-letters'])
      expect(names).toContain(`kafka-lambda-direct-ci-${n}`);
    expect(resource(ci.template, 'AlarmEmailSubscription').Properties).toEqual({
      TopicArn: { Ref: 'AlarmTopic' },
      Protocol: 'email',
      Endpoint: CI_PARAMS.alarmEmail,
    });
  });

  it('a dashboard with every stream, whose body is valid JSON once CloudFormation substitutes it', () => {
    const body = (resource(ci.template, 'Dashboard').Properties.DashboardBody as { 'Fn::Sub': string })['Fn::Sub'];
    const substituted = body.replace(/\$\{([^}!]+)\}/g, 'x').replace(/\$\{!/g, '${');
    const parsed = JSON.parse(substituted) as { widgets: Array<{ type: string; properties: { title?: string } }> };
    for (const s of ciConfig.streams) expect(parsed.widgets.some((w) => w.properties.title === `${s.id}: lag (records)`)).toBe(true);
    expect(parsed.widgets.find((w) => w.type === 'alarm')).toBeDefined();
  });
});

describe('encryption that the writing services can use', () => {
  type PolicyStatement = { Sid?: string; Effect: string; Principal?: unknown; Action: unknown; Resource?: unknown; Condition?: unknown };
  const stackAlarms = (stage: string) => ({
    StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
    ArnLike: {
      'aws:SourceArn': {
        'Fn::Sub': `arn:\${AWS::Partition}:cloudwatch:\${AWS::Region}:\${AWS::AccountId}:alarm:kafka-lambda-direct-${stage}-*`,
      },
    },
  });

  it.each([
    ['ci', () => ci],
    ['dev', () => dev],
  ] as const)(
    '%s: the alarm topic is encrypted with a key of the stack whose policy lets its CloudWatch alarms publish',
    (stage, packaged) => {
      const t = packaged().template;
      const topicKey = resource(t, 'AlarmTopic').Properties.KmsMasterKeyId;
      // alias/aws/sns (the AWS managed key) cannot grant CloudWatch anything: alarms would deliver nothing.
      expect(topicKey).toEqual({ Ref: 'AlarmTopicKey' });
      const key = resource(t, 'AlarmTopicKey');
      expect(key.Type).toBe('AWS::KMS::Key');
      expect(key.Properties.EnableKeyRotation).toBe(true);
      const policy = key.Properties.KeyPolicy as { Statement: PolicyStatement[] };
      expect(policy.Statement).toContainEqual({
        Sid: 'CloudWatchAlarmsPublish',
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Resource: '*',
        Condition: stackAlarms(stage),
      });
      const topicPolicy = resource(t, 'AlarmTopicPolicy').Properties;
      expect(topicPolicy.Topics).toEqual([{ Ref: 'AlarmTopic' }]);
      expect((topicPolicy.PolicyDocument as { Statement: PolicyStatement[] }).Statement).toEqual([
        expect.objectContaining({
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: 'sns:Publish',
          Condition: stackAlarms(stage),
        }),
      ]);
      // Every alarm of the stack is covered by the key policy's alarm ARN pattern.
      for (const [, alarm] of ofType(t, 'AWS::CloudWatch::Alarm'))
        expect(alarm.Properties.AlarmName).toMatch(new RegExp(`^kafka-lambda-direct-${stage}-`));
    },
  );

  it('the queues that Lambda and EventBridge write use SQS-managed encryption, which needs no key policy', () => {
    for (const t of [ci.template, dev.template, rule.template]) {
      const queues = ofType(t, 'AWS::SQS::Queue');
      expect(queues.map(([id]) => id).sort()).toEqual(['ProcessorFailureQueue', 'ScheduleDeadLetterQueue']);
      for (const [, q] of queues) {
        expect(q.Properties.SqsManagedSseEnabled).toBe(true);
        expect(q.Properties.KmsMasterKeyId).toBeUndefined();
      }
    }
  });

  it('log groups: CloudWatch Logs encryption by default; with logsKmsKey: stack, a key admitting CloudWatch Logs for exactly these groups', () => {
    for (const [, g] of ofType(dev.template, 'AWS::Logs::LogGroup')) expect(g.Properties.KmsKeyId).toBeUndefined();
    const groups = ofType(ci.template, 'AWS::Logs::LogGroup');
    expect(groups.map(([id]) => id).sort()).toEqual(['PlannerLogGroup', 'ProcessorLogGroup']);
    for (const [, g] of groups) expect(g.Properties.KmsKeyId).toEqual(getAtt('LogsKey'));
    const key = resource(ci.template, 'LogsKey').Properties;
    expect(key.EnableKeyRotation).toBe(true);
    const groupArn = (fn: string) => ({
      'Fn::Sub': `arn:\${AWS::Partition}:logs:\${AWS::Region}:\${AWS::AccountId}:log-group:/aws/lambda/kafka-lambda-direct-ci-${fn}`,
    });
    expect((key.KeyPolicy as { Statement: PolicyStatement[] }).Statement).toContainEqual({
      Sid: 'CloudWatchLogsOfTheFunctions',
      Effect: 'Allow',
      Principal: { Service: { 'Fn::Sub': 'logs.${AWS::Region}.amazonaws.com' } },
      Action: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
      Resource: '*',
      Condition: { ArnEquals: { 'kms:EncryptionContext:aws:logs:arn': [groupArn('planner'), groupArn('processor')] } },
    });
    // Each group's name is what the key's condition names.
    expect(groups.map(([, g]) => g.Properties.LogGroupName).sort()).toEqual([
      '/aws/lambda/kafka-lambda-direct-ci-planner',
      '/aws/lambda/kafka-lambda-direct-ci-processor',
    ]);
  });

  it('environment variables: the AWS managed key by default, functionKmsKeyArn (and kms:Decrypt on it only) when set', () => {
    for (const fn of ['PlannerLambdaFunction', 'ProcessorLambdaFunction']) {
      expect(resource(dev.template, fn).Properties.KmsKeyArn).toBeUndefined();
      expect(resource(ci.template, fn).Properties.KmsKeyArn).toBe(KMS_KEY);
    }
    for (const role of ['PlannerRole', 'ProcessorRole']) {
      expect(bySid(statements(ci.template, role), 'EnvironmentKms')).toEqual({
        Sid: 'EnvironmentKms',
        Effect: 'Allow',
        Action: ['kms:Decrypt'],
        Resource: [KMS_KEY],
      });
      expect(statements(dev.template, role).map((s) => s.Sid)).not.toContain('EnvironmentKms');
    }
  });

  it('tables: the AWS managed key by default, tableKmsKeyArn when set', () => {
    for (const id of ['LedgerTable', 'RunningTotalsTable']) {
      expect(resource(dev.template, id).Properties.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS' });
      expect(resource(ci.template, id).Properties.SSESpecification).toEqual({ SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: KMS_KEY });
    }
  });

  it('the deployment bucket blocks public access, keeps versions, encrypts and refuses requests without TLS', () => {
    for (const t of [dev.template, ci.template, rule.template]) {
      expect(resource(t, 'ServerlessDeploymentBucket').Properties).toMatchObject({
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        VersioningConfiguration: { Status: 'Enabled' },
        BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
      });
      expect(JSON.stringify(resource(t, 'ServerlessDeploymentBucketPolicy').Properties)).toContain('aws:SecureTransport');
    }
  });

  it('the KMS keys of the stack: the alarm topic key, and the log groups key only when asked for', () => {
    expect(ofType(dev.template, 'AWS::KMS::Key').map(([id]) => id)).toEqual(['AlarmTopicKey']);
    expect(
      ofType(ci.template, 'AWS::KMS::Key')
        .map(([id]) => id)
        .sort(),
    ).toEqual(['AlarmTopicKey', 'LogsKey']);
  });
});

describe('packages', () => {
  const builtins = new Set(builtinModules);
  const provided = RUNTIME_PROVIDED.map(
    (p) => new RegExp(`^${p.replace(/[.*+?^${}()|[\]\\/]/g, (c) => (c === '*' ? '[^/]+' : `\\${c}`))}$`),
  );

  it.each(['planner', 'processor'])('%s: one minified bundle with its source map and the streams config, under 5 MB', (name) => {
    for (const [stage, p, config] of [
      ['ci', ci, CI_PARAMS.streamsConfig],
      ['dev', dev, 'infra/config/streams.dev.json'],
    ] as const) {
      const zipPath = join(p.dir, `${name}.zip`);
      const entries = readZip(zipPath);
      const total = readFileSync(zipPath).length;
      sizes.push(
        `  ${stage}/${name}.zip: ${(total / 1024).toFixed(0)} KiB (${entries.map((e) => `${e.name} ${(e.size / 1024).toFixed(0)} KiB`).join(', ')})`,
      );
      expect(total).toBeLessThan(MAX_ZIP_BYTES);
      const binding = crcBindingInstalled('linux-arm64-gnu') ? [`functions/${name}.crc32c.linux-arm64-gnu.node`] : [];
      expect(entries.map((e) => e.name).sort()).toEqual(
        [`functions/${name}.js`, `functions/${name}.bundle.js`, `functions/${name}.bundle.js.map`, config, ...binding].sort(),
      );
      // The handler's file is a small entry with no export names for the runtime's import() to scan.
      const entry = entries
        .find((e) => e.name === `functions/${name}.js`)!
        .data()
        .toString('utf8');
      expect(entry).toContain(`require('./${name}.bundle.js')`);
      expect(entry.length).toBeLessThan(400);
      const code = entries
        .find((e) => e.name === `functions/${name}.bundle.js`)!
        .data()
        .toString('utf8');
      // Minified: long lines (newlines are left only inside template literals).
      expect(code.length / code.split('\n').length).toBeGreaterThan(2000);
      expect(code).toContain(`//# sourceMappingURL=${name}.bundle.js.map`);
      // Self-contained: every require is a Node built-in or an AWS SDK package the runtime provides. A
      // require inside a string literal is text, not a call: ajv keeps `'require("ajv/dist/runtime/equal").default'`
      // for the code it generates in standalone mode only, and uses the bundled function itself otherwise.
      const required = [...new Set([...code.matchAll(/(?<!['`])require\("([^"]+)"\)/g)].map((m) => m[1]!))];
      const foreign = required.filter((id) => !builtins.has(id.replace(/^node:/, '')) && !provided.some((re) => re.test(id)));
      expect(foreign).toEqual([]);
      expect(required).toContain('@aws-sdk/client-dynamodb');
    }
  });

  it.each([
    ['arm64', 'linux-arm64-gnu', () => dev],
    ['x86_64', 'linux-x64-gnu', () => rule],
  ])(
    "processor on %s: the CPU's CRC-32C binding beside the bundle where npm installed it, else one line saying why",
    (arch, platform, packaged) => {
      const p = packaged();
      expect(resource(p.template, 'ProcessorLambdaFunction').Properties.Architectures).toEqual([arch]);
      const name = `processor.crc32c.${platform}.node`;
      const entries = readZip(join(p.dir, 'processor.zip'));
      const code = entries
        .find((e) => e.name === 'functions/processor.bundle.js')!
        .data()
        .toString('utf8');
      if (!crcBindingInstalled(platform)) {
        expect(entries.map((e) => e.name)).not.toContain(`functions/${name}`);
        expect(p.log).toContain(
          `CRC-32C: the ${arch} bundles check record batches with WebAssembly, not the CPU's CRC instructions: ` +
            `@node-rs/crc32-${platform} is not installed`,
        );
        expect(code).not.toContain(name);
        return;
      }
      expect(p.log).not.toContain(`CRC-32C: the ${arch} bundles`);
      // The bundle loads that file from its own directory, and no other binding is packaged with it.
      expect(code).toContain(JSON.stringify(name));
      expect(entries.filter((e) => e.name.endsWith('.node')).map((e) => e.name)).toEqual([`functions/${name}`]);
      expect(readZip(join(p.dir, 'planner.zip')).map((e) => e.name)).not.toContain(`functions/${name}`);
      if (platform !== `${process.platform}-${process.arch}-gnu`) return;
      // This machine's own architecture: the packaged binding loads and computes CRC-32C.
      const task = mkdtempSync(join(tmpdir(), 'lambda-task-crc-'));
      try {
        const file = join(task, name);
        writeFileSync(file, entries.find((e) => e.name === `functions/${name}`)!.data());
        const run = spawnSync(process.execPath, ['-e', `console.log(require(${JSON.stringify(file)}).crc32c(Buffer.from('123456789')))`], {
          encoding: 'utf8',
        });
        expect(run.stdout.trim()).toBe(String(0xe3069283));
      } finally {
        rmSync(task, { recursive: true, force: true });
      }
    },
  );

  it.each([
    ['planner', { bogus: 1 }, 'invalid planner payload: payload: Unrecognized key: "bogus"'],
    ['processor', { stream: 'nope', topic: 't', partition: 0, from: 0, until: 1 }, 'invalid processor payload: unknown stream nope'],
  ])('%s: the unpacked zip loads on its own, reads its packaged config and refuses a bad payload', (name, payload, message) => {
    // Like /var/task: the zip's files, the working directory there; the AWS SDK from elsewhere (the runtime's).
    const task = mkdtempSync(join(tmpdir(), `lambda-task-${name}-`));
    try {
      for (const e of readZip(join(ci.dir, `${name}.zip`))) {
        mkdirSync(dirname(join(task, e.name)), { recursive: true });
        writeFileSync(join(task, e.name), e.data());
      }
      const script = [
        `const context = { functionName: '${name}', functionVersion: '$LATEST', memoryLimitInMB: '1024', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60000 };`,
        `require('./functions/${name}.js').handler(${JSON.stringify(payload)}, context).then(`,
        '  (r) => console.log(JSON.stringify({ ok: r })),',
        '  (e) => console.log(JSON.stringify({ error: e.name, message: e.message })));',
      ].join('\n');
      const run = spawnSync(process.execPath, ['-e', script], {
        cwd: task,
        encoding: 'utf8',
        timeout: 30_000,
        env: {
          PATH: process.env.PATH,
          NODE_PATH: join(ROOT, 'node_modules'),
          AWS_REGION: REGION,
          AWS_ACCESS_KEY_ID: 'x',
          AWS_SECRET_ACCESS_KEY: 'x',
          STREAMS_CONFIG: CI_PARAMS.streamsConfig,
          LEDGER_TABLE: 'kafka-lambda-direct-ci-ledger',
          POWERTOOLS_METRICS_DISABLED: 'true',
          POWERTOOLS_LOG_LEVEL: 'ERROR',
        },
      });
      const last = run.stdout.trim().split('\n').pop() ?? '';
      if (run.status !== 0 || !last.startsWith('{')) throw new Error(`node exited ${run.status}:\n${run.stdout}${run.stderr}`);
      const result = JSON.parse(last) as { error?: string; message?: string };
      expect(result.error).toBe('ValidationError');
      expect(result.message).toContain(message);
    } finally {
      rmSync(task, { recursive: true, force: true });
    }
  });
});

describe('sls invoke local', () => {
  // In this file, not its own: serverless-esbuild builds in the service's .esbuild/, which two
  // serverless runs at once would share.
  const config = JSON.stringify({
    ledgerTable: 'unused',
    streams: [{ id: 'local', kafka: { brokers: ['127.0.0.1:9'] }, topics: ['t'], processor: { timeoutMs: 300_000 } }],
  });

  it('bundles and runs the planner in-process (local stage), reports a bad payload and exits 1', () => {
    const run = slsInvokeLocal('planner', { dryRun: true, bogus: 1 }, { STREAMS_CONFIG: config });
    expect(run.status).toBe(1);
    expect(run.result).toMatchObject({ errorType: 'ValidationError', errorMessage: expect.stringContaining('Unrecognized key: "bogus"') });
  });

  it('runs the processor the same way', () => {
    const run = slsInvokeLocal('processor', { peek: { stream: 'other', topic: 't', partition: 0, offset: 0 } }, { STREAMS_CONFIG: config });
    expect(run.status).toBe(1);
    expect(run.result).toMatchObject({ errorType: 'ValidationError', errorMessage: expect.stringContaining('unknown stream other') });
    // Nothing of a local run is left in esbuild's work folder for the next package to ship.
    expect(existsSync(join(ROOT, '.esbuild'))).toBe(false);
  });
});

describe('bad input fails packaging with one line and exit code 1', () => {
  const MSK_WITHOUT_VPC = JSON.stringify({
    ledgerTable: 'unused',
    streams: [
      {
        id: 'payments',
        kafka: {
          brokers: ['b-1.ci.abc123.c2.kafka.eu-west-1.amazonaws.com:9098'],
          sasl: { mechanism: 'aws-msk-iam', region: 'eu-west-1' },
        },
        topics: ['payments'],
        processor: { timeoutMs: 300_000 },
        handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'kafka-lambda-direct-ci-running-totals' },
      },
    ],
  });
  const UNKNOWN_HANDLER = JSON.stringify({
    ledgerTable: 'unused',
    streams: [
      {
        id: 'clicks',
        kafka: { brokers: ['kafka-1.example.com:9093'] },
        topics: ['clicks'],
        processor: { timeoutMs: 300_000 },
        handler: { module: 'click-count', mode: 'at-least-once' },
      },
    ],
  });

  it.each([
    [
      'an MSK stream without a VPC',
      'ci',
      { streamsConfig: MSK_WITHOUT_VPC, mskClusterArns: MSK_CLUSTER, processorTimeout: '300', scheduleRate: 'rate(1 minute)' },
      "Error: the streams config does not fit stage ci: stream payments: Amazon MSK brokers are reachable only from the cluster's VPC: set the vpcSubnetIds and vpcSecurityGroupIds params",
    ],
    [
      'an unknown handler.module',
      'ci',
      { streamsConfig: UNKNOWN_HANDLER },
      'Error: the streams config does not fit stage ci: stream clicks: unknown handler.module "click-count" (registered: running-totals, audit-log, noop; a handler file is named by a path such as "./handlers/click-count.ts")',
    ],
    [
      'a planner timeout that does not outlast the schedule period',
      'dev',
      { plannerTimeout: '60' },
      'Error: param plannerTimeout is 60 s but param scheduleRate is rate(1 minute) (60 s): set plannerTimeout to at least 80 (the period + 20 s)',
    ],
    [
      'a schedule period longer than any planner timeout can outlast',
      'dev',
      { scheduleRate: 'rate(15 minutes)', plannerTimeout: '900' },
      "Error: param scheduleRate is rate(15 minutes) (900 s), but the planner's timeout must exceed the schedule period by 20 s and Lambda allows at most 900 s: use rate(14 minutes) or less",
    ],
    [
      'a stage without a streams config file',
      'prod',
      {},
      'Error: streams config for stage prod (infra/config/streams.prod.json): cannot read config file',
    ],
  ])('%s', (_, stage, params, message) => {
    const run = runSlsPackage(stage, REGION, params);
    try {
      expect(run.status).toBe(1);
      const lines = `${run.stdout}${run.stderr}`.split('\n').filter((l) => l.trim() !== '');
      expect(lines).toHaveLength(1);
      expect(lines[0]!.startsWith(message)).toBe(true);
      expect(existsSync(join(run.dir, 'cloudformation-template-update-stack.json'))).toBe(false);
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  });
});

describe('docs/deploy.md', () => {
  it('deploys a stage that packages: its commands name the dev example, in its region', () => {
    const readme = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Deploy a stage'), readme.indexOf('### Schedule'));
    const commands = [...section.matchAll(/^(scripts\/package-check\.sh|npx sls) .*$/gm)].map((m) => m[0]);
    expect(commands.length).toBeGreaterThanOrEqual(3);
    for (const command of commands) {
      const stage = /--stage (\S+)/.exec(command)?.[1] ?? /package-check\.sh (\S+)/.exec(command)?.[1];
      const region = /--region (\S+)/.exec(command)?.[1] ?? /package-check\.sh \S+ (\S+)/.exec(command)?.[1];
      // dev is packaged above (beforeAll) in us-east-1, its example's region.
      expect([command, stage, region]).toEqual([command, 'dev', 'us-east-1']);
    }
    expect(existsSync(join(ROOT, 'infra/config/streams.dev.json'))).toBe(true);
  });
});

describe('cfn-lint', () => {
  it.each([
    ['ci', () => ci, REGION],
    ['dev', () => dev, 'us-east-1'],
    ['self-hosted Kafka (EventBridge rule)', () => rule, 'us-east-1'],
  ] as const)(
    '%s template has no errors or warnings',
    (stage, packaged, region) => {
      const { status, output } = cfnLint(packaged().templatePath, region);
      if (status !== 0) throw new Error(`cfn-lint on the ${stage} template exited ${status}:\n${output}`);
    },
    300_000,
  );
});

describe('security scan (checkov)', () => {
  /** Every finding the template keeps, with its reason from the skip metadata on the resource. */
  const kept = (findings: CheckovFinding[]) => findings.map((f) => `${f.checkId} ${f.resource}`).sort();
  const DEV_KEPT = [
    'CKV_AWS_115 AWS::Lambda::Function.PlannerLambdaFunction',
    'CKV_AWS_116 AWS::Lambda::Function.PlannerLambdaFunction',
    'CKV_AWS_116 AWS::Lambda::Function.ProcessorLambdaFunction',
    'CKV_AWS_119 AWS::DynamoDB::Table.LedgerTable',
    'CKV_AWS_119 AWS::DynamoDB::Table.RunningTotalsTable',
    'CKV_AWS_158 AWS::Logs::LogGroup.PlannerLogGroup',
    'CKV_AWS_158 AWS::Logs::LogGroup.ProcessorLogGroup',
    'CKV_AWS_173 AWS::Lambda::Function.PlannerLambdaFunction',
    'CKV_AWS_173 AWS::Lambda::Function.ProcessorLambdaFunction',
    'CKV_AWS_18 AWS::S3::Bucket.ServerlessDeploymentBucket',
    'CKV_AWS_27 AWS::SQS::Queue.ProcessorFailureQueue',
    'CKV_AWS_27 AWS::SQS::Queue.ScheduleDeadLetterQueue',
  ];
  // The customer managed key params remove their findings (tables, environment, logs).
  const CI_KEPT = DEV_KEPT.filter((f) => !/^CKV_AWS_(119|158|173) /.test(f));

  it.each([
    ['dev', () => dev, DEV_KEPT],
    ['ci', () => ci, CI_KEPT],
  ] as const)(
    '%s template: no failed check; exactly the documented findings are kept, each with its reason',
    (stage, packaged, expected) => {
      const report = checkov(packaged().templatePath);
      if (report.failed.length) {
        throw new Error(
          `checkov: ${report.failed.length} failed check(s) on the ${stage} template (fix them, or keep one with a reason in infra/cfn/scan.ts and docs/deploy.md):\n` +
            report.failed.map((f) => `  ${f.checkId} ${f.resource}`).join('\n'),
        );
      }
      expect(report.passed).toBeGreaterThan(40);
      expect(kept(report.skipped)).toEqual([...expected].sort());
      for (const f of report.skipped) expect(f.comment?.length ?? 0).toBeGreaterThan(40);
      // docs/deploy.md lists each kept finding by check id and resource.
      const docs = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
      const section = docs.slice(docs.indexOf('### Security scan'), docs.indexOf('### Alarms and dashboard'));
      for (const f of report.skipped) {
        expect([f.checkId, section.includes(`\`${f.checkId}\``)]).toEqual([f.checkId, true]);
        expect([f.resource, section.includes(f.resource.split('.')[1]!)]).toEqual([f.resource, true]);
      }
    },
    300_000,
  );
});
