/**
 * The segments function of continuous streams (infra/cfn/functions.ts and the builders that follow
 * it), without packaging: with a continuous stream the stack gets the function, its role, log group
 * key, scan skips, alarm, dashboard widgets and the planner's variable and invoke permission; without
 * one, nothing of it (the stack is what it was before).
 */
import { parseDeploymentConfig, type DeploymentConfig, type DeploymentConfigInput } from '../../lib/config/schema';
import {
  checkConfig,
  DeployConfigError,
  iamRoles,
  logGroupEncryption,
  observability,
  plannerEnvironment,
  processorEnvironment,
  scanSkipMetadata,
  segmentsFunction,
  type Statement,
} from '../../infra/cfn/builders';
import { deploySettings } from '../support/deploy-settings';

const settings = deploySettings;

const HANDLER = {
  module: 'running-totals',
  mode: 'dynamodb-exactly-once',
  sinkTable: 'svc-test-running-totals',
  iam: [{ actions: ['sns:Publish'], resources: ['arn:aws:sns:us-east-1:123456789012:orders'] }],
  environment: { TOTALS_REGION: 'eu' },
} as const;

function config(streams: Array<Partial<DeploymentConfigInput['streams'][number]>>): DeploymentConfig {
  return parseDeploymentConfig(
    {
      ledgerTable: 'svc-test-ledger',
      streams: streams.map((s, i) => ({ id: `s${i}`, kafka: { brokers: ['localhost:9092'] }, topics: ['t'], handler: HANDLER, ...s })),
    },
    'test',
  );
}

/** A micro-batch stream `batch` and a continuous stream `live`. */
const mixed = () => config([{ id: 'batch' }, { id: 'live', continuous: {} }]);
const batchOnly = () => config([{ id: 'batch' }, { id: 'other' }]);

/** Everything the builders give the stack for these settings and config (what stack.js resolves). */
function stackParts(s: ReturnType<typeof settings>, c: DeploymentConfig) {
  return {
    segments: segmentsFunction(s, c),
    plannerEnvironment: plannerEnvironment(s, c),
    iam: iamRoles(s, c),
    observability: observability(s, c),
    scan: scanSkipMetadata(s, c),
    logs: logGroupEncryption(s, { streams: c.streams }),
  };
}

const statementsOf = (role: unknown): Statement[] =>
  (role as { Properties: { Policies: Array<{ PolicyDocument: { Statement: Statement[] } }> } }).Properties.Policies[0]!.PolicyDocument
    .Statement;

describe('without a continuous stream', () => {
  it('the stack has nothing of the segments function: no function, role, variable, permission, alarm, widget or skip', () => {
    for (const s of [settings(), settings({ logsKmsKey: 'stack', segmentReservedConcurrency: '10', segmentMemorySize: '512' })]) {
      const { segments, ...parts } = stackParts(s, batchOnly());
      expect(segments).toBeNull();
      expect(JSON.stringify(parts)).not.toMatch(/segment/i);
      const dispatch = statementsOf(parts.iam.Resources.PlannerRole).find((st) => st.Sid === 'DispatchRanges');
      expect(dispatch?.Resource).toEqual([{ 'Fn::GetAtt': ['ProcessorLambdaFunction', 'Arn'] }]);
    }
  });
});

