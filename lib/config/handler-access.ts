/**
 * The rules for what a stream's handler may be given beyond its sink table (`handler.iam`,
 * `handler.environment`, `handler.secrets`): each check returns why a value is refused, worded for
 * the config's author, or undefined when it is accepted. The schema (schema.ts) reports them at the
 * value's path; the stack (infra/cfn/iam.ts) relies on them to grant exactly what is written.
 */

/** The pseudo parameters a handler's IAM resource may name; the stack then writes the resource as an Fn::Sub. */
const IAM_RESOURCE_SUBSTITUTIONS = ['${AWS::Partition}', '${AWS::Region}', '${AWS::AccountId}'] as const;

/** Values that parse like the pseudo parameters they stand for, so a substituted ARN is checked as written out. */
const SUBSTITUTION_STAND_INS: Record<(typeof IAM_RESOURCE_SUBSTITUTIONS)[number], string> = {
  '${AWS::Partition}': 'aws',
  '${AWS::Region}': 'us-east-1',
  '${AWS::AccountId}': '123456789012',
};

/** Example actions for a wildcard's service, so the message suggests a real one. */
const EXAMPLE_ACTIONS: Record<string, string> = {
  sqs: 'SendMessage',
  sns: 'Publish',
  s3: 'PutObject',
  dynamodb: 'PutItem',
  kinesis: 'PutRecord',
  firehose: 'PutRecordBatch',
  events: 'PutEvents',
  lambda: 'InvokeFunction',
  secretsmanager: 'GetSecretValue',
  ssm: 'GetParameter',
};

const EXAMPLE_RESOURCE = 'arn:aws:sqs:us-east-1:123456789012:orders';

function exampleAction(service: string | undefined): string {
  const known = service === undefined ? undefined : EXAMPLE_ACTIONS[service];
  return known === undefined ? 'sqs:SendMessage' : `${service}:${known}`;
}

/** Why `action` cannot be granted to a handler: a wildcard, or not `service:Action`. */
export function iamActionProblem(action: string): string | undefined {
  const service = /^([a-z0-9-]+):/.exec(action)?.[1];
  if (/[*?]/.test(action)) {
    return `${JSON.stringify(action)} is a wildcard action: name each action, e.g. ${JSON.stringify(exampleAction(service))}`;
  }
  if (!/^[a-z0-9][a-z0-9-]*:[A-Za-z][A-Za-z0-9]*$/.test(action)) {
    return `${JSON.stringify(action)} is not an IAM action: write "service:Action", e.g. ${JSON.stringify(exampleAction(service))}`;
  }
  return undefined;
}

/** Whether a handler's IAM resource names pseudo parameters (and so must be written as an Fn::Sub). */
export function usesSubstitution(resource: string): boolean {
  return IAM_RESOURCE_SUBSTITUTIONS.some((token) => resource.includes(token));
}

/**
 * Why `resource` cannot be granted to a handler: not an ARN, every resource (`*`), a wildcard for
 * the whole service or resource part, or a `${...}` other than the pseudo parameters. A wildcard
 * that completes a name or a path stays allowed: S3 objects can only be granted that way.
 */
export function iamResourceProblem(resource: string): string | undefined {
  const quoted = JSON.stringify(resource);
  if (/^[*?]+$/.test(resource)) return `${quoted} grants every resource: name the resources by ARN, e.g. "${EXAMPLE_RESOURCE}"`;
  const unknownSubstitution = /\$\{[^}]*\}?/.exec(withStandIns(resource))?.[0];
  if (unknownSubstitution !== undefined) {
    return (
      `${JSON.stringify(unknownSubstitution)} cannot be substituted: only ` +
      `${IAM_RESOURCE_SUBSTITUTIONS.join(', ')} may appear in a resource`
    );
  }
  const arn = /^arn:([^:]*):([^:]*):([^:]*):([^:]*):(.*)$/.exec(withStandIns(resource));
  const [partition, service, region, account, name] = arn?.slice(1) ?? [];
  const wellFormed =
    partition !== undefined &&
    /^aws(-[a-z]+)*$/.test(partition) &&
    /^[a-z0-9*?-]+$/.test(service ?? '') &&
    /^[a-z0-9*?-]*$/.test(region ?? '') &&
    /^[a-z0-9*?-]*$/.test(account ?? '') &&
    (name ?? '') !== '';
  if (!wellFormed) {
    return (
      `${quoted} is not an ARN: name the resource as ` +
      `"arn:<partition>:<service>:<region>:<account>:<resource>", e.g. "${EXAMPLE_RESOURCE}"`
    );
  }
  if (/[*?]/.test(service ?? '')) return `${quoted} names every service: write the service, e.g. "${EXAMPLE_RESOURCE}"`;
  if (/^[*?/:]+$/.test(name ?? '')) {
    return (
      `${quoted} names every ${service} resource: name the resource (a wildcard ` +
      `may only complete a name or a path, e.g. "arn:aws:s3:::my-bucket/*")`
    );
  }
  return undefined;
}

