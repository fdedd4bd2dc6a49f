/**
 * Pure builders for the parts of the CloudFormation stack that depend on the stage's settings and
 * on the streams config: per-function IAM roles, the planner schedule's target settings, VPC
 * settings, alarms and the dashboard. `stack.js` resolves the inputs (serverless params, the parsed
 * streams config) and calls these; the deploy tests call them directly too.
 *
 * Everything returned is plain CloudFormation (JSON-shaped objects); nothing here talks to AWS.
 * Loaded by stack.js through tsx (a devDependency), so it is type-checked with the project.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DeploymentConfig, StreamConfig } from '../../lib/config/schema';
import { AppError } from '../../lib/errors';
import { HANDLERS, resolveHandler } from '../../lib/handlers';
import { createSecretResolver } from '../../lib/kafka/secrets';
import { OPEN_RANGES_INDEX } from '../../lib/ledger/codec.dynamodb';

/** A CloudFormation value: plain JSON or an intrinsic function object. */
export type Cfn = unknown;
export type CfnResource = { Type: string; Properties: Record<string, Cfn>; [attribute: string]: Cfn };
export type CfnResources = Record<string, CfnResource>;
export type Statement = { Sid: string; Effect: 'Allow'; Action: string[]; Resource: Cfn[]; Condition?: Record<string, Cfn> };

/** Logical IDs that serverless.yml, infra/cfn/*.yml and these builders share. */
export const IDS = {
  plannerFunction: 'PlannerLambdaFunction',
  processorFunction: 'ProcessorLambdaFunction',
  plannerRole: 'PlannerRole',
  processorRole: 'ProcessorRole',
  scheduleRole: 'PlannerScheduleRole',
  schedulerSchedule: 'PlannerSchedulerSchedule1',
  eventsRule: 'PlannerEventsRuleSchedule1',
  ledgerTable: 'LedgerTable',
  runningTotalsTable: 'RunningTotalsTable',
  processorFailureQueue: 'ProcessorFailureQueue',
  scheduleDeadLetterQueue: 'ScheduleDeadLetterQueue',
  scheduleDeadLetterQueuePolicy: 'ScheduleDeadLetterQueuePolicy',
  alarmTopic: 'AlarmTopic',
  alarmTopicKey: 'AlarmTopicKey',
  alarmTopicKeyAlias: 'AlarmTopicKeyAlias',
  alarmTopicPolicy: 'AlarmTopicPolicy',
  dashboard: 'Dashboard',
} as const;

/** Minimum Lambda async event age / EventBridge retry window, in seconds. */
const MIN_EVENT_AGE_SECONDS = 60;

// ---------------------------------------------------------------------------------------------
// Settings (serverless params, as strings or YAML scalars) -> typed values.

/** The stage's params or streams config cannot be deployed as they are; the message says why. */
export class DeployConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeployConfigError';
    // serverless prints `stack` for a failed variable; the message is all a user needs here.
    this.stack = `${this.name}: ${message}`;
  }
}

/** Comma-separated list (the form a `--param` can carry), or a YAML list. */
function list(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String).map((s) => s.trim()).filter(Boolean);
  if (value === undefined || value === null) return [];
  return String(value)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function bool(name: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  const text = String(value).trim().toLowerCase();
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new DeployConfigError(`param ${name} must be true or false, got ${JSON.stringify(value)}`);
}