describe('with a continuous stream', () => {
  it('the segments function: the processor handler and environment, its own memory, 900 s, no retries, 60 s event age', () => {
    const c = mixed();
    const s = settings();
    expect(segmentsFunction(s, c)).toEqual({
      name: 'svc-test-segments',
      description: expect.stringMatching(/continuous streams/i),
      handler: 'functions/processor.handler',
      role: 'SegmentsRole',
      memorySize: 256,
      timeout: 900,
      reservedConcurrency: { Ref: 'AWS::NoValue' },
      maximumRetryAttempts: 0,
      maximumEventAge: 60,
      destinations: { onFailure: { type: 'sqs', arn: { 'Fn::GetAtt': ['ProcessorFailureQueue', 'Arn'] } } },
      environment: processorEnvironment(s, c),
    });
    expect(processorEnvironment(s, c)).toMatchObject({ TOTALS_REGION: 'eu' });
  });

  it('takes segmentMemorySize, segmentReservedConcurrency and the VPC', () => {
    const fn = segmentsFunction(
      settings({ segmentMemorySize: '512', segmentReservedConcurrency: '8', vpcSubnetIds: 'subnet-1', vpcSecurityGroupIds: 'sg-1' }),
      mixed(),
    );
    expect(fn).toMatchObject({ memorySize: 512, reservedConcurrency: 8, vpc: { subnetIds: ['subnet-1'], securityGroupIds: ['sg-1'] } });
  });

  it('the planner invokes it by SEGMENT_FUNCTION_NAME and may', () => {
    const s = settings();
    expect(plannerEnvironment(s, mixed())).toMatchObject({
      PROCESSOR_FUNCTION_NAME: 'svc-test-processor',
      SEGMENT_FUNCTION_NAME: 'svc-test-segments',
    });
    expect(plannerEnvironment(s, batchOnly())).not.toHaveProperty('SEGMENT_FUNCTION_NAME');
    const dispatch = statementsOf(iamRoles(s, mixed()).Resources.PlannerRole).find((st) => st.Sid === 'DispatchRanges');
    expect(dispatch?.Resource).toEqual([
      { 'Fn::GetAtt': ['ProcessorLambdaFunction', 'Arn'] },
      { 'Fn::GetAtt': ['SegmentsLambdaFunction', 'Arn'] },
    ]);
  });

  it("its role: the processor's statements for its own log group, and the invoke of itself by name (no cycle through the function)", () => {
    const s = settings({ functionKmsKeyArn: 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab' });
    const { Resources, Outputs } = iamRoles(s, mixed());
    const processor = statementsOf(Resources.ProcessorRole);
    const segments = statementsOf(Resources.SegmentsRole);
    const withoutLogs = (sts: Statement[]) => sts.filter((st) => st.Sid !== 'Logs' && st.Sid !== 'InvokeSuccessor');
    expect(withoutLogs(segments)).toEqual(withoutLogs(processor));
    expect(segments.map((st) => st.Sid)).toEqual(
      expect.arrayContaining(['SinkTables', 'OnFailureDestination', 'EnvironmentKms', 'Stream' + 'LiveHandler1']),
    );
    expect(segments.find((st) => st.Sid === 'Logs')?.Resource).toEqual([
      { 'Fn::Sub': 'arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/lambda/svc-test-segments:*' },
    ]);
    expect(segments.find((st) => st.Sid === 'InvokeSuccessor')).toEqual({
      Sid: 'InvokeSuccessor',
      Effect: 'Allow',
      Action: ['lambda:InvokeFunction'],
      Resource: [{ 'Fn::Sub': 'arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:svc-test-segments' }],
    });
    expect(JSON.stringify(Resources.SegmentsRole)).not.toContain('SegmentsLambdaFunction');
    // The processor invokes no function.
    expect(processor.some((st) => st.Action.some((a) => a.startsWith('lambda:')))).toBe(false);
    expect(Outputs.SegmentsRoleArn).toEqual({ Value: { 'Fn::GetAtt': ['SegmentsRole', 'Arn'] } });
  });

  it('an alarm per continuous stream: SegmentsMissing above 0 (Maximum) in 3 periods in a row', () => {
    const c = config([{ id: 'batch' }, { id: 'live', continuous: {} }, { id: 'slow', continuous: {}, triggerIntervalMs: 60_000 * 2 + 1 }]);
    const resources = observability(settings({ scheduleRate: 'rate(5 minutes)', plannerTimeout: 320 }), c).Resources;
    const alarms = Object.keys(resources).filter((id) => id.startsWith('SegmentsMissing'));
    expect(alarms).toEqual(['SegmentsMissingLiveAlarm', 'SegmentsMissingSlowAlarm']);
    expect(resources.SegmentsMissingLiveAlarm!.Properties).toMatchObject({
      AlarmName: 'svc-test-live-segments-missing',
      Namespace: 'KafkaLambdaDirect',
      MetricName: 'SegmentsMissing',
      Dimensions: [
        { Name: 'service', Value: 'planner' },
        { Name: 'stream', Value: 'live' },
      ],
      Statistic: 'Maximum',
      Period: 60,
      ComparisonOperator: 'GreaterThanThreshold',
      Threshold: 0,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: 'AlarmTopic' }],
      OKActions: [{ Ref: 'AlarmTopic' }],
    });
    // A period holds a tick: the trigger interval rounded up to whole minutes.
    expect(resources.SegmentsMissingSlowAlarm!.Properties.Period).toBe(180);
    const dashboard = JSON.stringify(resources.Dashboard);
    expect(dashboard).toContain('live: partitions without a live segment');
    expect(dashboard).not.toContain('batch: partitions without a live segment');
    expect(dashboard).toContain('svc-test-segments');
  });

  it("its log group gets the logs key, admitted by the stack key's policy; the scan keeps its findings like the processor's", () => {
    const own = logGroupEncryption(settings({ logsKmsKey: 'stack' }), mixed());
    expect(own.extensions.SegmentsLogGroup).toEqual({ Properties: { KmsKeyId: { 'Fn::GetAtt': ['LogsKey', 'Arn'] } } });
    expect(JSON.stringify(own.Resources.LogsKey)).toContain('log-group:/aws/lambda/svc-test-segments');
    const skips = scanSkipMetadata(settings(), mixed()).extensions;
    const ids = (id: string) => (skips[id]?.Metadata as { checkov: { skip: Array<{ id: string }> } }).checkov.skip.map((x) => x.id);
    expect(ids('SegmentsLambdaFunction')).toEqual(['CKV_AWS_116', 'CKV_AWS_173']);
    expect(ids('SegmentsLogGroup')).toEqual(['CKV_AWS_158']);
  });
});

