/**
 * A packaged stack (`sls package`'s directory) created in the local AWS emulator's CloudFormation
 * (moto), and the functions' settings read back from it: what the local Lambda runs is what the
 * template makes, not our own reading of the config.
 *
 * What moto's CloudFormation does not do is said, not hidden:
 * - it skips CloudWatch alarms (and so a dashboard naming them is left out too); the deploy tests
 *   check those in the template;
 * - it creates no Lambda EventInvokeConfig and no EventBridge Scheduler schedule: their settings (an
 *   event's retries, the planner's rate and input) are read from the template's resources, their
 *   references resolved to the stack's functions;
 * - functions' code comes from S3: the zips are uploaded to a bucket of the emulator first and the
 *   template's `Code.S3Bucket` names it (on AWS, the deployment bucket `sls deploy` fills).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
  ListExportsCommand,
  ListStackResourcesCommand,
  type StackResourceSummary,
} from '@aws-sdk/client-cloudformation';
import { GetFunctionConcurrencyCommand, GetFunctionConfigurationCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PrerequisiteError } from '../../../lib/errors';
import { schedulePeriodMs } from '../../cfn/settings';
import type { FunctionSpec } from './emulator';
import type { QueueMapping } from './queue-poller';
import type { Schedule } from './service';

type Resource = { Type: string; Properties?: Record<string, unknown> };
type Template = { Resources: Record<string, Resource>; Outputs?: Record<string, unknown> };

/** Resource types moto's CloudFormation does not create (see above); resources that name them go too. */
const NOT_EMULATED = new Set([
  'AWS::CloudWatch::Alarm',
  // moto's own mapping would take a queue's messages as they arrive and "invoke" without running
  // anything; the local Lambda's poller (queue-poller.ts) runs them instead.
  'AWS::Lambda::EventSourceMapping',
]);
/** Lambda's default for an asynchronous invocation's retries. */
const DEFAULT_EVENT_RETRIES = 2;
const CODE_BUCKET = 'local-lambda-code';

/** A function of the stack: its settings as the emulator's Lambda API reports them, and its zip. */
export type StackFunction = Omit<FunctionSpec, 'taskRoot'> & { logicalId: string; zip: string };

export type EmulatedStack = {
  stackName: string;
  functions: StackFunction[];
  schedules: Schedule[];
  /** The template's SQS event source mappings, with the queues' URLs and the functions' names. */
  queueMappings: QueueMapping[];
  /** The template's resources left out (not emulated, or naming one that is not). */
  leftOut: string[];
};

export type EmulatorEndpoint = { endpoint: string; region: string };

const clientConfig = (e: EmulatorEndpoint) => ({
  endpoint: e.endpoint,
  region: e.region,
  credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
});

