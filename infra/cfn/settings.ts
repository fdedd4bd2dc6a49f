/**
 * The stage's settings: serverless params (strings or YAML scalars) parsed into typed values, and
 * the checks that tie the streams config to the stack (what `sls package` refuses, and why).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DeploymentConfig, StreamConfig } from '../../lib/config/schema';
import { isContinuous } from '../../lib/config/continuous';
import { AppError, ValidationError } from '../../lib/errors';
import { HANDLERS, resolveHandler } from '../../lib/handlers';
import { createSecretResolver, type SecretResolver } from '../../lib/kafka/secrets';
import { resolveHandlerSecrets } from '../../lib/processor/handler-secrets';
import { processorEnvironment } from './functions';
import { DEFAULT_METRICS_NAMESPACE } from '../../lib/runtime/metrics-namespace';
import { DEFAULT_CONNECTION_IDLE_MAX_MS } from '../../lib/runtime/connection-reuse';

/** The stage's params or streams config cannot be deployed as they are; the message says why. */
export class DeployConfigError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DEPLOY_CONFIG', message, options);
    // serverless prints `stack` for a failed variable; the message is all a user needs here.
    this.stack = `${this.name}: ${message}`;
  }
}

/** Comma-separated list (the form a `--param` can carry), or a YAML list. */
function list(value: unknown): string[] {
  if (Array.isArray(value))
    return value
      .map(String)
      .map((s) => s.trim())
      .filter(Boolean);
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

/** The tick chain's threshold: serverless.yml's default when absent, none for '' (no chain, no queue). */
function tickChainFrom(value: unknown): number | undefined {
  if (value === undefined || value === null) return DEFAULT_TICK_CHAIN_FROM_MS;
  return String(value).trim() === '' ? undefined : int('tickChainFromMs', value, { min: 1000, max: 900_000 });
}

/** serverless.yml's `segmentMemorySize`: the memory continuous mode's cost estimates assume for a resident segment. */
export const DEFAULT_SEGMENT_MEMORY_MB = 256;

/** serverless.yml's `tickChainFromMs`: from 5 s, a resident planner would sleep most of what it is billed for. */
export const DEFAULT_TICK_CHAIN_FROM_MS = 5000;

function deletionPolicy(value: unknown): Settings['tableDeletionPolicy'] {
  const text = String(value ?? 'Delete').trim();
  if (text === 'Delete' || text === 'Retain' || text === 'Snapshot') return text;
  throw new DeployConfigError(`param tableDeletionPolicy must be Delete, Retain or Snapshot, got ${JSON.stringify(value)}`);
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
    throw new DeployConfigError(
      `param scheduleRate: write "rate(1 ${unit})" or "rate(${n === 1 ? 2 : n} ${unit}s)" ` +
        `(EventBridge rejects ${JSON.stringify(expression)})`,
    );
  }
  return n * { minute: 60_000, hour: 3_600_000, day: 86_400_000 }[unit];
}

const KMS_KEY_ARN = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/;

/** An optional KMS key ARN param (empty: unset). */
function kmsKeyArn(name: string, value: unknown, alternatives = ''): string | undefined {
  const text = String(value ?? '').trim();
  if (text === '') return undefined;
  if (!KMS_KEY_ARN.test(text)) {
    throw new DeployConfigError(
      `param ${name} must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)${alternatives}, got ${JSON.stringify(text)}`,
    );
  }
  return text;
}

const MSK_CLUSTER_ARN = /^arn:(aws[a-z-]*):kafka:([a-z0-9-]+):(\d{12}):cluster\/([^/]+)\/([^/]+)$/;

/** Raw inputs: `service`, `stage` and the serverless params (strings, numbers or booleans). */
export type RawSettings = Record<string, unknown>;

