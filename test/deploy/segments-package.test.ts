/**
 * The segments function as `sls package` builds it (offline): the dev example with its stream made
 * continuous gets the function (serverless.yml `functions.segments`, null without a continuous
 * stream), its async settings, log group, role and alarm, a zip of the processor's bundle, and a
 * template cfn-lint accepts; the plain dev example gets nothing of it.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cfnLint, ROOT, slsPackage, type CfnResource, type Packaged, type Template } from './package';
import { readZip } from './zip';

const DEV_CONFIG = JSON.parse(readFileSync(join(ROOT, 'infra', 'config', 'streams.dev.json'), 'utf8')) as {
  streams: Array<Record<string, unknown>>;
};
/** The dev example with its one stream continuous, inline (the stack packages no config file then). */
const CONTINUOUS = JSON.stringify({ ...DEV_CONFIG, streams: DEV_CONFIG.streams.map((s) => ({ ...s, continuous: {} })) });

let plain: Packaged;
let continuous: Packaged;

beforeAll(() => {
  plain = slsPackage('dev', 'us-east-1');
  continuous = slsPackage('dev', 'us-east-1', { streamsConfig: CONTINUOUS, segmentReservedConcurrency: '6' });
}, 240_000);

afterAll(() => {
  for (const p of [plain, continuous]) if (p) rmSync(p.dir, { recursive: true, force: true });
});

const resource = (t: Template, id: string): CfnResource => {
  const r = t.Resources[id];
  if (!r) throw new Error(`no resource ${id} (has: ${Object.keys(t.Resources).join(', ')})`);
  return r;
};
const variables = (t: Template, id: string) => (resource(t, id).Properties.Environment as { Variables: Record<string, unknown> }).Variables;

it('without a continuous stream: no segments function, role, log group, alarm, variable or zip', () => {
  expect(Object.keys(plain.template.Resources).filter((id) => /segment/i.test(id))).toEqual([]);
  expect(JSON.stringify(plain.template)).not.toMatch(/segment/i);
  expect(variables(plain.template, 'PlannerLambdaFunction')).not.toHaveProperty('SEGMENT_FUNCTION_NAME');
  expect(existsSync(join(plain.dir, 'segments.zip'))).toBe(false);
  expect(existsSync(join(continuous.dir, 'segments.zip'))).toBe(true);
});

it("with one: the processor's code and environment, 256 MB, 900 s, the reservation, its own role", () => {
  const t = continuous.template;
  const fn = resource(t, 'SegmentsLambdaFunction').Properties;
  const processor = resource(t, 'ProcessorLambdaFunction').Properties;
  expect(fn).toMatchObject({
    FunctionName: 'kafka-lambda-direct-dev-segments',
    Handler: 'functions/processor.handler',
    Runtime: 'nodejs22.x',
    Architectures: ['arm64'],
    MemorySize: 256,
    Timeout: 900,
    ReservedConcurrentExecutions: 6,
    Role: { 'Fn::GetAtt': ['SegmentsRole', 'Arn'] },
    VpcConfig: processor.VpcConfig,
  });
  expect(fn.Environment).toEqual(processor.Environment);
  expect(variables(t, 'PlannerLambdaFunction').SEGMENT_FUNCTION_NAME).toBe('kafka-lambda-direct-dev-segments');
  expect(resource(t, 'SegmentsLogGroup').Properties.LogGroupName).toBe('/aws/lambda/kafka-lambda-direct-dev-segments');
  expect(resource(t, 'SegmentsMissingPaymentsAlarm').Properties.MetricName).toBe('SegmentsMissing');
  expect(t.Outputs).toHaveProperty('SegmentsRoleArn');
});

it('its async invocations: no retries, 60 s in the queue, failures to the processor failure queue', () => {
  const conf = Object.values(continuous.template.Resources).find(
    (r) => r.Type === 'AWS::Lambda::EventInvokeConfig' && JSON.stringify(r.Properties.FunctionName).includes('SegmentsLambdaFunction'),
  );
  expect(conf?.Properties).toMatchObject({
    MaximumRetryAttempts: 0,
    MaximumEventAgeInSeconds: 60,
    DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': ['ProcessorFailureQueue', 'Arn'] } } },
  });
});

it("its zip is the processor's bundle", () => {
  const names = (zip: string) =>
    readZip(join(continuous.dir, zip))
      .map((e) => `${e.name} ${e.size}`)
      .sort();
  expect(names('segments.zip')).toEqual(names('processor.zip'));
  expect(names('segments.zip').some((n) => n.startsWith('functions/processor.bundle.js '))).toBe(true);
});

it('cfn-lint accepts the template', () => {
  const lint = cfnLint(continuous.templatePath, 'us-east-1');
  expect({ status: lint.status, output: lint.output }).toEqual({ status: 0, output: lint.output });
}, 300_000);