/** Creates the packaged stack in the emulator (replacing one of the same name) and reads its functions back. */
export async function createEmulatedStack(e: EmulatorEndpoint, packageDir: string, stackName: string): Promise<EmulatedStack> {
  const template = JSON.parse(readFileSync(join(packageDir, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
  const mappings = mappingsOf(template);
  const leftOut = leaveOutNotEmulated(template);
  const zips = await uploadCode(e, template, packageDir);
  // moto would otherwise try to run functions in Docker when asked; the local Lambda runs them.
  await fetch(`${e.endpoint}/moto-api/config`, { method: 'POST', body: JSON.stringify({ lambda: { use_docker: false } }) });
  const cf = new CloudFormationClient(clientConfig(e));
  try {
    await deleteEmulatedStack(e, stackName);
    await deleteStacksExporting(cf, template);
    await cf.send(
      new CreateStackCommand({
        StackName: stackName,
        TemplateBody: JSON.stringify(template),
        Capabilities: ['CAPABILITY_IAM', 'CAPABILITY_NAMED_IAM'],
      }),
    );
    const stack = (await cf.send(new DescribeStacksCommand({ StackName: stackName }))).Stacks?.[0];
    if (stack?.StackStatus !== 'CREATE_COMPLETE')
      throw new PrerequisiteError(
        `the emulator's CloudFormation did not create ${stackName}: ${stack?.StackStatus} ${stack?.StackStatusReason ?? ''}`,
      );
    const resources = (await cf.send(new ListStackResourcesCommand({ StackName: stackName }))).StackResourceSummaries ?? [];
    const functions = await readFunctions(e, template, resources, zips);
    const queueMappings = mappings.flatMap((m) => {
      const target = functions.find((f) => f.logicalId === m.functionId)?.name;
      const queueUrl = resources.find((r) => r.LogicalResourceId === m.queueId)?.PhysicalResourceId;
      return target && queueUrl ? [{ target, queueUrl, batchSize: m.batchSize }] : [];
    });
    return { stackName, functions, schedules: schedulesOf(template, functions), queueMappings, leftOut };
  } finally {
    cf.destroy();
  }
}

/** Deletes the stack from the emulator, if it is there. */
export async function deleteEmulatedStack(e: EmulatorEndpoint, stackName: string): Promise<void> {
  const cf = new CloudFormationClient(clientConfig(e));
  try {
    const found = await cf.send(new DescribeStacksCommand({ StackName: stackName })).catch(() => undefined);
    if (found?.Stacks?.length) await cf.send(new DeleteStackCommand({ StackName: stackName }));
  } finally {
    cf.destroy();
  }
}

/** Deletes stacks left by an earlier run of the same service and stage (their exports have the names of this one's). */
async function deleteStacksExporting(cf: CloudFormationClient, t: Template): Promise<void> {
  const ours = new Set(
    Object.values(t.Outputs ?? {})
      .map((o) => (o as { Export?: { Name?: unknown } }).Export?.Name)
      .filter((n) => typeof n === 'string'),
  );
  const exports = (await cf.send(new ListExportsCommand({}))).Exports ?? [];
  const stacks = new Set(exports.filter((x) => x.Name !== undefined && ours.has(x.Name)).map((x) => x.ExportingStackId));
  for (const id of stacks) if (id) await cf.send(new DeleteStackCommand({ StackName: id }));
}

/** Removes what moto does not create, and everything that names it (a Ref, a GetAtt, a `${...}` in a Sub), in resources and outputs. */
function leaveOutNotEmulated(t: Template): string[] {
  const out = new Set(Object.keys(t.Resources).filter((id) => NOT_EMULATED.has(t.Resources[id]!.Type)));
  const names = (v: unknown) => {
    const text = JSON.stringify(v);
    return [...out].some((id) => text.includes(`"${id}"`) || text.includes(`\${${id}`));
  };
  for (let grew = true; grew;) {
    grew = false;
    for (const [id, r] of Object.entries(t.Resources))
      if (!out.has(id) && names(r)) {
        out.add(id);
        grew = true;
      }
  }
  for (const id of out) delete t.Resources[id];
  for (const [id, o] of Object.entries(t.Outputs ?? {})) if (names(o)) delete t.Outputs![id];
  return [...out];
}

/** Uploads each function's zip to the emulator's code bucket; returns the zip of each function (by logical id). */
async function uploadCode(e: EmulatorEndpoint, t: Template, packageDir: string): Promise<Map<string, string>> {
  const s3 = new S3Client({ ...clientConfig(e), forcePathStyle: true });
  const zips = new Map<string, string>();
  try {
    await s3.send(new CreateBucketCommand({ Bucket: CODE_BUCKET })).catch(() => undefined);
    for (const [id, r] of Object.entries(t.Resources)) {
      if (r.Type !== 'AWS::Lambda::Function') continue;
      const code = r.Properties!.Code as { S3Bucket: unknown; S3Key: string };
      const zip = join(packageDir, code.S3Key.split('/').pop()!);
      await s3.send(new PutObjectCommand({ Bucket: CODE_BUCKET, Key: code.S3Key, Body: readFileSync(zip) }));
      code.S3Bucket = CODE_BUCKET;
      zips.set(id, zip);
    }
  } finally {
    s3.destroy();
  }
  return zips;
}

/** Each function's settings from the emulator's Lambda API; its event retries from the template's EventInvokeConfig. */
async function readFunctions(
  e: EmulatorEndpoint,
  t: Template,
  resources: StackResourceSummary[],
  zips: Map<string, string>,
): Promise<StackFunction[]> {
  const lambda = new LambdaClient(clientConfig(e));
  try {
    const out: StackFunction[] = [];
    for (const r of resources) {
      if (r.ResourceType !== 'AWS::Lambda::Function' || !r.LogicalResourceId || !r.PhysicalResourceId) continue;
      const c = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: r.PhysicalResourceId }));
      const reserved = await lambda.send(new GetFunctionConcurrencyCommand({ FunctionName: r.PhysicalResourceId }));
      out.push({
        logicalId: r.LogicalResourceId,
        name: c.FunctionName ?? r.PhysicalResourceId,
        zip: zips.get(r.LogicalResourceId)!,
        handler: c.Handler ?? 'index.handler',
        memoryMb: c.MemorySize ?? 128,
        timeoutSec: c.Timeout ?? 3,
        env: c.Environment?.Variables ?? {},
        ...(reserved.ReservedConcurrentExecutions !== undefined && { reservedConcurrency: reserved.ReservedConcurrentExecutions }),
        maxEventRetries: eventRetriesOf(t, r.LogicalResourceId),
      });
    }
    return out;
  } finally {
    lambda.destroy();
  }
}