export type Settings = {
  service: string;
  stage: string;
  names: { planner: string; processor: string; segments: string; ledgerTable: string; dashboard: string };
  /** The stack's tables (ledger, declared sink tables): deletion protection and CloudFormation DeletionPolicy. */
  tableDeletionProtection: boolean;
  tableDeletionPolicy: 'Delete' | 'Retain' | 'Snapshot';
  scheduleRate: string;
  /** Undefined for a cron expression. */
  schedulePeriodMs: number | undefined;
  scheduleMethod: 'scheduler' | 'eventBus';
  scheduleEnabled: boolean;
  scheduleMaximumRetryAttempts: number;
  /** The shortest trigger interval ticked by the tick chain (lib/planner/tick-chain.ts); undefined: none is (`tickChainFromMs: ''`). */
  tickChainFromMs: number | undefined;
  /** How long after its previous invocation a warm function still reuses its connections (lib/runtime/connection-reuse.ts). */
  connectionIdleMaxMs: number;
  plannerTimeoutSeconds: number;
  processorTimeoutSeconds: number;
  processorMaximumEventAgeSeconds: number;
  processorReservedConcurrency: number | undefined;
  /** MB of the `segments` function (continuous streams' resident segments; only with a continuous stream). */
  segmentMemorySize: number;
  /** Reserved concurrency of the `segments` function; undefined: unreserved. */
  segmentReservedConcurrency: number | undefined;
  mskClusterArns: string[];
  kafkaSecretArns: string[];
  kafkaSecretsKmsKeyArn: string | undefined;
  tableKmsKeyArn: string | undefined;
  /** Customer managed key of the functions' environment variables (default: Lambda's AWS managed key). */
  functionKmsKeyArn: string | undefined;
  /** Log groups' key: the stack's own (`stack`), a key ARN, or none (CloudWatch Logs' own encryption). */
  logsKmsKey: 'stack' | string | undefined;
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
      throw new DeployConfigError(
        `param mskClusterArns: ${JSON.stringify(arn)} is not an MSK cluster ARN (arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>)`,
      );
    }
  }
  const scheduleMethod = String(raw.scheduleMethod ?? 'scheduler');
  if (scheduleMethod !== 'scheduler' && scheduleMethod !== 'eventBus') {
    throw new DeployConfigError(
      'param scheduleMethod must be "scheduler" (EventBridge Scheduler) or "eventBus" (EventBridge rule), ' +
        `got ${JSON.stringify(scheduleMethod)}`,
    );
  }
  const reserved = String(raw.processorReservedConcurrency ?? '').trim();
  const segmentsReserved = String(raw.segmentReservedConcurrency ?? '').trim();
  const kmsKey = String(raw.kafkaSecretsKmsKeyArn ?? '').trim();
  if (kmsKey !== '' && !/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/.test(kmsKey)) {
    throw new DeployConfigError(
      `param kafkaSecretsKmsKeyArn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>), got ${JSON.stringify(kmsKey)}`,
    );
  }
  const settings: Settings = {
    service,
    stage,
    names: {
      planner: `${prefix}-planner`,
      processor: `${prefix}-processor`,
      segments: `${prefix}-segments`,
      ledgerTable: `${prefix}-ledger`,
      dashboard: `${prefix}`,
    },
    scheduleRate: String(raw.scheduleRate),
    schedulePeriodMs: schedulePeriodMs(raw.scheduleRate),
    scheduleMethod: scheduleMethod as Settings['scheduleMethod'],
    scheduleEnabled: bool('scheduleEnabled', raw.scheduleEnabled ?? true),
    scheduleMaximumRetryAttempts: int('scheduleMaximumRetryAttempts', raw.scheduleMaximumRetryAttempts ?? 2, { min: 0, max: 185 }),
    tickChainFromMs: tickChainFrom(raw.tickChainFromMs),
    connectionIdleMaxMs: int('connectionIdleMaxMs', raw.connectionIdleMaxMs ?? DEFAULT_CONNECTION_IDLE_MAX_MS, { min: 0, max: 900_000 }),
    plannerTimeoutSeconds: int('plannerTimeout', raw.plannerTimeout, { min: 1, max: 900 }),
    processorTimeoutSeconds: int('processorTimeout', raw.processorTimeout, { min: 1, max: 900 }),
    processorMaximumEventAgeSeconds: int('processorMaximumEventAge', raw.processorMaximumEventAge, { min: 60, max: 21600 }),
    processorReservedConcurrency: reserved === '' ? undefined : int('processorReservedConcurrency', reserved, { min: 1 }),
    segmentMemorySize: int('segmentMemorySize', raw.segmentMemorySize ?? DEFAULT_SEGMENT_MEMORY_MB, { min: 128, max: 10_240 }),
    segmentReservedConcurrency: segmentsReserved === '' ? undefined : int('segmentReservedConcurrency', segmentsReserved, { min: 1 }),
    mskClusterArns,
    kafkaSecretArns: list(raw.kafkaSecretArns),
    kafkaSecretsKmsKeyArn: kmsKey === '' ? undefined : kmsKey,
    tableKmsKeyArn: String(raw.tableKmsKeyArn ?? '').trim() || undefined,
    functionKmsKeyArn: kmsKeyArn('functionKmsKeyArn', raw.functionKmsKeyArn),
    logsKmsKey: String(raw.logsKmsKey ?? '').trim() === 'stack' ? 'stack' : kmsKeyArn('logsKmsKey', raw.logsKmsKey, ', or "stack"'),
    tableDeletionProtection: bool('tableDeletionProtection', raw.tableDeletionProtection ?? false),
    tableDeletionPolicy: deletionPolicy(raw.tableDeletionPolicy),
    vpc: subnetIds.length ? { subnetIds, securityGroupIds } : undefined,
    auditLogTable: String(raw.auditLogTable ?? '').trim() || undefined,
    metricsNamespace: String(raw.metricsNamespace || DEFAULT_METRICS_NAMESPACE),
    lagAlarmThreshold: int('lagAlarmThreshold', raw.lagAlarmThreshold ?? 10000, { min: 0 }),
    lagAlarmMinutes: int('lagAlarmMinutes', raw.lagAlarmMinutes ?? 15, { min: 2, max: 1440 }),
    alarmEmail: String(raw.alarmEmail ?? '').trim() || undefined,
    bundleAwsSdk: bool('bundleAwsSdk', raw.bundleAwsSdk ?? false),
  };
  checkPlannerTimeout(settings);
  return settings;
}