describe('params and package-time checks', () => {
  async function problem(run: () => unknown): Promise<string> {
    try {
      await run();
    } catch (e) {
      expect(e).toBeInstanceOf(DeployConfigError);
      return (e as Error).message;
    }
    throw new Error('expected a DeployConfigError');
  }

  it('segmentMemorySize: 256 by default, 128-10240; segmentReservedConcurrency: unset by default, >= 1', async () => {
    expect(settings()).toMatchObject({ segmentMemorySize: 256, segmentReservedConcurrency: undefined });
    expect(settings({ segmentMemorySize: 1769, segmentReservedConcurrency: ' 4 ' })).toMatchObject({
      segmentMemorySize: 1769,
      segmentReservedConcurrency: 4,
    });
    expect(await problem(() => settings({ segmentMemorySize: '64' }))).toBe(
      'param segmentMemorySize must be a whole number between 128 and 10240, got "64"',
    );
    expect(await problem(() => settings({ segmentMemorySize: 'lots' }))).toMatch(/^param segmentMemorySize /);
    expect(await problem(() => settings({ segmentReservedConcurrency: '0' }))).toMatch(/^param segmentReservedConcurrency must be /);
  });

  it('refuses a segments reservation below 2 per continuous stream (one resident, its successor in a hand-over)', async () => {
    const two = config([{ id: 'live' }, { id: 'also', continuous: {} }, { id: 'more', continuous: {} }]);
    expect(await problem(() => checkConfig(settings({ segmentReservedConcurrency: '3' }), two))).toMatch(
      /param segmentReservedConcurrency is 3 but the config has 2 continuous stream\(s\) \(also, more\).* at least 4/,
    );
    await expect(checkConfig(settings({ segmentReservedConcurrency: '4' }), two)).resolves.toBeUndefined();
    // Without a continuous stream the param has nothing to run.
    await expect(checkConfig(settings({ segmentReservedConcurrency: '1' }), batchOnly())).resolves.toBeUndefined();
  });

  it("does not hold a continuous stream to the processor's reserved concurrency or timeout (it runs on the segments one)", async () => {
    const c = config([{ id: 'live', continuous: {}, maxConcurrency: 50, processor: { timeoutMs: 900_000 } }]);
    await expect(checkConfig(settings({ processorReservedConcurrency: '10', processorTimeout: 300 }), c)).resolves.toBeUndefined();
    const batch = config([{ id: 'batch', maxConcurrency: 50 }]);
    expect(await problem(() => checkConfig(settings({ processorReservedConcurrency: '10' }), batch))).toMatch(/maxConcurrency is 50/);
  });
});