const refTo = (v: unknown): string | undefined => {
  const o = v as { Ref?: string; 'Fn::GetAtt'?: [string, string] } | undefined;
  return o?.Ref ?? o?.['Fn::GetAtt']?.[0];
};

function eventRetriesOf(t: Template, functionId: string): number {
  const conf = Object.values(t.Resources).find(
    (r) => r.Type === 'AWS::Lambda::EventInvokeConfig' && refTo(r.Properties?.FunctionName) === functionId,
  );
  const n = conf?.Properties?.MaximumRetryAttempts;
  return typeof n === 'number' ? n : DEFAULT_EVENT_RETRIES;
}

/** The template's Scheduler schedules and EventBridge rules with a `rate(...)`, and the function each targets. */
function schedulesOf(t: Template, functions: StackFunction[]): Schedule[] {
  const out: Schedule[] = [];
  for (const r of Object.values(t.Resources)) {
    const p = r.Properties ?? {};
    const targets =
      r.Type === 'AWS::Scheduler::Schedule'
        ? [p.Target]
        : r.Type === 'AWS::Events::Rule'
          ? ((p.Targets as unknown[] | undefined) ?? [])
          : [];
    // cron(...) has no fixed period and is not emulated (undefined); the template's rate passed the deploy's check.
    const rateMs = p.ScheduleExpression === undefined ? undefined : schedulePeriodMs(p.ScheduleExpression);
    for (const target of targets as Array<{ Arn?: unknown; Input?: string }>) {
      const fn = functions.find((f) => f.logicalId === refTo(target.Arn));
      if (fn && rateMs) out.push({ target: fn.name, rateMs, input: target.Input ?? '{}' });
    }
  }
  return out;
}

/** The template's event source mappings from an SQS queue of the stack (Lambda's default batch size 10). */
function mappingsOf(t: Template): Array<{ functionId: string; queueId: string; batchSize: number }> {
  return Object.values(t.Resources).flatMap((r) => {
    if (r.Type !== 'AWS::Lambda::EventSourceMapping') return [];
    const functionId = refTo(r.Properties?.FunctionName);
    const queueId = refTo(r.Properties?.EventSourceArn);
    if (!functionId || !queueId || t.Resources[queueId]?.Type !== 'AWS::SQS::Queue') return [];
    const size = r.Properties?.BatchSize;
    return [{ functionId, queueId, batchSize: typeof size === 'number' ? size : 10 }];
  });
}