/**
 * How much longer than the schedule period the planner's timeout must be. Each scheduled invocation
 * ticks until its time is nearly up, and the next one must have arrived and registered as its
 * successor before then, or the stream goes without ticks until it does. The holder stops a tick
 * plus its end margin (max(2 s, twice the longest recent tick)) before its deadline; the successor
 * needs its delivery (EventBridge is seconds late at times) and a cold start. 20 s leaves room for
 * ticks of up to 3 s (9 s) and 11 s of delivery and start-up.
 */
export const PLANNER_TIMEOUT_MARGIN_SECONDS = 20;

/** Lambda's longest function timeout. */
const MAX_FUNCTION_TIMEOUT_SECONDS = 900;

/**
 * Refuses a planner timeout that does not outlast the schedule period by the margin, and a period so
 * long that no timeout could (above 14 minutes). A cron schedule has no fixed period: not checked.
 */
function checkPlannerTimeout(s: Settings): void {
  if (s.schedulePeriodMs === undefined) return;
  const periodSeconds = s.schedulePeriodMs / 1000;
  const needed = periodSeconds + PLANNER_TIMEOUT_MARGIN_SECONDS;
  if (needed > MAX_FUNCTION_TIMEOUT_SECONDS) {
    const longest = Math.floor((MAX_FUNCTION_TIMEOUT_SECONDS - PLANNER_TIMEOUT_MARGIN_SECONDS) / 60);
    throw new DeployConfigError(
      `param scheduleRate is ${s.scheduleRate} (${periodSeconds} s), but the planner's timeout must exceed the schedule period ` +
        `by ${PLANNER_TIMEOUT_MARGIN_SECONDS} s and Lambda allows at most ${MAX_FUNCTION_TIMEOUT_SECONDS} s: ` +
        `use rate(${longest} minutes) or less (each invocation ticks every triggerIntervalMs until the next takes over)`,
    );
  }
  if (s.plannerTimeoutSeconds < needed) {
    throw new DeployConfigError(
      `param plannerTimeout is ${s.plannerTimeoutSeconds} s but param scheduleRate is ${s.scheduleRate} (${periodSeconds} s): ` +
        `set plannerTimeout to at least ${needed} (the period + ${PLANNER_TIMEOUT_MARGIN_SECONDS} s), ` +
        'so that each planner invocation is still ticking when the next one arrives to take over',
    );
  }
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

/**
 * What the processor checks before a stream's first range, run here with the processor's own code
 * and deployed environment: the handler resolves (registered module, declared mode, its environment
 * variables) and every secret read from the environment is set. Returns one line per problem.
 */
async function runtimeProblems(s: Settings, config: DeploymentConfig): Promise<string[]> {
  // A Kafka password is read by both functions, so only from what both have; handlers get the processor's.
  const sharedEnv = { LEDGER_TABLE: s.names.ledgerTable };
  const env = { ...sharedEnv, ...processorEnvironment(s, config) };
  // Handler factories keep the client for later; it never sends anything here.
  const dynamo = new DynamoDBClient({ region: 'us-east-1' });
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
          resolveHandler(stream, { dynamo, env, configDir: config.configDir }, HANDLERS);
        } catch (err) {
          add(stream, err);
        }
      }
      for (const err of await environmentSecretErrors(stream, {
        kafka: packageTimeResolver(sharedEnv),
        handler: packageTimeResolver(env),
      })) {
        add(stream, err);
      }
    }
  } finally {
    dynamo.destroy();
  }
  return problems;
}

