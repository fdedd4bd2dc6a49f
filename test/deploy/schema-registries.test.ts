/**
 * Schema registries in the stack: the processor role may read Glue schema versions
 * (glue:GetSchemaVersion on "*", the only resource Glue authorizes a lookup by version id against), and
 * the Confluent registry passwords they name; the planner neither. First through the builders, then
 * in a template packaged offline with osls (and checked by cfn-lint).
 */
import { rmSync } from 'node:fs';
import { parseDeploymentConfig, type DeploymentConfig } from '../../lib/config/schema';
import { checkConfig, glueRegistryStatements, iamRoles, type Statement } from '../../infra/cfn/builders';
import { deploySettings } from '../support/deploy-settings';
import { cfnLint, checkov, slsPackage, type Packaged, type Template } from './package';

const VPC = { vpcSubnetIds: 'subnet-0123456789abcdef0', vpcSecurityGroupIds: 'sg-0123456789abcdef0' };
const FIXTURE = 'test/deploy/fixtures/streams.schema-registries.json';
const REGISTRY_SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:registry-AbC123';

const GLUE_STATEMENT: Statement = {
  Sid: 'GlueSchemaRegistry',
  Effect: 'Allow',
  Action: ['glue:GetSchemaVersion'],
  Resource: ['*'],
};
const REGISTRY_SECRET_STATEMENT: Statement = {
  Sid: 'SchemaRegistrySecretsManager',
  Effect: 'Allow',
  Action: ['secretsmanager:GetSecretValue'],
  Resource: [REGISTRY_SECRET],
};

const settings = () => deploySettings();

// eslint-disable-next-line @typescript-eslint/no-require-imports
const fixture = () => require(`../../${FIXTURE}`) as { ledgerTable: string; streams: Array<Record<string, unknown>> };
const config = (streams = fixture().streams): DeploymentConfig =>
  parseDeploymentConfig({ ledgerTable: 'svc-test-ledger', streams }, 'test');

type RoleLike = { Properties: Record<string, unknown> };
const statementsOf = (role: RoleLike | undefined): Statement[] =>
  (role?.Properties.Policies as Array<{ PolicyDocument: { Statement: Statement[] } }>).flatMap((p) => p.PolicyDocument.Statement);

describe('schema registry grants (builders)', () => {
  it('let the processor read Glue schema versions when a value or key names a Glue registry, and its registry passwords', () => {
    const processor = statementsOf(iamRoles(settings(), config()).Resources.ProcessorRole);
    expect(processor.filter((st) => st.Sid === 'GlueSchemaRegistry')).toEqual([GLUE_STATEMENT]);
    expect(processor.filter((st) => st.Sid.startsWith('SchemaRegistry'))).toEqual([REGISTRY_SECRET_STATEMENT]);
  });

  it('give the planner nothing of them, and add nothing for streams without registries', () => {
    const planner = statementsOf(iamRoles(settings(), config()).Resources.PlannerRole);
    expect(JSON.stringify(planner)).not.toMatch(/glue:|secretsmanager:/);
    const plain = fixture().streams.map(({ value: _value, key: _key, ...rest }) => rest);
    expect(glueRegistryStatements(config(plain))).toEqual([]);
    expect(statementsOf(iamRoles(settings(), config(plain)).Resources.ProcessorRole).map((st) => st.Sid)).toEqual([
      'Logs',
      'Ledger',
      'OnFailureDestination',
    ]);
  });

  it('refuse at package time a registry password read from a variable the processor does not have', async () => {
    const streams = fixture().streams;
    (streams[1]!.value as { registry: { confluent: Record<string, unknown> } }).registry.confluent.password = { env: 'REGISTRY_PASSWORD' };
    await expect(checkConfig(settings(), config(streams))).rejects.toThrow(
      'stream payments: value.registry.confluent.password: environment variable REGISTRY_PASSWORD (a secret reference) is not set',
    );
  });
});

describe('sls package with schema registries', () => {
  let packaged: Packaged;
  beforeAll(() => {
    // In a VPC, as a production stage is (the scan's CKV_AWS_117 otherwise).
    packaged = slsPackage('registries', 'us-east-1', { streamsConfig: FIXTURE, ...VPC });
  }, 240_000);
  afterAll(() => {
    if (packaged) rmSync(packaged.dir, { recursive: true, force: true });
  });
  const roleStatements = (t: Template, id: string) => statementsOf(t.Resources[id]);

  it('grants the processor role glue:GetSchemaVersion (on "*": Glue cannot scope a lookup by version id), and the registry password', () => {
    const processor = roleStatements(packaged.template, 'ProcessorRole');
    expect(processor.filter((st) => st.Sid === 'GlueSchemaRegistry' || st.Sid.startsWith('SchemaRegistry'))).toEqual([
      GLUE_STATEMENT,
      REGISTRY_SECRET_STATEMENT,
    ]);
    expect(JSON.stringify(roleStatements(packaged.template, 'PlannerRole'))).not.toMatch(/glue:|secretsmanager:/);
  });

  it('is a template cfn-lint finds no error or warning in', () => {
    const { status, output } = cfnLint(packaged.templatePath, 'us-east-1');
    if (status !== 0) throw new Error(`cfn-lint exited ${status}:\n${output}`);
  }, 300_000);

  it('is a template the security scan fails no check of (the Glue read on "*" included)', () => {
    const report = checkov(packaged.templatePath);
    expect(report.failed.map((f) => `${f.checkId} ${f.resource}`)).toEqual([]);
  }, 300_000);
});