function int(name: string, value: unknown, { min, max }: { min?: number; max?: number } = {}): number {
  const n = typeof value === 'number' ? value : Number(String(value).trim());
  if (!Number.isInteger(n) || (min !== undefined && n < min) || (max !== undefined && n > max)) {
    const range = min !== undefined && max !== undefined ? ` between ${min} and ${max}` : min !== undefined ? ` >= ${min}` : '';
    throw new DeployConfigError(`param ${name} must be a whole number${range}, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** `rate(5 minutes)` -> 300000; cron expressions have no fixed period (undefined). */
export function schedulePeriodMs(expression: unknown): number | undefined {
  const m = /^rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)$/.exec(String(expression).trim());
  if (!m) {
    if (/^cron\(.+\)$/.test(String(expression).trim())) return undefined;
    throw new DeployConfigError(`param scheduleRate must be "rate(N minutes)" or "cron(...)", got ${JSON.stringify(expression)}`);
  }
  const n = Number(m[1]);
  const plural = m[2] as string;
  const unit = plural.replace(/s$/, '') as 'minute' | 'hour' | 'day';
  if (n < 1) throw new DeployConfigError(`param scheduleRate: the rate must be at least 1, got ${JSON.stringify(expression)}`);
  if ((n === 1) !== (plural === unit)) {
    throw new DeployConfigError(`param scheduleRate: write "rate(1 ${unit})" or "rate(${n === 1 ? 2 : n} ${unit}s)" (EventBridge rejects ${JSON.stringify(expression)})`);
  }
  return n * { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[unit];
}

const MSK_CLUSTER_ARN = /^arn:(aws[a-z-]*):kafka:([a-z0-9-]+):(\d{12}):cluster\/([^/]+)\/([^/]+)$/;

/** Raw inputs: `service`, `stage` and the serverless params (strings, numbers or booleans). */
export type RawSettings = Record<string, unknown>;

export type Settings = {
  service: string;
  stage: string;
  names: { planner: string; processor: string; ledgerTable: string; runningTotalsTable: string; dashboard: string };
  scheduleRate: string;
  /** Undefined for a cron expression. */
  schedulePeriodMs: number | undefined;
  scheduleMethod: 'scheduler' | 'eventBus';
  scheduleEnabled: boolean;
  scheduleMaximumRetryAttempts: number;
  plannerTimeoutSeconds: number;
  processorTimeoutSeconds: number;
  processorMaximumEventAgeSeconds: number;
  processorReservedConcurrency: number | undefined;
  mskClusterArns: string[];
  kafkaSecretArns: string[];
  kafkaSecretsKmsKeyArn: string | undefined;
  tableKmsKeyArn: string | undefined;
  vpc: { subnetIds: string[]; securityGroupIds: string[] } | undefined;
  auditLogTable: string | undefined;
  metricsNamespace: string;
  lagAlarmThreshold: number;
  lagAlarmMinutes: number;
  alarmEmail: string | undefined;
  bundleAwsSdk: boolean;
};

/**
 * Typed settings from the raw serverless params (see `params` in serverless.yml for meanings and
 * defaults). Throws DeployConfigError naming the param for a bad value.
 */
export function parseSettings(raw: RawSettings): Settings {
  const service = String(raw.service);
  const stage = String(raw.stage);
  const prefix = `${service}-${stage}`;
  const subnetIds = list(raw.vpcSubnetIds);
  const securityGroupIds = list(raw.vpcSecurityGroupIds);
  if ((subnetIds.length === 0) !== (securityGroupIds.length === 0)) {
    throw new DeployConfigError('params vpcSubnetIds and vpcSecurityGroupIds go together: set both (for Amazon MSK) or neither');
  }
  const mskClusterArns = list(raw.mskClusterArns);
  for (const arn of mskClusterArns) {
    if (!MSK_CLUSTER_ARN.test(arn)) {
      throw new DeployConfigError(`param mskClusterArns: ${JSON.stringify(arn)} is not an MSK cluster ARN (arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>)`);
    }
  }
  const scheduleMethod = String(raw.scheduleMethod ?? 'scheduler');
  if (scheduleMethod !== 'scheduler' && scheduleMethod !== 'eventBus') {
    throw new DeployConfigError(`param scheduleMethod must be "scheduler" (EventBridge Scheduler) or "eventBus" (EventBridge rule), got ${JSON.stringify(scheduleMethod)}`);
  }
  const reserved = String(raw.processorReservedConcurrency ?? '').trim();
  const kmsKey = String(raw.kafkaSecretsKmsKeyArn ?? '').trim();
  if (kmsKey !== '' && !/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/.test(kmsKey)) {
    throw new DeployConfigError(`param kafkaSecretsKmsKeyArn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), got ${JSON.stringify(kmsKey)}`);
  }
  return {
    service,
    stage,
    names: {
      planner: `${prefix}-planner`,
      processor: `${prefix}-processor`,
      ledgerTable: `${prefix}-ledger`,
      runningTotalsTable: `${prefix}-running-totals`,
      dashboard: `${prefix}`,
    },
    scheduleRate: String(raw.scheduleRate),
    schedulePeriodMs: schedulePeriodMs(raw.scheduleRate),
    scheduleMethod: scheduleMethod as Settings['scheduleMethod'],
    scheduleEnabled: bool('scheduleEnabled', raw.scheduleEnabled ?? true),
    scheduleMaximumRetryAttempts: int('scheduleMaximumRetryAttempts', raw.scheduleMaximumRetryAttempts ?? 2, { min: 0, max: 185 }),
    plannerTimeoutSeconds: int('plannerTimeout', raw.plannerTimeout, { min: 1, max: 900 }),
    processorTimeoutSeconds: int('processorTimeout', raw.processorTimeout, { min: 1, max: 900 }),
    processorMaximumEventAgeSeconds: int('processorMaximumEventAge', raw.processorMaximumEventAge, { min: 60, max: 21600 }),
    processorReservedConcurrency: reserved === '' ? undefined : int('processorReservedConcurrency', reserved, { min: 1 }),
    mskClusterArns,
    kafkaSecretArns: list(raw.kafkaSecretArns),
    kafkaSecretsKmsKeyArn: kmsKey === '' ? undefined : kmsKey,
    tableKmsKeyArn: String(raw.tableKmsKeyArn ?? '').trim() || undefined,
    vpc: subnetIds.length ? { subnetIds, securityGroupIds } : undefined,
    auditLogTable: String(raw.auditLogTable ?? '').trim() || undefined,
    metricsNamespace: String(raw.metricsNamespace || 'KafkaLambdaDirect'),
    lagAlarmThreshold: int('lagAlarmThreshold', raw.lagAlarmThreshold ?? 10000, { min: 0 }),
    lagAlarmMinutes: int('lagAlarmMinutes', raw.lagAlarmMinutes ?? 15, { min: 2, max: 1440 }),
    alarmEmail: String(raw.alarmEmail ?? '').trim() || undefined,
    bundleAwsSdk: bool('bundleAwsSdk', raw.bundleAwsSdk ?? false),
  };
}

// ---------------------------------------------------------------------------------------------
// Checks that tie the streams config to the stack.

/** Host of a `host:port` broker address. */
const brokerHost = (broker: string) => broker.replace(/:\d+$/, '').toLowerCase();

/**
 * A stream on Amazon MSK that can only be reached from the cluster's VPC: IAM auth (MSK only), or a
 * broker on `*.amazonaws.com`, unless every broker is a public-access endpoint (`b-1-public....`).
 */
export function needsVpc(stream: Pick<StreamConfig, 'kafka'>): boolean {
  const hosts = stream.kafka.brokers.map(brokerHost);
  const onMsk = stream.kafka.sasl?.mechanism === 'aws-msk-iam' || hosts.some((h) => h.endsWith('.amazonaws.com'));
  return onMsk && !hosts.every((h) => /^[^.]+-public\./.test(h) && h.endsWith('.amazonaws.com'));
}

/** Environment the stack gives the processor function beyond provider.environment. */
export function processorEnvironment(s: Settings): Record<string, string> {
  return s.auditLogTable ? { AUDIT_LOG_TABLE: s.auditLogTable } : {};
}

/**
 * What the processor checks before a stream's first range, run here with the processor's own code
 * and deployed environment: the handler resolves (registered module, declared mode, its environment
 * variables) and every password read from the environment is set. Returns one line per problem.
 */
async function runtimeProblems(s: Settings, config: DeploymentConfig): Promise<string[]> {
  const env = { LEDGER_TABLE: s.names.ledgerTable, ...processorEnvironment(s) };
  // Handler factories keep the client for later; it never sends anything here.
  const dynamo = new DynamoDBClient({ region: 'us-east-1' });
  const refuse = () => Promise.reject(new Error('not read at package time'));
  const secret = createSecretResolver({ env, readSecretsManager: refuse, readSsmParameter: refuse });
  const problems: string[] = [];
  const add = (stream: StreamConfig, err: unknown) => {
    if (!(err instanceof AppError)) throw err;
    if (stream.handler?.module === 'audit-log' && !s.auditLogTable && err.message.includes('AUDIT_LOG_TABLE')) {
      // The processor names its variable; the stage sets it through a param.
      problems.push(`stream ${stream.id}: handler "audit-log" writes to AUDIT_LOG_TABLE: set the auditLogTable param`);
    } else {
      problems.push(err.message.startsWith(`stream ${stream.id}`) ? err.message : `stream ${stream.id}: ${err.message}`);
    }
  };
  try {
    for (const stream of config.streams) {
      // The local stage is never deployed: a stream without a handler can still be peeked there.
      if (!(s.stage === 'local' && !stream.handler)) {
        try {
          resolveHandler(stream, { dynamo, env }, HANDLERS);
        } catch (err) {
          add(stream, err);
        }
      }
      const sasl = stream.kafka.sasl;
      if (sasl && sasl.mechanism !== 'aws-msk-iam' && 'env' in sasl.password) {
        await secret(sasl.password).catch((err: unknown) => add(stream, err));
      }
    }
  } finally {
    dynamo.destroy();
  }
  return problems;
}

/**
 * Fails packaging for a config the deployed functions could not run as intended: a schedule that
 * does not match the streams' trigger interval (their rate budgets assume it), a stream processor
 * timeout beyond the function's, handler tables without IAM, MSK IAM auth without a cluster, MSK
 * without a VPC, and whatever the processor itself would refuse at its first range.
 */
export async function checkConfig(s: Settings, config: DeploymentConfig): Promise<void> {
  const problems: string[] = [];
  for (const stream of config.streams) {
    if (s.schedulePeriodMs !== undefined && stream.triggerIntervalMs !== s.schedulePeriodMs) {
      problems.push(
        `stream ${stream.id}: triggerIntervalMs is ${stream.triggerIntervalMs} but the planner runs ${s.scheduleRate} (${s.schedulePeriodMs} ms); ` +
          'make them equal (the planner sizes ranges for one trigger interval)',
      );
    }
    if (stream.processor.timeoutMs > s.processorTimeoutSeconds * 1000) {
      problems.push(
        `stream ${stream.id}: processor.timeoutMs is ${stream.processor.timeoutMs} but the processor function times out after ${s.processorTimeoutSeconds} s; ` +
          'lower processor.timeoutMs or raise the processorTimeout param',
      );
    }
    if (stream.kafka.sasl?.mechanism === 'aws-msk-iam' && s.mskClusterArns.length === 0) {
      problems.push(`stream ${stream.id}: aws-msk-iam needs the mskClusterArns param (the cluster ARN scopes the kafka-cluster:* permissions)`);
    }
    if (needsVpc(stream) && !s.vpc && s.stage !== 'local') {
      problems.push(
        `stream ${stream.id}: Amazon MSK brokers are reachable only from the cluster's VPC: set the vpcSubnetIds and vpcSecurityGroupIds params`,
      );
    }
  }
  problems.push(...(await runtimeProblems(s, config)));
  if (problems.length === 1) throw new DeployConfigError(`the streams config does not fit stage ${s.stage}: ${problems[0]}`);
  if (problems.length) throw new DeployConfigError(`the streams config does not fit stage ${s.stage}:\n  - ${problems.join('\n  - ')}`);
}