/** Resolves only references to the environment: the secret stores are not read at package time. */
function packageTimeResolver(env: NodeJS.ProcessEnv): SecretResolver {
  const refuse = () => Promise.reject(new Error('not read at package time'));
  return createSecretResolver({ env, readSecretsManager: refuse, readSsmParameter: refuse });
}

/** The stream's secrets read from environment variables that the deployed functions would not have. */
async function environmentSecretErrors(
  stream: StreamConfig,
  resolvers: { kafka: SecretResolver; handler: SecretResolver },
): Promise<unknown[]> {
  const errors: unknown[] = [];
  const sasl = stream.kafka.sasl;
  if (sasl && sasl.mechanism !== 'aws-msk-iam' && 'env' in sasl.password) {
    await resolvers.kafka(sasl.password).catch((err: unknown) => {
      errors.push(err instanceof AppError ? new ValidationError(`kafka.sasl.password: ${err.message}`, { cause: err }) : err);
    });
  }
  for (const field of ['value', 'key'] as const) {
    const registry = stream[field]?.registry;
    const password = registry && 'confluent' in registry ? registry.confluent.password : undefined;
    if (password === undefined || !('env' in password)) continue;
    await resolvers.handler(password).catch((err: unknown) => {
      errors.push(
        err instanceof AppError ? new ValidationError(`${field}.registry.confluent.password: ${err.message}`, { cause: err }) : err,
      );
    });
  }
  for (const [name, ref] of Object.entries(stream.handler?.secrets ?? {})) {
    if (!('env' in ref) || stream.handler === undefined) continue;
    const one = { ...stream, handler: { ...stream.handler, secrets: { [name]: ref } } };
    await resolveHandlerSecrets(one, resolvers.handler).catch((err: unknown) => errors.push(err));
  }
  return errors;
}

/**
 * A reserved concurrency of the segments function that cannot hold every continuous stream's
 * segments: each needs at least one resident invocation, and its successor runs beside it during a
 * hand-over. (How many a stream needs depends on its partitions, which only Kafka knows.)
 */
