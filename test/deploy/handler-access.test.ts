/**
 * Handlers that write elsewhere: the statements, variables and secrets a stream's handler declares
 * (`handler.iam`, `handler.environment`, `handler.secrets`) reach the processor, and only the
 * processor: first through the builders, then in a template packaged offline with osls (and
 * checked by cfn-lint). A wildcard action fails packaging with one line and exit code 1.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseDeploymentConfig, type DeploymentConfig } from '../../lib/config/schema';
import {
  checkConfig,
  DeployConfigError,
  handlerSecretResources,
  iamRoles,
  processorEnvironment,
  type Statement,
} from '../../infra/cfn/builders';
import { deploySettings } from '../support/deploy-settings';
import { cfnLint, ROOT, runSlsPackage, slsPackage, type Packaged, type Template } from './package';

const QUEUE = 'arn:aws:sqs:us-east-1:123456789012:orders';
const SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:api-AbC123';
const KMS_KEY = 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';

const FIXTURE = 'test/deploy/fixtures/streams.handler-access.json';

type StreamInput = { id: string; handler: { iam?: unknown[]; secrets?: Record<string, unknown> } & Record<string, unknown> };

/**
 * The fixture's two streams (a self-hosted Kafka: no VPC needed), each handler declaring extra
 * access; a fresh copy each time, with the orders stream's statements replaced when given.
 */
function streams(over: { ordersIam?: unknown[] } = {}): StreamInput[] {
  const list = (JSON.parse(readFileSync(join(ROOT, FIXTURE), 'utf8')) as { streams: StreamInput[] }).streams;
  if (over.ordersIam) list[0]!.handler.iam = over.ordersIam;
  return list;
}

