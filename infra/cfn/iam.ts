/** Per-function IAM roles: least privilege on the ledger, sink tables, Kafka secrets, MSK, schema registries and what handlers declare. */
import { usesSubstitution } from '../../lib/config/handler-access';
import type { DeploymentConfig, SecretRef, StreamConfig } from '../../lib/config/schema';
import { ACCOUNT_PREFIX, getAtt, NO_VALUE, sub, subLiteral, type Cfn, type CfnResource, type CfnResources, type Statement } from './cfn';
import { failureDestinationStatements } from './destinations-iam';
import { IDS, streamLogicalNames } from './names';
import { sinkTableLogicalIds } from './sink-tables';
import { DeployConfigError, type Settings } from './settings';
import { hasSegmentsFunction } from './functions';
import { tickChainStatements } from './tick-chain';

/** IAM resource of a sink table: a table the stack declares, or an existing table by name (never the ledger). */
function tableArn(s: Settings, name: string, declared: Map<string, string>): Cfn {
  const id = declared.get(name);
  if (id) return getAtt(id, 'Arn');
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

type SecretResources = { secrets: Cfn[]; parameters: Cfn[] };

/** Collects the IAM resources of secret references; `resources()` lists each once, in order of first use. */
function secretResourceList() {
  const secrets: Cfn[] = [];
  const parameters: Cfn[] = [];
  const unique = (items: Cfn[]) => [...new Map(items.map((i) => [JSON.stringify(i), i])).values()];
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
  return {
    addSecret,
    addParameter,
    /** A reference to the environment needs no grant. */
    addRef(ref: SecretRef) {
      if ('secretArn' in ref) addSecret(ref.secretArn);
      else if ('ssmParameter' in ref) addParameter(ref.ssmParameter);
    },
    resources: (): SecretResources => ({ secrets: unique(secrets), parameters: unique(parameters) }),
  };
}

/** IAM resource ARNs of the Secrets Manager secrets and SSM parameters that hold Kafka passwords. */
export function secretResources(s: Settings, config: DeploymentConfig): SecretResources {
  const list = secretResourceList();
  for (const stream of config.streams) {
    const sasl = stream.kafka.sasl;
    if (sasl && sasl.mechanism !== 'aws-msk-iam') list.addRef(sasl.password);
  }
  for (const arn of s.kafkaSecretArns) {
    if (/^arn:aws[a-z-]*:secretsmanager:/.test(arn)) list.addSecret(arn);
    else if (/^arn:aws[a-z-]*:ssm:/.test(arn)) list.addParameter(arn);
    else
      throw new DeployConfigError(
        `param kafkaSecretArns: ${JSON.stringify(arn)} is neither a Secrets Manager secret ARN nor an SSM parameter ARN`,
      );
  }
  return list.resources();
}

/** IAM resource ARNs of the secrets the streams' handlers read (`handler.secrets`): the processor's only. */
export function handlerSecretResources(config: DeploymentConfig): SecretResources {
  const list = secretResourceList();
  for (const stream of config.streams) for (const ref of Object.values(stream.handler?.secrets ?? {})) list.addRef(ref);
  return list.resources();
}

/** IAM resource ARNs of the Confluent schema registry passwords the streams' `value` / `key` settings name: the processor's only. */
export function registrySecretResources(config: DeploymentConfig): SecretResources {
  const list = secretResourceList();
  for (const stream of config.streams) {
    for (const field of ['value', 'key'] as const) {
      const registry = stream[field]?.registry;
      if (registry && 'confluent' in registry && registry.confluent.password) list.addRef(registry.confluent.password);
    }
  }
  return list.resources();
}

/**
 * glue:GetSchemaVersion for the processor only, when a stream decodes with a Glue registry. A record
 * names its schema version by id alone, and Glue authorizes that lookup only against `*` (it does not
 * scope GetSchemaVersion by registry when called with a SchemaVersionId; AWS's own deserializer needs
 * the same grant). It is a read of schema definitions; the decoder itself refuses a version that
 * belongs to another registry than the stream names (registry.glue.ts).
 */
export function glueRegistryStatements(config: DeploymentConfig): Statement[] {
  const decodesWithGlue = config.streams.some((stream) =>
    (['value', 'key'] as const).some((field) => {
      const registry = stream[field]?.registry;
      return registry !== undefined && 'glue' in registry;
    }),
  );
  return decodesWithGlue ? [{ Sid: 'GlueSchemaRegistry', Effect: 'Allow', Action: ['glue:GetSchemaVersion'], Resource: ['*'] }] : [];
}

/** Reads of the given secrets and parameters, and their decryption with the stage's KMS key through those services only. */
function secretStatements(
  s: Settings,
  { secrets, parameters }: SecretResources,
  sidPrefix: 'Kafka' | 'Handler' | 'SchemaRegistry',
): Statement[] {
  const statements: Statement[] = [];
  if (secrets.length)
    statements.push({ Sid: `${sidPrefix}SecretsManager`, Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: secrets });
  if (parameters.length)
    statements.push({ Sid: `${sidPrefix}SsmParameters`, Effect: 'Allow', Action: ['ssm:GetParameter'], Resource: parameters });
  if (s.kafkaSecretsKmsKeyArn && (secrets.length || parameters.length)) {
    statements.push({
      Sid: `${sidPrefix}SecretsKms`,
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

/**
 * The statements the streams' handlers declare (`handler.iam`), one per entry, as written: the
 * config refuses wildcard actions and unnamed resources, so nothing here widens them. A resource
 * naming a pseudo parameter becomes an Fn::Sub (the config allows no other `${...}`).
 */
export function handlerStatements(config: DeploymentConfig): Array<Statement & { origin: string }> {
  const names = streamLogicalNames(config.streams);
  return config.streams.flatMap((stream) =>
    (stream.handler?.iam ?? []).map((entry, i) => ({
      origin: `stream ${stream.id}: handler.iam[${i}]`,
      Sid: entry.sid ?? `Stream${names.get(stream.id) ?? ''}Handler${i + 1}`,
      Effect: 'Allow' as const,
      Action: [...entry.actions],
      Resource: entry.resources.map((r) => (usesSubstitution(r) ? sub(r) : r)),
    })),
  );
}

/** The processor's handler statements after its own, refusing a Sid used twice (IAM would refuse the policy). */
function withHandlerStatements(own: Statement[], config: DeploymentConfig): Statement[] {
  const used = new Set(own.map((st) => st.Sid));
  const extra: Statement[] = [];
  for (const { origin, ...statement } of handlerStatements(config)) {
    if (used.has(statement.Sid)) {
      throw new DeployConfigError(
        `${origin}: the statement id ${JSON.stringify(statement.Sid)} is taken ` +
          `by another statement of the processor role; set "sid" to another id`,
      );
    }
    used.add(statement.Sid);
    extra.push(statement);
  }
  return [...own, ...extra];
}

/**
 * MSK IAM. A stream signing with the functions' own credentials gets kafka-cluster:* scoped to the
 * clusters, its topics and (processor) its consumer group. A stream with `roleArn` gets only
 * sts:AssumeRole on that role, and no kafka-cluster:* here: the broker authorizes the identity that
 * signed the token, the assumed role, so its Kafka permissions are that role's policy in the other
 * account; granting them to the function's role too would be privilege nothing uses.
 */
function mskStatements(s: Settings, config: DeploymentConfig, role: 'planner' | 'processor'): Statement[] {
  const iamStreams = config.streams.filter((st) => st.kafka.sasl?.mechanism === 'aws-msk-iam');
  const roleArnOf = (st: StreamConfig) => (st.kafka.sasl?.mechanism === 'aws-msk-iam' ? st.kafka.sasl.roleArn : undefined);
  const ownCredentials = iamStreams.filter((st) => roleArnOf(st) === undefined);
  const assumed = [...new Set(iamStreams.map(roleArnOf).filter((arn): arn is string => arn !== undefined))].sort();
  const statements = ownCredentials.length ? kafkaClusterStatements(s, ownCredentials, role) : [];
  if (assumed.length) statements.push({ Sid: 'MskAssumeRole', Effect: 'Allow', Action: ['sts:AssumeRole'], Resource: assumed });
  return statements;
}

/** kafka-cluster:* on the clusters, the streams' topics and (processor) consumer groups. */
function kafkaClusterStatements(s: Settings, iamStreams: StreamConfig[], role: 'planner' | 'processor'): Statement[] {
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
    statements.push({
      Sid: 'MskConsumerGroups',
      Effect: 'Allow',
      Action: ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'],
      Resource: [...groupArns].sort(),
    });
  }
  return statements;
}

/**
 * With functionKmsKeyArn: kms:Decrypt on that key only, for the function's environment. It is what
 * osls gives its own default role when a key is set; Lambda itself also decrypts through a grant it
 * creates for the role when the function is deployed.
 */
function environmentKeyStatements(s: Settings): Statement[] {
  if (s.functionKmsKeyArn === undefined) return [];
  return [{ Sid: 'EnvironmentKms', Effect: 'Allow', Action: ['kms:Decrypt'], Resource: [s.functionKmsKeyArn] }];
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
export const LEDGER_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:ConditionCheckItem',
];
/**
 * A folded batch reads its items (BatchGetItem) and writes them as PartiQL statements
 * (BatchExecuteStatement is authorised by the PartiQL action of each statement).
 */
export const SINK_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:PartiQLInsert',
  'dynamodb:PartiQLUpdate',
];

function ledgerStatement(): Statement {
  return {
    Sid: 'Ledger',
    Effect: 'Allow',
    Action: LEDGER_ACTIONS,
    Resource: [getAtt(IDS.ledgerTable, 'Arn')],
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
 * The statements of a function that runs the processor's handler (the processor, and the segments
 * function): the ledger, the sink tables, its on-failure queue, Kafka, the handlers' secrets and
 * schema registries, the failure destinations (the handlers' own statements come after these).
 */
function processorStatements(s: Settings, config: DeploymentConfig, functionName: string): Statement[] {
  const sinks = sinkTables(s, config);
  const declared = sinkTableLogicalIds(s, config);
  return [
    logStatement(functionName),
    ...environmentKeyStatements(s),
    ledgerStatement(),
    ...(sinks.length
      ? [{ Sid: 'SinkTables', Effect: 'Allow' as const, Action: SINK_ACTIONS, Resource: sinks.map((name) => tableArn(s, name, declared)) }]
      : []),
    { Sid: 'OnFailureDestination', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [getAtt(IDS.processorFailureQueue, 'Arn')] },
    ...secretStatements(s, secretResources(s, config), 'Kafka'),
    ...mskStatements(s, config, 'processor'),
    ...secretStatements(s, handlerSecretResources(config), 'Handler'),
    ...failureDestinationStatements(s, config),
    ...glueRegistryStatements(config),
    ...secretStatements(s, registrySecretResources(config), 'SchemaRegistry'),
  ];
}

/**
 * The segments function's role, when the stack has it (a continuous stream): the processor's
 * statements, and the invoke of itself (a segment invokes its successor). By name, not by the
 * function's attribute: the function depends on this role, so the role cannot depend on it.
 */
function segmentsRole(s: Settings, config: DeploymentConfig): CfnResources {
  if (!hasSegmentsFunction(config)) return {};
  const statements: Statement[] = [
    ...processorStatements(s, config, s.names.segments),
    {
      Sid: 'InvokeSuccessor',
      Effect: 'Allow',
      Action: ['lambda:InvokeFunction'],
      Resource: [sub(`${ACCOUNT_PREFIX('lambda')}:function:${subLiteral(s.names.segments)}`)],
    },
  ];
  return {
    [IDS.segmentsRole]: lambdaRole(
      s,
      `${s.names.segments}: ledger, sink tables, Kafka, successor invoke`,
      withHandlerStatements(statements, config),
    ),
  };
}

/**
 * One role per function. The planner reads and writes the ledger and invokes the processor (and
 * the segments function, when a stream is continuous), and nothing else (no sink table) but the
 * streams' failure destinations, which every role writes; the processor reads and writes the ledger
 * and the sink tables, sends failed events to its on-failure queue, reads the handlers' secrets and
 * gets the statements the handlers declare, and invokes no function unless a handler declares it.
 * The segments function's role is the processor's, and may invoke itself. Outputs: the role ARNs.
 */
export function iamRoles(s: Settings, config: DeploymentConfig): { Resources: CfnResources; Outputs: Record<string, Cfn> } {
  const invoked = [getAtt(IDS.processorFunction, 'Arn'), ...(hasSegmentsFunction(config) ? [getAtt(IDS.segmentsFunction, 'Arn')] : [])];
  const planner: Statement[] = [
    logStatement(s.names.planner),
    ...environmentKeyStatements(s),
    ledgerStatement(),
    { Sid: 'DispatchRanges', Effect: 'Allow', Action: ['lambda:InvokeFunction'], Resource: invoked },
    ...secretStatements(s, secretResources(s, config), 'Kafka'),
    ...mskStatements(s, config, 'planner'),
    ...failureDestinationStatements(s, config),
    ...tickChainStatements(s, config),
  ];
  const processor = processorStatements(s, config, s.names.processor);
  const segments = segmentsRole(s, config);
  return {
    Resources: {
      [IDS.plannerRole]: lambdaRole(s, `${s.names.planner}: ledger, processor invoke, Kafka`, planner),
      [IDS.processorRole]: lambdaRole(s, `${s.names.processor}: ledger, sink tables, Kafka`, withHandlerStatements(processor, config)),
      ...segments,
    },
    // CloudFormation names the roles (<stack>-PlannerRole-<random>); a trust policy elsewhere (MSK
    // IAM roleArn in another account) names these ARNs.
    Outputs: {
      PlannerRoleArn: { Value: getAtt(IDS.plannerRole, 'Arn') },
      ProcessorRoleArn: { Value: getAtt(IDS.processorRole, 'Arn') },
      ...(segments[IDS.segmentsRole] ? { SegmentsRoleArn: { Value: getAtt(IDS.segmentsRole, 'Arn') } } : {}),
    },
  };
}