function withStandIns(resource: string): string {
  let out = resource;
  for (const token of IAM_RESOURCE_SUBSTITUTIONS) out = out.split(token).join(SUBSTITUTION_STAND_INS[token]);
  return out;
}

/** IAM's rule for a statement id. */
export const IAM_SID_PATTERN = /^[A-Za-z0-9]+$/;

/** Names of handler secrets (and the base rule of environment variable names). */
export const VARIABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Variables the stack sets on the functions or the runtime reads, with what they hold. */
const STACK_VARIABLES: Record<string, string> = {
  STREAMS_CONFIG: 'the streams config',
  LEDGER_TABLE: 'the ledger table',
  METRICS_NAMESPACE: "the functions' metrics namespace",
  NODE_OPTIONS: "the functions' Node.js options",
  PROCESSOR_FUNCTION_NAME: "the planner's processor function",
  PROCESSOR_RESERVED_CONCURRENCY: "the processor's reserved concurrency, which the planner shares among the streams",
  SEGMENT_FUNCTION_NAME: "the planner's segments function (continuous streams)",
  AUDIT_LOG_TABLE: 'the audit-log handler\'s table (the "auditLogTable" param)',
  CONNECTION_IDLE_MAX_MS: 'how long a warm function reuses its connections (the "connectionIdleMaxMs" param)',
  DYNAMODB_ENDPOINT: "the local stack's DynamoDB endpoint, which the ledger client would use",
  KAFKA_BROKERS: "the local stack's Kafka brokers",
};

/** Set by Lambda for the Node.js runtime itself: a stream's value would change it under every stream. */
const RUNTIME_VARIABLES = new Set(['PATH', 'LD_LIBRARY_PATH', 'NODE_PATH']);

/** Reserved by Lambda (its documentation's "reserved environment variables"); also every AWS_* and LAMBDA_* name. */
const LAMBDA_RESERVED = new Set(['_HANDLER', '_X_AMZN_TRACE_ID', 'TZ']);

/**
 * Why `name` cannot be a variable of the processor function: not a name Lambda accepts (a letter,
 * then letters, digits or "_", at least two characters), reserved by Lambda, set by the stack, or
 * read by the functions' own logger and metrics.
 */
export function environmentNameProblem(name: string): string | undefined {
  if (LAMBDA_RESERVED.has(name) || /^(AWS|LAMBDA)_/.test(name)) {
    return `is reserved by Lambda (AWS_* and LAMBDA_* names, _HANDLER, _X_AMZN_TRACE_ID and TZ are): choose another name`;
  }
  if (!VARIABLE_NAME_PATTERN.test(name) || !/^[A-Za-z][A-Za-z0-9_]+$/.test(name)) {
    return "must be an environment variable name Lambda accepts: a letter, then letters, digits or '_' (at least two characters)";
  }
  const stack = STACK_VARIABLES[name];
  if (stack !== undefined) return `is set by the stack (${stack}): choose another name`;
  if (name.startsWith('POWERTOOLS_'))
    return "configures the functions' logger and metrics (Powertools), which the stack sets: choose another name";
  if (RUNTIME_VARIABLES.has(name)) return 'is set by Lambda for the Node.js runtime, under every stream: choose another name';
  return undefined;
}

/**
 * The variables the streams' handlers declare (`handler.environment`), as the one set the processor
 * function gets: the config refuses two values for one name, so merging loses nothing.
 */
export function handlerEnvironment(streams: ReadonlyArray<{ handler?: { environment?: Record<string, string> } }>): Record<string, string> {
  const merged: Record<string, string> = {};
  for (const stream of streams) Object.assign(merged, stream.handler?.environment);
  return merged;
}
