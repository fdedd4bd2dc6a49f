/**
 * A packaged stack, run as deployed on the local services: created in the emulator's CloudFormation
 * (stack.ts), each function's zip unzipped into a task root, run under Lambda's runtime emulator
 * and runtime client by the local Lambda (service.ts) with the settings the stack reports, the
 * planner's schedule running at its rate (its first run at once, as a new schedule's).
 *
 * The functions get Lambda's variables plus, locally, the emulator's endpoints: DYNAMODB_ENDPOINT
 * and AWS_ENDPOINT_URL (moto, for every AWS client), AWS_ENDPOINT_URL_LAMBDA (the local Lambda, so
 * the planner's dispatcher invokes the processor through it), and dummy credentials. A test may
 * give the functions other endpoints for these (`functionEndpoints`: proxies in front of them, for
 * faults between the functions and the services), while the stack is created through the emulator's.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PrerequisiteError } from '../../../lib/errors';
import { requireCommand } from '../process';
import type { FunctionSpec, RuntimeTools } from './emulator';
import { linkRuntimeSdk } from './runtime-sdk';
import { startLocalLambda, type LocalLambda, type LocalLambdaOptions } from './service';
import { createEmulatedStack, deleteEmulatedStack, type EmulatedStack } from './stack';
import { ensureRic, ensureRie, node22Binary } from './tools';

export type PackagedRunOptions = {
  /** `sls package`'s output directory (the template and the zips). */
  packageDir: string;
  stackName: string;
  /** The local AWS emulator (moto: DynamoDB, CloudFormation, S3, SQS, ...). */
  awsEndpoint: string;
  region: string;
  /** Where the task roots and the environments' /tmp go (under /tmp, the environments share the machine's /tmp: see privateTmp). */
  dir: string;
  cacheDir: string;
  /** Run the template's schedules and queue mappings (default true; a benchmark invokes the functions itself). */
  schedules?: boolean;
  /**
   * The endpoints the functions are given, where not the services' own: DYNAMODB_ENDPOINT, AWS_ENDPOINT_URL
   * (default `awsEndpoint`), AWS_ENDPOINT_URL_LAMBDA (default the local Lambda's). Creating the stack
   * and polling its queues use `awsEndpoint` whatever these say.
   */
  functionEndpoints?: { dynamodb?: string; aws?: string; lambda?: string };
} & Pick<LocalLambdaOptions, 'eventRetryDelaysMs' | 'maxEnvironments' | 'onLine' | 'onInvocation'>;

export type PackagedRun = { stack: EmulatedStack; lambda: LocalLambda; stop(): Promise<void> };

/** Creates the stack in the emulator and starts its functions and schedules. */
export async function runPackagedStack(o: PackagedRunOptions): Promise<PackagedRun> {
  requireCommand('unzip', ['-v'], 'the local Lambda unzips the packaged functions with it (Debian: apt-get install unzip)');
  const tools: RuntimeTools = {
    rie: ensureRie(o.cacheDir),
    ric: ensureRic(o.cacheDir),
    node: node22Binary(),
    nodePath: linkRuntimeSdk(join(o.dir, 'runtime')),
    region: o.region,
    localEnv: {
      DYNAMODB_ENDPOINT: o.functionEndpoints?.dynamodb ?? o.awsEndpoint,
      AWS_ENDPOINT_URL: o.functionEndpoints?.aws ?? o.awsEndpoint,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_SESSION_TOKEN: 'local',
    },
  };
  const stack = await createEmulatedStack({ endpoint: o.awsEndpoint, region: o.region }, o.packageDir, o.stackName);
  const functions: FunctionSpec[] = stack.functions.map(({ zip, logicalId: _id, ...spec }) => ({
    ...spec,
    taskRoot: unzipTo(zip, join(o.dir, 'functions', spec.name)),
  }));
  const lambda = await startLocalLambda({
    functions,
    tools,
    dir: join(o.dir, 'environments'),
    schedules: o.schedules === false ? [] : stack.schedules,
    queues: { mappings: o.schedules === false ? [] : stack.queueMappings, endpoint: o.awsEndpoint, region: o.region },
    ...(o.eventRetryDelaysMs && { eventRetryDelaysMs: o.eventRetryDelaysMs }),
    ...(o.maxEnvironments && { maxEnvironments: o.maxEnvironments }),
    ...(o.functionEndpoints?.lambda && { functionsLambdaEndpoint: o.functionEndpoints.lambda }),
    ...(o.onLine && { onLine: o.onLine }),
    ...(o.onInvocation && { onInvocation: o.onInvocation }),
  });
  return {
    stack,
    lambda,
    async stop() {
      await lambda.stop();
      await deleteEmulatedStack({ endpoint: o.awsEndpoint, region: o.region }, o.stackName).catch(() => undefined);
    },
  };
}

/** A fresh task root holding the zip's files. */
function unzipTo(zip: string, dir: string): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const run = spawnSync('unzip', ['-q', zip, '-d', dir], { encoding: 'utf8', timeout: 120_000 });
  if (run.status !== 0) throw new PrerequisiteError(`unzip ${zip} failed: ${(run.stderr || String(run.error)).trim()}`);
  return dir;
}