const HANDLER_STATEMENTS: Statement[] = [
  { Sid: 'StreamOrdersHandler1', Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: [QUEUE] },
  { Sid: 'OrdersArchive', Effect: 'Allow', Action: ['s3:PutObject'], Resource: ['arn:aws:s3:::orders-archive/*'] },
  {
    Sid: 'StreamAuditTrailHandler1',
    Effect: 'Allow',
    Action: ['sns:Publish'],
    Resource: [{ 'Fn::Sub': 'arn:${AWS::Partition}:sns:${AWS::Region}:${AWS::AccountId}:audit' }],
  },
];
const HANDLER_SECRETS = {
  secrets: [SECRET, { 'Fn::Sub': 'arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:webhooks/audit-??????' }],
  parameters: [{ 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/orders/signing-key' }],
};
const KMS_VIA_SECRET_STORES = {
  StringEquals: {
    'kms:ViaService': [{ 'Fn::Sub': 'secretsmanager.${AWS::Region}.amazonaws.com' }, { 'Fn::Sub': 'ssm.${AWS::Region}.amazonaws.com' }],
  },
};

const settings = deploySettings;
const config = (list: unknown[] = streams()): DeploymentConfig =>
  parseDeploymentConfig({ ledgerTable: 'svc-test-ledger', streams: list }, 'test');

type RoleLike = { Properties: Record<string, unknown> };
function statementsOf(role: RoleLike | undefined): Statement[] {
  const policies = role?.Properties.Policies as Array<{ PolicyDocument: { Statement: Statement[] } }>;
  return policies.flatMap((p) => p.PolicyDocument.Statement);
}
const roleStatements = (t: Template, id: string) => statementsOf(t.Resources[id]);
const HANDLER_SIDS = /^(Stream.*Handler\d+|OrdersArchive|Handler.*)$/;

describe('the builders', () => {
  it('give the processor exactly the declared statements, after its own, with generated or given ids', () => {
    const processor = statementsOf(iamRoles(settings(), config()).Resources.ProcessorRole);
    expect(processor.slice(-3)).toEqual(HANDLER_STATEMENTS);
    expect(processor.filter((st) => st.Sid.startsWith('Stream') || st.Sid === 'OrdersArchive')).toEqual(HANDLER_STATEMENTS);
  });

  it('let the processor read exactly the handler secrets (none from the environment), decrypted through those services', () => {
    expect(handlerSecretResources(config())).toEqual(HANDLER_SECRETS);
    const processor = statementsOf(iamRoles(settings({ kafkaSecretsKmsKeyArn: KMS_KEY }), config()).Resources.ProcessorRole);
    expect(processor.filter((st) => st.Sid.startsWith('Handler'))).toEqual([
      { Sid: 'HandlerSecretsManager', Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: HANDLER_SECRETS.secrets },
      { Sid: 'HandlerSsmParameters', Effect: 'Allow', Action: ['ssm:GetParameter'], Resource: HANDLER_SECRETS.parameters },
      { Sid: 'HandlerSecretsKms', Effect: 'Allow', Action: ['kms:Decrypt'], Resource: [KMS_KEY], Condition: KMS_VIA_SECRET_STORES },
    ]);
    // Without the KMS param, no decrypt grant; without store secrets, no read grant at all.
    const noKms = statementsOf(iamRoles(settings(), config()).Resources.ProcessorRole).map((st) => st.Sid);
    expect(noKms).toContain('HandlerSecretsManager');
    expect(noKms).not.toContain('HandlerSecretsKms');
    const envOnly = streams();
    envOnly[0]!.handler.secrets = { API_TOKEN: { env: 'LOCAL_TOKEN' } };
    envOnly[1]!.handler.secrets = {};
    expect(handlerSecretResources(config(envOnly))).toEqual({ secrets: [], parameters: [] });
  });

  it('give the planner none of it', () => {
    const planner = statementsOf(iamRoles(settings({ kafkaSecretsKmsKeyArn: KMS_KEY }), config()).Resources.PlannerRole);
    expect(planner.map((st) => st.Sid)).toEqual(['Logs', 'Ledger', 'DispatchRanges']);
  });

  it('refuse a statement id another statement of the processor role has, naming the stream and the entry', () => {
    const taken = (sid: string) => {
      try {
        iamRoles(settings(), config(streams({ ordersIam: [{ actions: ['sqs:SendMessage'], resources: [QUEUE], sid }] })));
      } catch (e) {
        expect(e).toBeInstanceOf(DeployConfigError);
        return (e as Error).message;
      }
      throw new Error('expected a DeployConfigError');
    };
    expect(taken('Logs')).toBe(
      'stream orders: handler.iam[0]: the statement id "Logs" is taken by another statement of the processor role; set "sid" to another id',
    );
    expect(taken('StreamAuditTrailHandler1')).toContain(
      'stream audit_trail: handler.iam[0]: the statement id "StreamAuditTrailHandler1" is taken',
    );
  });

  it('give the processor the streams variables, and AUDIT_LOG_TABLE when the param is set', () => {
    expect(processorEnvironment(settings(), config())).toEqual({
      ORDERS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders',
      SHARED_MODE: 'live',
      CONNECTION_IDLE_MAX_MS: '10000',
    });
    expect(processorEnvironment(settings({ auditLogTable: 'audit' }), { streams: [] })).toEqual({
      AUDIT_LOG_TABLE: 'audit',
      CONNECTION_IDLE_MAX_MS: '10000',
    });
  });

  it('refuse at package time a handler secret read from a variable the processor does not have, and accept one it has', async () => {
    const list = streams();
    list[0]!.handler.secrets = { API_TOKEN: { env: 'ORDERS_TOKEN' }, MODE: { env: 'SHARED_MODE' } };
    await expect(checkConfig(settings(), config(list))).rejects.toThrow(
      'the streams config does not fit stage test: stream orders: handler secret API_TOKEN: environment variable ORDERS_TOKEN (a secret reference) is not set',
    );
    list[0]!.handler.secrets = { MODE: { env: 'SHARED_MODE' } };
    await expect(checkConfig(settings(), config(list))).resolves.toBeUndefined();
  });
});

describe('sls package', () => {
  let packaged: Packaged;
  beforeAll(() => {
    // A file, as a stage's config usually is: inline JSON would put the resources' ${AWS::...} into STREAMS_CONFIG.
    packaged = slsPackage('access', 'us-east-1', { streamsConfig: FIXTURE, kafkaSecretsKmsKeyArn: KMS_KEY });
  }, 240_000);
  afterAll(() => {
    if (packaged) rmSync(packaged.dir, { recursive: true, force: true });
  });

  it('gives the processor role the declared statements and the handler secrets, exactly', () => {
    const processor = roleStatements(packaged.template, 'ProcessorRole');
    expect(processor.filter((st) => HANDLER_SIDS.test(st.Sid))).toEqual([
      { Sid: 'HandlerSecretsManager', Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: HANDLER_SECRETS.secrets },
      { Sid: 'HandlerSsmParameters', Effect: 'Allow', Action: ['ssm:GetParameter'], Resource: HANDLER_SECRETS.parameters },
      { Sid: 'HandlerSecretsKms', Effect: 'Allow', Action: ['kms:Decrypt'], Resource: [KMS_KEY], Condition: KMS_VIA_SECRET_STORES },
      ...HANDLER_STATEMENTS,
    ]);
    // The stack's own statements are unchanged by them.
    expect(processor.map((st) => st.Sid).filter((sid) => !HANDLER_SIDS.test(sid))).toEqual(['Logs', 'Ledger', 'OnFailureDestination']);
  });

  it('gives the planner role none of them', () => {
    const planner = roleStatements(packaged.template, 'PlannerRole');
    expect(planner.map((st) => st.Sid)).toEqual(['Logs', 'Ledger', 'DispatchRanges']);
    const grants = JSON.stringify(planner);
    for (const granted of ['sqs:SendMessage', 's3:PutObject', 'sns:Publish', 'secretsmanager:', 'ssm:', 'kms:'])
      expect(grants).not.toContain(granted);
  });

  it("sets the streams' variables on the processor only, and no secret value anywhere in the template", () => {
    const variables = (id: string) =>
      (packaged.template.Resources[id]!.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(variables('ProcessorLambdaFunction')).toMatchObject({
      ORDERS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders',
      SHARED_MODE: 'live',
    });
    expect(Object.keys(variables('ProcessorLambdaFunction')).sort()).toEqual(
      [
        'CONNECTION_IDLE_MAX_MS',
        'LEDGER_TABLE',
        'METRICS_NAMESPACE',
        'NODE_OPTIONS',
        'ORDERS_QUEUE_URL',
        'POWERTOOLS_LOG_LEVEL',
        'SHARED_MODE',
        'STREAMS_CONFIG',
      ].sort(),
    );
    expect(variables('PlannerLambdaFunction').ORDERS_QUEUE_URL).toBeUndefined();
    // Secrets are read at run time by reference: no CloudFormation dynamic reference resolves one into the function.
    expect(JSON.stringify(packaged.template)).not.toMatch(/\{\{resolve:(secretsmanager|ssm)/);
  });

  it('is a template cfn-lint finds no error or warning in', () => {
    const { status, output } = cfnLint(packaged.templatePath, 'us-east-1');
    if (status !== 0) throw new Error(`cfn-lint exited ${status}:\n${output}`);
  }, 300_000);
});

describe('bad input fails packaging with one line and exit code 1', () => {
  it('a statement with a wildcard action', () => {
    const list = streams({ ordersIam: [{ actions: ['sqs:SendMessage', 'sqs:*'], resources: [QUEUE] }] });
    const run = runSlsPackage('access', 'us-east-1', { streamsConfig: JSON.stringify({ ledgerTable: 'unused', streams: list }) });
    try {
      expect(run.status).toBe(1);
      const lines = `${run.stdout}${run.stderr}`.split('\n').filter((l) => l.trim() !== '');
      expect(lines).toEqual([
        'Error: streams config for stage access (inline JSON): invalid config (STREAMS_CONFIG): streams[0].handler.iam[0].actions[1]: "sqs:*" is a wildcard action: name each action, e.g. "sqs:SendMessage"',
      ]);
      expect(existsSync(join(run.dir, 'cloudformation-template-update-stack.json'))).toBe(false);
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  }, 240_000);
});