function segmentProblems(s: Settings, config: DeploymentConfig): string[] {
  const continuous = config.streams.filter(isContinuous);
  const reserved = s.segmentReservedConcurrency;
  if (reserved === undefined || continuous.length === 0 || reserved >= 2 * continuous.length) return [];
  return [
    `param segmentReservedConcurrency is ${reserved} but the config has ${continuous.length} continuous stream(s) ` +
      `(${continuous.map((st) => st.id).join(', ')}), each needing at least 2 segment invocations at once ` +
      '(one resident, its successor during a hand-over): raise it to at least ' +
      `${2 * continuous.length}, or better 2 x ceil(partitions / continuous.partitionsPerSegment) per stream`,
  ];
}

/**
 * Fails packaging for a config the deployed functions could not run as intended: a trigger interval
 * longer than the schedule period (the next invocation takes over at the holder's next tick, and would
 * wait longer than a period for it), a stream processor
 * timeout beyond the function's, a stream maxConcurrency beyond the processor's reserved
 * concurrency (processors that could never run at once), handler tables without IAM, MSK IAM auth
 * with the functions' own credentials without a cluster, MSK without a VPC, and whatever the
 * processor itself would refuse at its first range.
 */
export async function checkConfig(s: Settings, config: DeploymentConfig): Promise<void> {
  const problems: string[] = [];
  for (const stream of config.streams) {
    if (s.schedulePeriodMs !== undefined && stream.triggerIntervalMs > s.schedulePeriodMs) {
      problems.push(
        `stream ${stream.id}: triggerIntervalMs is ${stream.triggerIntervalMs} ` +
          `but the planner runs ${s.scheduleRate} (${s.schedulePeriodMs} ms); ` +
          'triggerIntervalMs must be at most the schedule period ' +
          '(each scheduled invocation ticks every triggerIntervalMs until the next one takes over)',
      );
    }
    // A continuous stream's segments run on the segments function (900 s), not on the processor.
    if (!isContinuous(stream) && stream.processor.timeoutMs > s.processorTimeoutSeconds * 1000) {
      problems.push(
        `stream ${stream.id}: processor.timeoutMs is ${stream.processor.timeoutMs} ` +
          `but the processor function times out after ${s.processorTimeoutSeconds} s; ` +
          'lower processor.timeoutMs or raise the processorTimeout param',
      );
    }
    // With roleArn the assumed role's own policy (in the cluster's account) holds the Kafka permissions.
    if (stream.kafka.sasl?.mechanism === 'aws-msk-iam' && stream.kafka.sasl.roleArn === undefined && s.mskClusterArns.length === 0) {
      problems.push(
        `stream ${stream.id}: aws-msk-iam needs the mskClusterArns param (the cluster ARN scopes the kafka-cluster:* permissions)`,
      );
    }
    const reserved = s.processorReservedConcurrency;
    if (reserved !== undefined && !isContinuous(stream) && stream.maxConcurrency !== undefined && stream.maxConcurrency > reserved) {
      problems.push(
        `stream ${stream.id}: maxConcurrency is ${stream.maxConcurrency} ` +
          `but the processor's reserved concurrency (param processorReservedConcurrency) is ${reserved}; ` +
          'lower maxConcurrency or raise the param',
      );
    }
    if (needsVpc(stream) && !s.vpc && s.stage !== 'local') {
      problems.push(
        `stream ${stream.id}: Amazon MSK brokers are reachable only from the cluster's VPC: ` +
          'set the vpcSubnetIds and vpcSecurityGroupIds params',
      );
    }
  }
  problems.push(...segmentProblems(s, config));
  problems.push(...(await runtimeProblems(s, config)));
  if (problems.length === 1) throw new DeployConfigError(`the streams config does not fit stage ${s.stage}: ${problems[0]}`);
  if (problems.length) throw new DeployConfigError(`the streams config does not fit stage ${s.stage}:\n  - ${problems.join('\n  - ')}`);
}
