/** Function settings that depend on the stage: VPC, reserved concurrency, extra environment, bundling. */
import { handlerEnvironment } from '../../lib/config/handler-access';
import { SCHEDULE_PERIOD_ENV } from '../../lib/planner/loop-timing';
import type { DeploymentConfig } from '../../lib/config/schema';
import { handlerModuleFile, isHandlerPath } from '../../lib/handlers/modules';
import { PROCESSOR_RESERVED_CONCURRENCY_ENV } from '../../lib/planner/concurrency-cap';
import { NO_VALUE, type Cfn } from './cfn';
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
 * invokes and, when the param reserves it, the processor's concurrency, which the planner shares
 * among the streams so that it never dispatches more processors than can run.
 */
export function plannerEnvironment(s: Settings, config: DeploymentConfig): Record<string, Cfn> {
  const reserved = s.processorReservedConcurrency;
  return {
    ...tickChainEnvironment(s, config),
    ...connectionEnvironment(s),
    PROCESSOR_FUNCTION_NAME: s.names.processor,
    ...(reserved !== undefined ? { [PROCESSOR_RESERVED_CONCURRENCY_ENV]: String(reserved) } : {}),
    // A stream whose interval is not shorter ticks once per invocation (lib/planner/loop-timing.ts).
    ...(s.schedulePeriodMs !== undefined ? { [SCHEDULE_PERIOD_ENV]: String(s.schedulePeriodMs) } : {}),
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