// ---------------------------------------------------------------------------------------------
// IAM.

const sub = (text: string) => ({ 'Fn::Sub': text });
const getAtt = (id: string, attr: string) => ({ 'Fn::GetAtt': [id, attr] });
const NO_VALUE = { Ref: 'AWS::NoValue' };
const ACCOUNT_PREFIX = (service: string) => `arn:\${AWS::Partition}:${service}:\${AWS::Region}:\${AWS::AccountId}`;

/** CloudFormation's Fn::Sub treats `${...}` as a reference; literal text must escape it as `${!...}`. */
const subLiteral = (text: string) => String(text).replace(/\$\{/g, '${!');

function tableArn(s: Settings, name: string): Cfn {
  if (name === s.names.runningTotalsTable) return getAtt(IDS.runningTotalsTable, 'Arn');
  if (name === s.names.ledgerTable) throw new DeployConfigError(`the ledger table ${name} cannot double as a sink table`);
  return sub(`${ACCOUNT_PREFIX('dynamodb')}:table/${subLiteral(name)}`);
}

/** Sink tables the processor writes: every exactly-once handler's sinkTable, and AUDIT_LOG_TABLE when a stream uses audit-log. */
export function sinkTables(s: Settings, config: DeploymentConfig): string[] {
  const names = new Set<string>();
  for (const stream of config.streams) {
    if (stream.handler?.sinkTable) names.add(stream.handler.sinkTable);
    if (stream.handler?.module === 'audit-log' && s.auditLogTable) names.add(s.auditLogTable);
  }
  return [...names].sort();
}

/** IAM resource ARNs of the Secrets Manager secrets and SSM parameters that hold Kafka passwords. */
export function secretResources(s: Settings, config: DeploymentConfig): { secrets: Cfn[]; parameters: Cfn[] } {
  const secrets: Cfn[] = [];
  const parameters: Cfn[] = [];
  const addSecret = (id: string) => {
    if (id.startsWith('arn:')) {
      // A complete secret ARN ends with "-" and 6 random characters; a partial one matches them by wildcard.
      secrets.push(/:secret:.+-[A-Za-z0-9]{6}$/.test(id) ? id : `${id}-??????`);
    } else {
      secrets.push(sub(`${ACCOUNT_PREFIX('secretsmanager')}:secret:${subLiteral(id)}-??????`));
    }
  };
  const addParameter = (name: string) => {
    if (name.startsWith('arn:')) parameters.push(name);
    else parameters.push(sub(`${ACCOUNT_PREFIX('ssm')}:parameter/${subLiteral(name.replace(/^\//, ''))}`));
  };
  for (const stream of config.streams) {
    const sasl = stream.kafka.sasl;
    if (!sasl || sasl.mechanism === 'aws-msk-iam') continue;
    const ref = sasl.password;
    if ('secretArn' in ref) addSecret(ref.secretArn);
    else if ('ssmParameter' in ref) addParameter(ref.ssmParameter);
  }
  for (const arn of s.kafkaSecretArns) {
    if (/^arn:aws[a-z-]*:secretsmanager:/.test(arn)) addSecret(arn);
    else if (/^arn:aws[a-z-]*:ssm:/.test(arn)) addParameter(arn);
    else throw new DeployConfigError(`param kafkaSecretArns: ${JSON.stringify(arn)} is neither a Secrets Manager secret ARN nor an SSM parameter ARN`);
  }
  const unique = (items: Cfn[]) => [...new Map(items.map((i) => [JSON.stringify(i), i])).values()];
  return { secrets: unique(secrets), parameters: unique(parameters) };
}

function secretStatements(s: Settings, config: DeploymentConfig): Statement[] {
  const { secrets, parameters } = secretResources(s, config);
  const statements: Statement[] = [];
  if (secrets.length) statements.push({ Sid: 'KafkaSecretsManager', Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: secrets });
  if (parameters.length) statements.push({ Sid: 'KafkaSsmParameters', Effect: 'Allow', Action: ['ssm:GetParameter'], Resource: parameters });
  if (s.kafkaSecretsKmsKeyArn && (secrets.length || parameters.length)) {
    statements.push({
      Sid: 'KafkaSecretsKms',
      Effect: 'Allow',
      Action: ['kms:Decrypt'],
      Resource: [s.kafkaSecretsKmsKeyArn],
      Condition: {
        StringEquals: { 'kms:ViaService': [sub('secretsmanager.${AWS::Region}.amazonaws.com'), sub('ssm.${AWS::Region}.amazonaws.com')] },
      },
    });
  }
  return statements;
}

/** MSK IAM: kafka-cluster:* scoped to the clusters, the streams' topics and (processor) consumer groups. */
function mskStatements(s: Settings, config: DeploymentConfig, role: 'planner' | 'processor'): Statement[] {
  const iamStreams = config.streams.filter((st) => st.kafka.sasl?.mechanism === 'aws-msk-iam');
  if (iamStreams.length === 0) return [];
  const clusters = s.mskClusterArns;
  const topicArns = new Set<string>();
  const groupArns = new Set<string>();
  for (const cluster of clusters) {
    const topicBase = cluster.replace(':cluster/', ':topic/');
    const groupBase = cluster.replace(':cluster/', ':group/');
    for (const stream of iamStreams) {
      // A pattern is a regex, which IAM cannot express: every topic of the cluster.
      for (const topic of stream.topics ?? ['*']) topicArns.add(`${topicBase}/${topic}`);
      if (stream.consumerGroup) groupArns.add(`${groupBase}/${stream.consumerGroup}`);
    }
  }
  const statements: Statement[] = [
    { Sid: 'MskConnect', Effect: 'Allow', Action: ['kafka-cluster:Connect', 'kafka-cluster:DescribeCluster'], Resource: [...clusters] },
    {
      Sid: 'MskTopics',
      Effect: 'Allow',
      Action: role === 'planner' ? ['kafka-cluster:DescribeTopic'] : ['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'],
      Resource: [...topicArns].sort(),
    },
  ];
  if (role === 'processor' && groupArns.size) {
    statements.push({ Sid: 'MskConsumerGroups', Effect: 'Allow', Action: ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'], Resource: [...groupArns].sort() });
  }
  return statements;
}

function logStatement(functionName: string): Statement {
  return {
    Sid: 'Logs',
    Effect: 'Allow',
    Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
    Resource: [sub(`${ACCOUNT_PREFIX('logs')}:log-group:/aws/lambda/${functionName}:*`)],
  };
}

/** DynamoDB actions a TransactWriteItems needs are those of its parts (there is no TransactWriteItems IAM action). */
export const LEDGER_ACTIONS = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'];
export const SINK_ACTIONS = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'];

function ledgerStatement(): Statement {
  return {
    Sid: 'Ledger',
    Effect: 'Allow',
    Action: LEDGER_ACTIONS,
    Resource: [getAtt(IDS.ledgerTable, 'Arn'), sub(`\${${IDS.ledgerTable}.Arn}/index/${OPEN_RANGES_INDEX}`)],
  };
}

function lambdaRole(s: Settings, description: string, statements: Statement[]): CfnResource {
  return {
    Type: 'AWS::IAM::Role',
    Properties: {
      Description: description,
      AssumeRolePolicyDocument: {
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }],
      },
      // ENI management for functions in a VPC (Amazon MSK); needs "*" resources, hence AWS's managed policy.
      ManagedPolicyArns: s.vpc ? [sub('arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole')] : NO_VALUE,
      Policies: [{ PolicyName: 'least-privilege', PolicyDocument: { Version: '2012-10-17', Statement: statements } }],
    },
  };
}

/**
 * One role per function. The planner reads and writes the ledger and invokes the processor, and
 * nothing else (no sink table); the processor reads and writes the ledger and the sink tables and
 * sends failed events to its on-failure queue, and cannot invoke any function.
 */
export function iamRoles(s: Settings, config: DeploymentConfig): { Resources: CfnResources } {
  const sinks = sinkTables(s, config);
  const secrets = secretStatements(s, config);
  const planner: Statement[] = [
    logStatement(s.names.planner),
    ledgerStatement(),
    { Sid: 'DispatchRanges', Effect: 'Allow', Action: ['lambda:InvokeFunction'], Resource: [getAtt(IDS.processorFunction, 'Arn')] },
    ...secrets,
    ...mskStatements(s, config, 'planner'),
  ];
  const processor: Statement[] = [
    logStatement(s.names.processor),
    ledgerStatement(),
    ...(sinks.length ? [{ Sid: 'SinkTables', Effect: 'Allow' as const, Action: SINK_ACTIONS, Resource: sinks.map((name) => tableArn(s, name)) }] : []),
    { Sid: 'OnFailureDestination', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [getAtt(IDS.processorFailureQueue, 'Arn')] },
    ...secrets,
    ...mskStatements(s, config, 'processor'),
  ];
  return {
    Resources: {
      [IDS.plannerRole]: lambdaRole(s, `${s.names.planner}: ledger, processor invoke, Kafka`, planner),
      [IDS.processorRole]: lambdaRole(s, `${s.names.processor}: ledger, sink tables, Kafka`, processor),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Schedule.

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

// ---------------------------------------------------------------------------------------------
// Alarms and dashboard.

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

function metric(s: Settings, id: string, name: string, service: 'planner' | 'processor', stream: string, stat: string, periodSeconds: number) {
  return {
    Id: id,
    ReturnData: false,
    MetricStat: {
      Metric: {
        Namespace: s.metricsNamespace,
        MetricName: name,
        // Powertools adds `service`; the handlers add `stream` (see lib/planner/metrics.ts, functions/processor.ts).
        Dimensions: [
          { Name: 'service', Value: service },
          { Name: 'stream', Value: stream },
        ],
      },
      Period: periodSeconds,
      Stat: stat,
    },
  };
}

function alarm(props: Record<string, Cfn>): CfnResource {
  const actions = [{ Ref: IDS.alarmTopic }];
  return {
    Type: 'AWS::CloudWatch::Alarm',
    Properties: {
      ActionsEnabled: true,
      AlarmActions: actions,
      OKActions: actions,
      ...props,
    },
  };
}

/** Every alarm of the stack is named `<service>-<stage>-...`; key and topic policies match them by this ARN pattern. */
export function alarmArnPattern(s: Settings): Cfn {
  return sub(`arn:\${AWS::Partition}:cloudwatch:\${AWS::Region}:\${AWS::AccountId}:alarm:${subLiteral(`${s.service}-${s.stage}`)}-*`);
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

/**
 * A topic of the stream was deleted and re-created under its name (planner TopicRecreated): the old
 * topic's unread records are gone with it, and the stream now reads the new one. The ledger keeps
 * what the old incarnation had committed and planned (`status` shows it).
 */
function topicRecreatedAlarm(s: Settings, prefix: string, streamId: string, period: number): CfnResource {
  return alarm({
    AlarmName: `${prefix}-${streamId}-topic-recreated`,
    AlarmDescription: `Stream ${streamId}: a topic was deleted and re-created under the same name (planner TopicRecreated); the old incarnation was closed with a record of what it had committed and planned, and the new one is read per recreatedTopicOffsets.`,
    Namespace: s.metricsNamespace,
    MetricName: 'TopicRecreated',
    Dimensions: [
      { Name: 'service', Value: 'planner' },
      { Name: 'stream', Value: streamId },
    ],
    Statistic: 'Sum',
    Period: period,
    ComparisonOperator: 'GreaterThanThreshold',
    Threshold: 0,
    EvaluationPeriods: 1,
    TreatMissingData: 'notBreaching',
  });
}

/** Alarms per stream on the custom metrics, stack-wide alarms on Lambda and SQS, and a dashboard. */
export function observability(s: Settings, config: DeploymentConfig): { Resources: CfnResources } {
  const period = Math.max(60, Math.floor((s.schedulePeriodMs ?? 60_000) / 1000));
  const names = streamLogicalNames(config.streams);
  const resources: CfnResources = {};
  const alarmIds: string[] = [];
  const add = (id: string, resource: CfnResource) => {
    resources[id] = resource;
    alarmIds.push(id);
  };
  const prefix = `${s.service}-${s.stage}`;

  for (const stream of config.streams) {
    const n = names.get(stream.id) as string;
    const lagPeriods = Math.max(2, Math.ceil((s.lagAlarmMinutes * 60) / period));
    add(
      `LagGrowing${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-lag-growing`,
        AlarmDescription: `Stream ${stream.id}: TotalLag above ${s.lagAlarmThreshold} records and still growing in most planner runs of the last ${s.lagAlarmMinutes} minutes (processing falls behind).`,
        Metrics: [
          metric(s, 'lag', 'TotalLag', 'planner', stream.id, 'Maximum', period),
          { Id: 'growing', Expression: `IF(lag > ${s.lagAlarmThreshold} AND DIFF(lag) > 0, 1, 0)`, Label: 'lag above threshold and growing', ReturnData: true },
        ],
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Threshold: 1,
        EvaluationPeriods: lagPeriods,
        DatapointsToAlarm: Math.max(2, Math.ceil(lagPeriods * 0.6)),
        TreatMissingData: 'notBreaching',
      }),
    );
    add(
      `DataLoss${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-data-loss`,
        AlarmDescription: `Stream ${stream.id}: retention deleted offsets that were never processed (planner DataLossEvents/DataLossRecords, processor DataLossRecords). The ledger records the exact spans.`,
        Metrics: [
          metric(s, 'plannerEvents', 'DataLossEvents', 'planner', stream.id, 'Sum', period),
          metric(s, 'plannerRecords', 'DataLossRecords', 'planner', stream.id, 'Sum', period),
          metric(s, 'processorRecords', 'DataLossRecords', 'processor', stream.id, 'Sum', period),
          { Id: 'loss', Expression: 'FILL(plannerEvents, 0) + FILL(plannerRecords, 0) + FILL(processorRecords, 0)', Label: 'data loss', ReturnData: true },
        ],
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    add(`TopicRecreated${n}Alarm`, topicRecreatedAlarm(s, prefix, stream.id, period));
    add(
      `FailedRanges${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-failed-ranges`,
        AlarmDescription: `Stream ${stream.id}: ranges parked after maxAttempts, or partitions failed (planner RangesParked/PartitionsFailed, processor RangesParked). Nothing advances there until an operator acts.`,
        Metrics: [
          metric(s, 'plannerParked', 'RangesParked', 'planner', stream.id, 'Sum', period),
          metric(s, 'processorParked', 'RangesParked', 'processor', stream.id, 'Sum', period),
          metric(s, 'partitionsFailed', 'PartitionsFailed', 'planner', stream.id, 'Maximum', period),
          { Id: 'failed', Expression: 'FILL(plannerParked, 0) + FILL(processorParked, 0) + FILL(partitionsFailed, 0)', Label: 'failed ranges', ReturnData: true },
        ],
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    add(
      `DeadLetters${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-dead-letters`,
        AlarmDescription: `Stream ${stream.id}: the handler rejected records after maxAttempts and they were dead-lettered in the ledger (processor DeadLetters).`,
        Namespace: s.metricsNamespace,
        MetricName: 'DeadLetters',
        Dimensions: [
          { Name: 'service', Value: 'processor' },
          { Name: 'stream', Value: stream.id },
        ],
        Statistic: 'Sum',
        Period: period,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
    add(
      `PlannerFailed${n}Alarm`,
      alarm({
        AlarmName: `${prefix}-${stream.id}-planner-failed`,
        AlarmDescription: `Stream ${stream.id}: the planner run failed in 3 consecutive triggers (PlannerFailed); see the planner's log for the reason.`,
        Namespace: s.metricsNamespace,
        MetricName: 'PlannerFailed',
        Dimensions: [
          { Name: 'service', Value: 'planner' },
          { Name: 'stream', Value: stream.id },
        ],
        Statistic: 'Sum',
        Period: period,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        TreatMissingData: 'notBreaching',
      }),
    );
  }

  const lambdaDim = (name: string) => [{ Name: 'FunctionName', Value: name }];
  add(
    'PlannerErrorsAlarm',
    alarm({
      AlarmName: `${prefix}-planner-errors`,
      AlarmDescription: 'The planner function failed (error or timeout) in 3 consecutive periods.',
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: lambdaDim(s.names.planner),
      Statistic: 'Sum',
      Period: period,
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
    }),
  );
  if (s.scheduleEnabled) {
    add(
      'PlannerNotRunningAlarm',
      alarm({
        AlarmName: `${prefix}-planner-not-running`,
        AlarmDescription: `The planner was not invoked for 3 periods although its schedule (${s.scheduleRate}) is enabled.`,
        Namespace: 'AWS/Lambda',
        MetricName: 'Invocations',
        Dimensions: lambdaDim(s.names.planner),
        Statistic: 'Sum',
        Period: period,
        ComparisonOperator: 'LessThanThreshold',
        Threshold: 1,
        EvaluationPeriods: 3,
        TreatMissingData: 'breaching',
      }),
    );
  }
  const queueAlarm = (id: string, queueId: string, what: { name: string; description: string }) =>
    add(
      id,
      alarm({
        AlarmName: `${prefix}-${what.name}`,
        AlarmDescription: what.description,
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: getAtt(queueId, 'QueueName') }],
        Statistic: 'Maximum',
        Period: 300,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
      }),
    );
  queueAlarm('ProcessorFailuresAlarm', IDS.processorFailureQueue, {
    name: 'processor-failures',
    description:
      'Processor invocations failed or expired in the async queue (on-failure destination). The planner re-dispatches their ranges; the messages tell why.',
  });
  queueAlarm('ScheduleDeadLettersAlarm', IDS.scheduleDeadLetterQueue, {
    name: 'schedule-dead-letters',
    description: 'Planner schedule ticks could not be delivered to the planner function (dead-letter queue).',
  });

  resources[IDS.dashboard] = { Type: 'AWS::CloudWatch::Dashboard', Properties: { DashboardName: s.names.dashboard, DashboardBody: dashboardBody(s, config, alarmIds, period) } };
  if (s.alarmEmail) {
    resources.AlarmEmailSubscription = { Type: 'AWS::SNS::Subscription', Properties: { TopicArn: { Ref: IDS.alarmTopic }, Protocol: 'email', Endpoint: s.alarmEmail } };
  }
  return { Resources: resources };
}

/** Dashboard JSON as an Fn::Sub string (region and alarm ARNs filled in by CloudFormation). */
function dashboardBody(s: Settings, config: DeploymentConfig, alarmIds: string[], period: number): Cfn {
  const ns = s.metricsNamespace;
  const widgets: Record<string, unknown>[] = [];
  let y = 0;
  const text = (markdown: string) => {
    widgets.push({ type: 'text', x: 0, y, width: 24, height: 2, properties: { markdown } });
    y += 2;
  };
  const row = (items: Record<string, unknown>[]) => {
    const width = Math.floor(24 / items.length);
    items.forEach((props, i) => widgets.push({ type: 'metric', x: i * width, y, width, height: 6, properties: { region: '${AWS::Region}', period, ...props } }));
    y += 6;
  };
  text(`# ${subLiteral(s.service)} (${subLiteral(s.stage)})\nPlanner schedule: \`${subLiteral(s.scheduleRate)}\`. Metrics namespace \`${subLiteral(ns)}\`.`);
  widgets.push({ type: 'alarm', x: 0, y, width: 24, height: 4, properties: { title: 'Alarms', alarms: alarmIds.map((id) => `\${${id}.Arn}`) } });
  y += 4;
  for (const stream of config.streams) {
    const id = subLiteral(stream.id);
    const p = (name: string, extra: Record<string, string> = {}) => [ns, name, 'service', 'planner', 'stream', id, extra];
    const q = (name: string, extra: Record<string, string> = {}) => [ns, name, 'service', 'processor', 'stream', id, extra];
    text(`## Stream \`${id}\``);
    row([
      { title: `${id}: lag (records)`, stat: 'Maximum', metrics: [p('TotalLag'), p('MaxPartitionLag')] },
      { title: `${id}: records planned / processed`, stat: 'Sum', metrics: [p('RecordsPlanned'), q('RecordsProcessed')] },
      {
        title: `${id}: ranges`,
        stat: 'Sum',
        metrics: [p('RangesPlanned'), p('RangesInFlight', { stat: 'Maximum' }), p('RangesRedispatched'), q('RangesCompleted'), q('RangesPartial')],
      },
      {
        title: `${id}: failures`,
        stat: 'Sum',
        metrics: [
          p('RangesParked', { label: 'parked (planner)' }),
          q('RangesParked', { label: 'parked (processor)' }),
          p('PartitionsFailed'),
          p('DispatchFailures'),
          q('DeadLetters'),
          p('DataLossRecords', { label: 'data loss (planner)' }),
          q('DataLossRecords', { label: 'data loss (processor)' }),
          p('PlannerFailed'),
        ],
      },
    ]);
  }
  text('## Functions and queues');
  const fn = (name: string, metricName: string, extra: Record<string, string> = {}) => ['AWS/Lambda', metricName, 'FunctionName', name, extra];
  row([
    { title: 'Invocations / errors / throttles', stat: 'Sum', metrics: [fn(s.names.planner, 'Invocations'), fn(s.names.planner, 'Errors'), fn(s.names.processor, 'Invocations'), fn(s.names.processor, 'Errors'), fn(s.names.processor, 'Throttles')] },
    { title: 'Duration (p99, ms)', stat: 'p99', metrics: [fn(s.names.planner, 'Duration'), fn(s.names.processor, 'Duration')] },
    { title: 'Processor concurrency and async queue', stat: 'Maximum', metrics: [fn(s.names.processor, 'ConcurrentExecutions'), fn(s.names.processor, 'AsyncEventAge'), fn(s.names.processor, 'AsyncEventsDropped', { stat: 'Sum' })] },
    {
      title: 'Failure queues (messages)',
      stat: 'Maximum',
      metrics: [
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', `\${${IDS.processorFailureQueue}.QueueName}`, { label: 'processor on-failure' }],
        ['AWS/SQS', 'ApproximateNumberOfMessagesVisible', 'QueueName', `\${${IDS.scheduleDeadLetterQueue}.QueueName}`, { label: 'schedule dead letters' }],
      ],
    },
  ]);
  return sub(JSON.stringify({ widgets }));
}

// ---------------------------------------------------------------------------------------------
// Function settings.

export function vpc(s: Settings): { subnetIds: string[]; securityGroupIds: string[] } | null {
  return s.vpc ? { subnetIds: s.vpc.subnetIds, securityGroupIds: s.vpc.securityGroupIds } : null;
}

/** Table encryption at rest with KMS: the AWS managed key (aws/dynamodb), or tableKmsKeyArn. */
export function tableSse(s: Settings): Record<string, Cfn> {
  return s.tableKmsKeyArn ? { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: s.tableKmsKeyArn } : { SSEEnabled: true, SSEType: 'KMS' };
}

export function reservedConcurrency(s: Settings): number | { Ref: string } {
  return s.processorReservedConcurrency ?? NO_VALUE;
}

/**
 * Packages the nodejs22.x runtime provides (it ships the AWS SDK v3 clients, lib-dynamodb,
 * util-dynamodb and credential-providers), left out of the bundles. Everything else is bundled,
 * including the small @aws-sdk utilities the MSK IAM signer pulls in (e.g. the deprecated
 * util-utf8-browser, which recent runtimes no longer carry). Excluding clients and libraries as a
 * set keeps one SDK copy: a bundled client next to the runtime's lib-dynamodb would break
 * `instanceof` checks on SDK errors.
 */
export const RUNTIME_PROVIDED = ['@aws-sdk/client-*', '@aws-sdk/lib-*', '@aws-sdk/util-dynamodb', '@aws-sdk/credential-providers'];

/** serverless-esbuild's `exclude`: the runtime's AWS SDK v3, unless bundleAwsSdk. */
export function esbuildExclude(s: Settings): string[] {
  return s.bundleAwsSdk ? [] : [...RUNTIME_PROVIDED];
}

