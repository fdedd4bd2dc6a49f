/** Function settings that depend on the stage: VPC, reserved concurrency, extra environment, bundling, the segments function. */
import { handlerEnvironment } from '../../lib/config/handler-access';
import { SCHEDULE_PERIOD_ENV } from '../../lib/planner/loop-timing';
import type { DeploymentConfig } from '../../lib/config/schema';
import { handlerModuleFile, isHandlerPath } from '../../lib/handlers/modules';
import { PROCESSOR_RESERVED_CONCURRENCY_ENV } from '../../lib/planner/concurrency-cap';
import { isContinuous } from '../../lib/config/continuous';
import { SEGMENT_FUNCTION_NAME_ENV } from '../../lib/dispatch/segment-routing';
import { getAtt, NO_VALUE, type Cfn } from './cfn';
import { IDS } from './names';
import { tickChainEnvironment } from './tick-chain';
import type { Settings } from './settings';
import { CONNECTION_IDLE_MAX_MS_ENV } from '../../lib/runtime/connection-reuse';

/** The functions' `vpc` setting (Amazon MSK), or null without a VPC. */
export function vpc(s: Settings): { subnetIds: string[]; securityGroupIds: string[] } | null {
  return s.vpc ? { subnetIds: s.vpc.subnetIds, securityGroupIds: s.vpc.securityGroupIds } : null;
}

/** Processor ReservedConcurrentExecutions, or AWS::NoValue (unreserved). */
export function reservedConcurrency(s: Settings): number | { Ref: string } {
  return s.processorReservedConcurrency ?? NO_VALUE;
}

/**
 * Environment the stack gives the planner function beyond provider.environment: the processor it
 * invokes, the segments function it invokes for continuous streams (only when there is one), and,
 * when the param reserves it, the processor's concurrency, which the planner shares among the
 * streams that run on the processor so that it never dispatches more processors than can run.
 */
export function plannerEnvironment(s: Settings, config: DeploymentConfig): Record<string, Cfn> {
  const reserved = s.processorReservedConcurrency;
  return {
    ...tickChainEnvironment(s, config),
    ...connectionEnvironment(s),
    PROCESSOR_FUNCTION_NAME: s.names.processor,
    ...(hasSegmentsFunction(config) ? { [SEGMENT_FUNCTION_NAME_ENV]: s.names.segments } : {}),
    ...(reserved !== undefined ? { [PROCESSOR_RESERVED_CONCURRENCY_ENV]: String(reserved) } : {}),
    // A stream whose interval is not shorter ticks once per invocation (lib/planner/loop-timing.ts).
    ...(s.schedulePeriodMs !== undefined ? { [SCHEDULE_PERIOD_ENV]: String(s.schedulePeriodMs) } : {}),
  };
}

/** Lambda's longest timeout, the segments function's: a segment runs until `continuous.segmentMs` or its time budget. */
export const SEGMENT_TIMEOUT_SECONDS = 900;

/**
 * How long a segment invocation may wait in Lambda's async queue: the least Lambda allows. A segment
 * range's lease is short (`continuous.leaseMs`, 10 s by default): by then the planner has sent the
 * range again, and an older event finds it held by another segment and leaves.
 */
export const SEGMENT_MAXIMUM_EVENT_AGE_SECONDS = 60;

/** Whether the stack has the segments function: the config has a continuous stream. */
export function hasSegmentsFunction(config: Pick<DeploymentConfig, 'streams'>): boolean {
  return config.streams.some(isContinuous);
}

/**
 * The `segments` function of serverless.yml (`functions.segments`), or null (serverless drops a
 * function set to null) when no stream is continuous: the stack is then what it was without it.
 * Continuous streams' resident segments run here, apart from the processor, with memory
 * (`segmentMemorySize`) and reserved concurrency (`segmentReservedConcurrency`) of their own. It is
 * the processor's handler, environment, VPC and permissions (role `SegmentsRole`, which may also
 * invoke this function: a segment invokes its successor), with Lambda's longest timeout; failed or
 * expired events go to the processor's on-failure queue. Architecture, runtime, the shared
 * environment and its key come from `provider`.
 */
export function segmentsFunction(s: Settings, config: DeploymentConfig): Record<string, Cfn> | null {
  if (!hasSegmentsFunction(config)) return null;
  const network = vpc(s);
  return {
    name: s.names.segments,
    description: 'Runs continuous streams: resident segments of up to 7 partitions, each invoking its successor before its end',
    handler: 'functions/processor.handler',
    role: IDS.segmentsRole,
    memorySize: s.segmentMemorySize,
    timeout: SEGMENT_TIMEOUT_SECONDS,
    ...(network ? { vpc: network } : {}),
    reservedConcurrency: s.segmentReservedConcurrency ?? NO_VALUE,
    // Not retried by Lambda: a segment that fails loses its lease, and the planner sends its ranges again.
    maximumRetryAttempts: 0,
    maximumEventAge: SEGMENT_MAXIMUM_EVENT_AGE_SECONDS,
    destinations: { onFailure: { type: 'sqs', arn: getAtt(IDS.processorFailureQueue, 'Arn') } },
    environment: processorEnvironment(s, config),
  };
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

/**
 * Environment the stack gives the processor function beyond provider.environment: AUDIT_LOG_TABLE
 * (the auditLogTable param) and every stream's `handler.environment` (the config refuses names the
 * stack sets, and two values for one name). Never a secret's value: those are read at run time.
 */
export function processorEnvironment(s: Settings, config: Pick<DeploymentConfig, 'streams'>): Record<string, string> {
  return {
    ...handlerEnvironment(config.streams),
    ...connectionEnvironment(s),
    ...(s.auditLogTable ? { AUDIT_LOG_TABLE: s.auditLogTable } : {}),
  };
}

/** Both functions: how long a warm container still reuses its connections (the connectionIdleMaxMs param). */
function connectionEnvironment(s: Settings): Record<string, string> {
  return { [CONNECTION_IDLE_MAX_MS_ENV]: String(s.connectionIdleMaxMs) };
}

/** The user handler modules a config names by path (what the esbuild plugin bundles), with the files they resolve to. */
export function handlerModules(config: DeploymentConfig): Array<{ stream: string; module: string; file: string }> {
  return config.streams.flatMap((stream) => {
    const module = stream.handler?.module;
    return module !== undefined && isHandlerPath(module)
      ? [{ stream: stream.id, module, file: handlerModuleFile(module, config.configDir) }]
      : [];
  });
}
