/**
 * The deployment config: which streams exist, where their Kafka cluster is, and how the planner
 * sizes and paces their batches. Every object is strict, so a misspelt key fails loudly instead of
 * silently falling back to a default; the exported types are the parsed form with defaults applied.
 */
import { z } from 'zod';
import { pemCertificateProblem } from './pem';
import { ValidationError } from '../errors';
import type { IsolationLevel as PortIsolationLevel } from '../ports/kafka-metadata';
import { DEAD_LETTER_CONTENTS } from '../ports/ledger-state';
import { MAX_RANGES_PER_INVOCATION } from '../ranges';
import { environmentNameProblem, iamActionProblem, iamResourceProblem, IAM_SID_PATTERN, VARIABLE_NAME_PATTERN } from './handler-access';
import { compilePattern, MAX_FILTERS, type FilterPattern } from '../filters/pattern';
import { formatIssues, issueMessage, unknownKeysMessage } from './issues';
import { isInternalTopic, isValidTopicName, regexSourceError, topicMatcher } from './topics';

/** A folded batch's default bounds (`processor.foldMaxItems`, `foldMaxRecords`): the fold committer's budget starts from them. */
export const DEFAULT_FOLD_MAX_ITEMS = 50_000;
export const DEFAULT_FOLD_MAX_RECORDS = 500_000;

// ---------------------------------------------------------------------------------------------
// Defaults (exported so docs, tests and the planner quote one source of truth).

const DEFAULT_CLIENT_ID = 'kafka-lambda-direct';
/** Lambda's hard limit on a function's timeout. */
const LAMBDA_MAX_TIMEOUT_MS = 900_000;
/** Extra lease time past the processor timeout, so a lease never lapses while its invocation may still run. */
const DEFAULT_LEASE_MARGIN_MS = 60_000;

// ---------------------------------------------------------------------------------------------
// Building blocks.

/** Object with no unknown keys; unknown keys are reported by name, with a "did you mean" hint. */
function strictObject<T extends z.ZodRawShape>(shape: T) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) => (iss.code === 'unrecognized_keys' ? unknownKeysMessage(iss.keys, known) : undefined),
  });
}

const nonEmptyString = z.string().min(1);

/**
 * A whole number a JS number holds exactly. Not zod's `.int()`: that check aborts the parse, which
 * would hide the cross-field problems of the same stream from the one report.
 */
function wholeNumber() {
  return z.number().superRefine((n, ctx) => {
    if (!Number.isInteger(n)) ctx.addIssue({ code: 'custom', message: 'must be a whole number' });
    else if (!Number.isSafeInteger(n)) ctx.addIssue({ code: 'custom', message: `must be <= ${Number.MAX_SAFE_INTEGER}` });
  });
}
const positiveInt = wholeNumber().positive();
const nonNegativeInt = wholeNumber().nonnegative();
/** Kafka offsets and epoch-millisecond timestamps. */
const offsetNumber = nonNegativeInt;

const topicName = z.string().refine((name) => isValidTopicName(name), {
  error: "must be a Kafka topic name (1-249 characters: letters, digits, '.', '_' or '-')",
});

const tableName = z.string().regex(/^[a-zA-Z0-9_.-]{3,255}$/, {
  error: "must be a DynamoDB table name (3-255 characters: letters, digits, '.', '_' or '-')",
});

const brokerAddress = z.string().refine(isBrokerAddress, {
  error: 'must be "host:port", e.g. "b-1.example.kafka.us-east-1.amazonaws.com:9098"',
});

function isBrokerAddress(address: string): boolean {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(address);
  const port = Number(match?.[2]);
  return match !== null && port >= 1 && port <= 65_535;
}

// ---------------------------------------------------------------------------------------------
// Kafka connection.

const SECRET_REF_FORMS = '{ "secretArn": ..., "field"?: ... }, { "ssmParameter": ... } or { "env": ... }';

/** Where a secret (a Kafka password, a handler secret) lives; the config itself never holds one. */
const secretRefSchema = z.union(
  [
    strictObject({
      /** Secrets Manager secret ARN (or name). */
      secretArn: nonEmptyString,
      /** For a JSON secret, the field holding the value (e.g. "password"); else the whole string. */
      field: nonEmptyString.optional(),
    }),
    /** SSM Parameter Store SecureString (name or ARN), read with decryption. */
    strictObject({ ssmParameter: nonEmptyString }),
    /** Environment variable: for local runs, where there is no secret store. */
    strictObject({
      env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'must be an environment variable name' }),
    }),
  ],
  {
    error: (iss) =>
      typeof iss.input === 'string'
        ? `plain-text secrets are not accepted: use a secret reference ${SECRET_REF_FORMS}`
        : `must be a secret reference: exactly one of ${SECRET_REF_FORMS}`,
  },
);
export type SecretRef = z.output<typeof secretRefSchema>;

const SASL_MECHANISMS = ['scram-sha-256', 'scram-sha-512', 'plain', 'aws-msk-iam'] as const;

/** IAM role ARN: `arn:<partition>:iam::<account>:role/[<path>/]<name>` (IAM's name and path characters). */
const IAM_ROLE_ARN = /^arn:aws(-[a-z]+)*:iam::\d{12}:role\/([\u0021-\u007e]{1,510}\/)?[\w+=,.@-]{1,64}$/;

/**
 * MSK IAM auth, signed with the functions' own credentials, or with a role assumed through STS
 * (`roleArn`, optionally `externalId` and `sessionName`, STS's own limits): a cluster in another
 * account whose policy admits that role.
 */
const mskIamSchema = strictObject({
  mechanism: z.literal('aws-msk-iam'),
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, { error: 'must be an AWS region, e.g. "us-east-1"' }),
  roleArn: z
    .string()
    .max(2048)
    .regex(IAM_ROLE_ARN, { error: 'must be an IAM role ARN, e.g. "arn:aws:iam::210987654321:role/msk-reader"' })
    .optional(),
  externalId: z
    .string()
    .regex(/^[\w+=,.@:/-]{2,1224}$/, { error: "must be 2-1224 characters: letters, digits or any of '+=,.@:/-_'" })
    .optional(),
  sessionName: z
    .string()
    .regex(/^[\w+=,.@-]{2,64}$/, { error: "must be 2-64 characters: letters, digits or any of '+=,.@-_'" })
    .optional(),
}).superRefine((sasl, ctx) => {
  if (sasl.roleArn !== undefined) return;
  for (const key of ['externalId', 'sessionName'] as const) {
    if (sasl[key] !== undefined)
      ctx.addIssue({ code: 'custom', path: [key], message: 'is used only with roleArn: set roleArn or remove it' });
  }
});

const saslSchema = z.discriminatedUnion(
  'mechanism',
  [
    strictObject({
      mechanism: z.enum(['scram-sha-256', 'scram-sha-512']),
      username: nonEmptyString,
      password: secretRefSchema,
    }),
    strictObject({ mechanism: z.literal('plain'), username: nonEmptyString, password: secretRefSchema }),
    mskIamSchema,
  ],
  { error: `must be one of ${SASL_MECHANISMS.map((m) => JSON.stringify(m)).join(', ')}` },
);
export type SaslConfig = z.output<typeof saslSchema>;
/** `aws-msk-iam` SASL settings, parsed. */
export type MskIamSaslConfig = z.output<typeof mskIamSchema>;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

/** PEM text of certificates (not a file path: Lambda bundles have no stable paths), checked to parse. */
const pemCertificates = z.string().superRefine((pem, ctx) => {
  const problem = pemCertificateProblem(pem);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

const sslSchema = z.union([
  z.boolean(),
  strictObject({
    rejectUnauthorized: z.boolean().optional(),
    /** PEM text of the CA bundle the brokers' certificates are checked against (default: Node's CAs). */
    ca: pemCertificates.optional(),
    /** Mutual TLS: the client certificate (PEM text, or a secret holding it) and its private key (a secret). */
    cert: z.union([pemCertificates, secretRefSchema], { error: 'must be PEM certificate text or a secret reference' }).optional(),
    /** A secret reference only: a private key is never in the config, the template or the bundle. */
    key: secretRefSchema.optional(),
    /** The key's passphrase, when the key is encrypted (a secret reference). */
    passphrase: secretRefSchema.optional(),
  }).superRefine((ssl, ctx) => {
    if ((ssl.cert === undefined) !== (ssl.key === undefined)) {
      const missing = ssl.cert === undefined ? 'cert' : 'key';
      ctx.addIssue({ code: 'custom', path: [missing], message: `mutual TLS needs both cert and key (${missing} is missing)` });
    }
    if (ssl.passphrase !== undefined && ssl.key === undefined) {
      ctx.addIssue({ code: 'custom', path: ['passphrase'], message: 'is the passphrase of ssl.key, which is not set' });
    }
  }),
]);
export type SslConfig = z.output<typeof sslSchema>;

const kafkaConnectionSchema = strictObject({
  brokers: z.array(brokerAddress).min(1),
  clientId: z.string().min(1).max(255).default(DEFAULT_CLIENT_ID),
  ssl: sslSchema.optional(),
  sasl: saslSchema.optional(),
  connectionTimeoutMs: positiveInt.default(3_000),
  requestTimeoutMs: positiveInt.default(30_000),
}).superRefine((kafka, ctx) => {
  if (kafka.sasl?.mechanism === 'aws-msk-iam' && kafka.ssl === false) {
    ctx.addIssue({ code: 'custom', path: ['ssl'], message: 'aws-msk-iam requires TLS: remove "ssl": false' });
  }
});
export type KafkaConnectionConfig = z.output<typeof kafkaConnectionSchema>;

// ---------------------------------------------------------------------------------------------
// Stream.

const partitionKey = z.string().regex(/^(0|[1-9][0-9]{0,9})$/, {
  error: 'partition must be a non-negative whole number written as a string, e.g. "0"',
});

/** A Kafka consumer group id (Kafka takes any non-empty string; 255 characters bound it here). */
const consumerGroupId = z.string().min(1).max(255);

const FALLBACKS = ['earliest', 'latest'] as const;

/**
 * Where a stream starts reading a partition it has never committed. With `offsets`, partitions not
 * listed start at their earliest offset (like partitions discovered after the stream started). With
 * `fromGroup`, a partition starts at the group's committed offset, or at `fallback` where the group
 * has none (Flink's `OffsetsInitializer.committedOffsets(resetStrategy)`).
 */
const startingOffsetsSchema = z.union(
  [
    z.enum(['earliest', 'latest']),
    /** The first record whose timestamp is >= timestampMs (epoch milliseconds). */
    strictObject({ timestampMs: offsetNumber }),
    /** Explicit offsets: { topic: { "partition": offset } }. */
    strictObject({ offsets: z.record(topicName, z.record(partitionKey, offsetNumber)) }),
    /** The committed offsets of a consumer group: a migration from a consumer-group application. */
    strictObject({
      fromGroup: consumerGroupId,
      // Required: Kafka's consumer defaults to latest, Spark and this stream to earliest; a migration says which.
      fallback: z.enum(FALLBACKS, {
        error: (iss) =>
          iss.input === undefined
            ? 'is required with fromGroup: "earliest" or "latest", where a partition the group has no committed offset for starts'
            : undefined,
      }),
    }),
  ],
  {
    error:
      'must be "earliest", "latest", { "timestampMs": ... }, { "offsets": { topic: { partition: offset } } } ' +
      'or { "fromGroup": <consumer group id>, "fallback": "earliest" | "latest" }',
  },
);
export type StartingOffsets = z.output<typeof startingOffsetsSchema>;

/** Where a topic that appears after the stream's first run starts (`newTopics`). */
const newTopicsSchema = z.union([z.enum(['earliest', 'latest']), strictObject({ timestampMs: offsetNumber })], {
  error: 'must be "earliest", "latest" or { "timestampMs": ... }',
});
export type NewTopicsStart = z.output<typeof newTopicsSchema>;

// Typed by the KafkaMetadata port, so the config cannot offer a level the adapters do not know.
const isolationLevelSchema = z.enum(['read_committed', 'read_uncommitted'] as const satisfies readonly PortIsolationLevel[]);
export type IsolationLevel = PortIsolationLevel;

/** Spark's PID rate estimator (spark.streaming.backpressure.pid.*), with Spark's defaults. */
const backpressureSchema = strictObject({
  enabled: z.boolean().default(false),
  /** Rate used before the first observation; unset = no limit from backpressure until one exists. */
  initialRatePerSec: z.number().positive().optional(),
  proportional: z.number().nonnegative().default(1.0),
  integral: z.number().nonnegative().default(0.2),
  derivative: z.number().nonnegative().default(0),
  minRatePerSec: z.number().positive().default(100),
});
export type BackpressureConfig = z.output<typeof backpressureSchema>;

/** When small ranges share a processor invocation (`false`: every range has an invocation of its own). */
const shareInvocationsSchema = z.union([
  z.literal(false),
  strictObject({
    /** Records of an invocation's ranges together; a range of more has an invocation of its own. */
    maxRecords: positiveInt.default(10_000),
    /** Bytes of an invocation's ranges together (records x the partition's observed bytes per record). */
    maxBytes: positiveInt.default(8 * 1024 * 1024),
    /** Ranges of one invocation at most. */
    maxRanges: positiveInt.max(MAX_RANGES_PER_INVOCATION).default(100),
  }),
]);

const processorSchema = strictObject({
  timeoutMs: wholeNumber().min(1_000).max(LAMBDA_MAX_TIMEOUT_MS).default(LAMBDA_MAX_TIMEOUT_MS),
  /** Share of the remaining time a processor plans to use, leaving room to commit. */
  safetyFactor: z.number().positive().max(1).default(0.8),
  /** Range lease duration; defaults to timeoutMs + 60 s. */
  leaseMs: positiveInt.optional(),
  /** At-least-once: progress is committed once this many records were handled since the last commit... */
  commitEveryRecords: positiveInt.default(10_000),
  /** ...or this long after it (and always when the range or the invocation ends). */
  commitEveryMs: positiveInt.default(5_000),
  /** Folded exactly-once handlers: distinct sink items a batch holds before it is written (memory bound). */
  foldMaxItems: positiveInt.default(DEFAULT_FOLD_MAX_ITEMS),
  /** Folded exactly-once handlers: records folded into one batch at most (what a crash makes the next invocation redo). */
  foldMaxRecords: positiveInt.default(DEFAULT_FOLD_MAX_RECORDS),
  /** Small ranges share an invocation (see lib/offsets/share.ts); `false` gives every range its own. */
  shareInvocations: shareInvocationsSchema.prefault({}),
})
  .superRefine((p, ctx) => {
    if (p.leaseMs !== undefined && !fieldFailed(ctx, 'timeoutMs') && p.leaseMs <= p.timeoutMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['leaseMs'],
        message:
          `must be greater than processor.timeoutMs (${p.timeoutMs}), or a ` +
          `second processor could take a range the first is still processing`,
      });
    }
  })
  .transform((p) => ({ ...p, leaseMs: p.leaseMs ?? p.timeoutMs + DEFAULT_LEASE_MARGIN_MS }));
export type ProcessorConfig = z.output<typeof processorSchema>;

/**
 * Continuous mode (docs/architecture.md, "Continuous mode"): each partition has one open segment
 * range, held by a resident processor invocation that reads records as they arrive and commits them
 * in small batches, then hands over to a successor it invokes itself.
 */
const continuousSchema = strictObject({
  /** How long one resident invocation holds its partitions before it hands over (capped by the processor's time budget). */
  segmentMs: wholeNumber().min(2_000).max(LAMBDA_MAX_TIMEOUT_MS).default(600_000),
  /** A segment's commits wait for the next tick of this interval and go out together: one write per ledger group item. */
  commitIntervalMs: wholeNumber().min(10).max(10_000).default(100),
  /**
   * The segment range's lease, renewed by every commit (and by a heartbeat while a partition is
   * idle): a segment that dies is replaced once it has run out.
   */
  leaseMs: wholeNumber().min(2_000).max(300_000).default(10_000),
  /** Partitions one resident invocation holds at most (of one ledger group item, which holds 7). */
  partitionsPerSegment: wholeNumber().min(1).max(7).default(7),
  /** How long before its end a segment invokes its successor, which waits for the hand-over (covers a cold start). */
  handoverLeadMs: wholeNumber().min(0).max(60_000).default(2_000),
});
export type ContinuousConfig = z.output<typeof continuousSchema>;

const splitSchema = strictObject({
  /** Declares that the handler does not rely on per-partition record order, which splitting breaks. */
  orderInsensitive: z.boolean().default(false),
  maxRangeSize: positiveInt.optional(),
  minPartitions: positiveInt.optional(),
}).superRefine((split, ctx) => {
  if (split.orderInsensitive) return;
  for (const key of ['maxRangeSize', 'minPartitions'] as const) {
    if (split[key] !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message:
          'splitting a partition into parallel ranges breaks per-partition order: ' +
          'set split.orderInsensitive to true if the handler does not depend on order',
      });
    }
  }
});
export type SplitConfig = z.output<typeof splitSchema>;

const keyAttributeName = z.string().regex(/^[^\s]{1,255}$/, { error: 'must be an attribute name (1-255 characters, no spaces)' });

/** A key attribute of a declared sink table: a name (type S), or `{ name, type }`. */
const keyAttributeSchema = z.union([
  keyAttributeName.transform((name) => ({ name, type: 'S' as const })),
  strictObject({ name: keyAttributeName, type: z.enum(['S', 'N', 'B']).default('S') }),
]);
export type SinkKeyAttribute = z.output<typeof keyAttributeSchema>;

const sinkTableKeySchema = strictObject({ partitionKey: keyAttributeSchema, sortKey: keyAttributeSchema.optional() });
/** Key schema of a declared sink table. */
export type SinkTableKey = z.output<typeof sinkTableKeySchema>;

/**
 * `sinkTable`: a table name (a table that exists: the stack grants the processor access to it), or
 * a declaration `{ name, key }`, which the local runtime and the deployed stack create.
 */
const sinkTableSchema = z.union([tableName, strictObject({ name: tableName, key: sinkTableKeySchema })], {
  error:
    'must be a table name, or { "name": <table>, "key": { "partitionKey": <attribute>, "sortKey"?: <attribute> } } to declare the table',
});

/** A string refused with the message `problem` gives (handler-access.ts), at the string's own path. */
function checkedString(problem: (value: string) => string | undefined) {
  return z.string().superRefine((value, ctx) => {
    const message = problem(value);
    if (message !== undefined) ctx.addIssue({ code: 'custom', message });
  });
}

/**
 * One IAM statement the processor role gets for a handler that writes elsewhere (Allow only): named
 * actions on named resources, so a stream cannot widen the role beyond what it declares.
 */
const handlerIamStatementSchema = strictObject({
  actions: z.array(checkedString(iamActionProblem)).min(1),
  resources: z.array(checkedString(iamResourceProblem)).min(1),
  /** Statement id in the role's policy (default `Stream<Id>Handler<N>`). */
  sid: z.string().regex(IAM_SID_PATTERN, { error: "must be letters and digits only (IAM's rule for a statement id)" }).optional(),
});
export type HandlerIamStatement = z.output<typeof handlerIamStatementSchema>;

const variableName = z.string().regex(VARIABLE_NAME_PATTERN, {
  error: "must be a variable name: a letter or '_', then letters, digits or '_'",
});

/**
 * A function written for Lambda's Kafka trigger, run unchanged: the processor calls its export with
 * the event the trigger would build (docs/configuration.md, "Functions from Lambda's Kafka trigger").
 */
const triggerFunctionSchema = strictObject({
  /** The module's export that is the function (what the trigger's `Handler` setting names after the dot). */
  export: variableName.default('handler'),
  /** The event the trigger builds: Amazon MSK's (`aws:kafka`, with the cluster's ARN) or self-managed Kafka's. */
  eventSource: z.enum(['aws:kafka', 'SelfManagedKafka']).default('SelfManagedKafka'),
  /** MSK: the cluster ARN the event names (`eventSourceArn`). */
  eventSourceArn: z
    .string()
    .regex(/^arn:aws[a-z-]*:kafka:[a-z0-9-]+:\d{12}:cluster\/.+$/, {
      error: 'must be an MSK cluster ARN (arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>)',
    })
    .optional(),
  /** Records per event at most: the trigger's BatchSize (default 100, at most 10,000); events also stay within 6 MB. */
  batchSize: z.number().int().min(1).max(10_000).default(100),
}).superRefine((t, ctx) => {
  if (t.eventSource === 'aws:kafka' && t.eventSourceArn === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['eventSourceArn'],
      message: 'is required with eventSource "aws:kafka" (the MSK event names its cluster)',
    });
  if (t.eventSource === 'SelfManagedKafka' && t.eventSourceArn !== undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['eventSourceArn'],
      message: 'is only part of MSK events; remove it or set eventSource to "aws:kafka"',
    });
});
export type TriggerFunctionConfig = z.output<typeof triggerFunctionSchema>;

const handlerSchema = strictObject({
  /** A built-in handler's name, or the path of a handler file relative to the config file. */
  module: nonEmptyString,
  mode: z.enum(['dynamodb-exactly-once', 'at-least-once']),
  sinkTable: sinkTableSchema.optional(),
  /** Extra statements of the processor role, for what the handler writes besides its sink table. */
  iam: z.array(handlerIamStatementSchema).optional(),
  /** Variables of the processor function (one function serves every stream: a name has one value). */
  environment: z.record(checkedString(environmentNameProblem), z.string()).optional(),
  /** Secrets the handler receives as `ctx.secrets`, by name. */
  secrets: z.record(variableName, secretRefSchema).optional(),
  /** The module is a function written for Lambda's Kafka trigger (at least once). */
  triggerFunction: triggerFunctionSchema.optional(),
})
  .superRefine((handler, ctx) => {
    if (handler.triggerFunction !== undefined && handler.mode !== 'at-least-once') {
      ctx.addIssue({
        code: 'custom',
        path: ['mode'],
        message: 'must be "at-least-once" with triggerFunction (a trigger function makes its own side effects)',
      });
    }
    if (handler.mode === 'dynamodb-exactly-once' && handler.sinkTable === undefined) {
      ctx.addIssue({ code: 'custom', path: ['sinkTable'], message: 'is required with mode "dynamodb-exactly-once"' });
    }
    if (handler.mode === 'at-least-once' && handler.sinkTable !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['sinkTable'],
        message: 'is only used with mode "dynamodb-exactly-once"; remove it or change the mode',
      });
    }
  })
  // Parsed, `sinkTable` is always the name (what the processor writes to); a declaration's key goes to `sinkTableKey`.
  .transform(({ sinkTable, ...rest }): HandlerConfig => {
    if (sinkTable === undefined) return rest;
    if (typeof sinkTable === 'string') return { ...rest, sinkTable };
    return { ...rest, sinkTable: sinkTable.name, sinkTableKey: sinkTable.key };
  });
/** A stream's handler, parsed: `sinkTableKey` is set when the sink table is declared (created by the local runtime and the stack). */
export type HandlerConfig = {
  module: string;
  mode: 'dynamodb-exactly-once' | 'at-least-once';
  sinkTable?: string;
  sinkTableKey?: SinkTableKey;
  iam?: HandlerIamStatement[];
  environment?: Record<string, string>;
  secrets?: Record<string, SecretRef>;
  triggerFunction?: TriggerFunctionConfig;
};

const poisonPolicySchema = z.enum(['dead-letter', 'stop-partition']);
export type PoisonPolicy = z.output<typeof poisonPolicySchema>;

/** Dead letters expire after this many days by default (an SQS dead-letter queue's 14-day maximum). */
const DEFAULT_DEAD_LETTER_RETENTION_DAYS = 14;

const deadLettersSchema = strictObject({
  /** Days a dead letter is kept (DynamoDB TTL deletes it afterwards, usually within a few days). */
  retentionDays: wholeNumber().min(1).max(3650).default(DEFAULT_DEAD_LETTER_RETENTION_DAYS),
  /**
   * `record`: key, value (up to 200 KB) and headers are copied into the ledger. `coordinates`:
   * only topic/partition/offset, timestamp, size and the error, for streams carrying personal data;
   * a re-drive then reads the record from Kafka, while retention still has it.
   */
  keep: z.enum(DEAD_LETTER_CONTENTS).default('record'),
});
export type DeadLettersConfig = z.output<typeof deadLettersSchema>;

/** Kafka's default `message.max.bytes` (1 MiB) less room for the record's key, headers and batch overhead. */
export const DEFAULT_FAILURE_TOPIC_MAX_MESSAGE_BYTES = 1_000_000;

const sqsQueueArn = z.string().regex(/^arn:aws[a-z-]*:sqs:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$/, {
  error: 'must be an SQS queue ARN (arn:aws:sqs:<region>:<12-digit account>:<queue name>)',
});
const snsTopicArn = z.string().regex(/^arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/, {
  error: 'must be an SNS topic ARN (arn:aws:sns:<region>:<12-digit account>:<topic name>)',
});
const bucketName = z
  .string()
  .refine((b) => /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(b) && !b.includes('..') && !/^\d+\.\d+\.\d+\.\d+$/.test(b), {
    error: "must be an S3 bucket name (3-63 characters: lowercase letters, digits, '.' or '-', starting and ending with a letter or digit)",
  });
const objectPrefix = z
  .string()
  .refine((p) => p.length <= 512 && !p.startsWith('/') && ![...p].some((c) => c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127), {
    error: "must be an S3 key prefix (at most 512 characters, no leading '/', no control characters)",
  });

/**
 * Where dead letters are also delivered (Lambda's `DestinationConfig.OnFailure`, any combination):
 * the ledger keeps each dead letter and its pending deliveries until every destination has it.
 */
const onFailureSchema = strictObject({
  sqs: sqsQueueArn.optional(),
  sns: snsTopicArn.optional(),
  s3: strictObject({ bucket: bucketName, prefix: objectPrefix.default('') }).optional(),
  kafka: strictObject({
    topic: topicName,
    /** Largest record value written; a larger failure record carries a reference instead of the record. */
    maxMessageBytes: wholeNumber().min(1024).default(DEFAULT_FAILURE_TOPIC_MAX_MESSAGE_BYTES),
  }).optional(),
}).refine((o) => o.sqs !== undefined || o.sns !== undefined || o.s3 !== undefined || o.kafka !== undefined, {
  error: 'give at least one destination: sqs, sns, s3 or kafka',
});
export type OnFailureConfig = z.output<typeof onFailureSchema>;

/**
 * One record filter (a Lambda FilterCriteria pattern, lib/filters/pattern.ts): checked and compiled
 * here, so a pattern Lambda would refuse fails the config with its path inside the pattern.
 */
const filterPatternSchema = z.record(z.string(), z.unknown()).superRefine((pattern, ctx) => {
  for (const problem of compilePattern(pattern).problems) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
}) as unknown as z.ZodType<FilterPattern, Record<string, unknown>>;
// ---------------------------------------------------------------------------------------------
// Schemas: how a record's value and key are decoded before the handler (docs/configuration.md, "Schemas").

/** What a value or key holds: a registry's Avro, Protobuf or JSON Schema, plain JSON, or bytes as they are. */
export const PAYLOAD_FORMATS = ['avro', 'protobuf', 'json-schema', 'json', 'raw'] as const;
export type PayloadFormat = (typeof PAYLOAD_FORMATS)[number];
/** The formats whose records name their schema in a registry (and so need one). */
export const REGISTRY_FORMATS = ['avro', 'protobuf', 'json-schema'] as const satisfies readonly PayloadFormat[];

const awsRegion = z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, { error: 'must be an AWS region, e.g. "us-east-1"' });

/** An AWS Glue Schema Registry (GetSchemaVersion by the schema version id each record carries). */
const glueRegistrySchema = strictObject({
  registryName: z.string().regex(/^[a-zA-Z0-9-_$#.]{1,255}$/, {
    error: "must be a Glue registry name (1-255 characters: letters, digits, '-', '_', '$', '#' or '.')",
  }),
  region: awsRegion,
});

/** A Confluent-compatible registry over HTTP (GET /schemas/ids/{id}), optionally with basic auth. */
const confluentRegistrySchema = strictObject({
  url: z.string().superRefine((url, ctx) => {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || !['http:', 'https:'].includes(parsed.protocol)) {
      ctx.addIssue({ code: 'custom', message: 'must be an http(s) URL, e.g. "https://schema-registry.example:8081"' });
    } else if (parsed.username || parsed.password) {
      ctx.addIssue({ code: 'custom', message: 'must not hold credentials: use username and password (a secret reference)' });
    }
  }),
  username: nonEmptyString.optional(),
  /** Basic auth password: a secret reference, as for Kafka passwords. */
  password: secretRefSchema.optional(),
}).superRefine((registry, ctx) => {
  if ((registry.username === undefined) !== (registry.password === undefined)) {
    const missing = registry.username === undefined ? 'username' : 'password';
    ctx.addIssue({ code: 'custom', path: [missing], message: `basic auth needs both username and password (${missing} is missing)` });
  }
});

const schemaRegistrySchema = z.union([strictObject({ glue: glueRegistrySchema }), strictObject({ confluent: confluentRegistrySchema })], {
  error: 'must be { "glue": { "registryName", "region" } } or { "confluent": { "url", "username"?, "password"? } }',
});
/** Where a stream's schemas live: `{ glue: {...} }` or `{ confluent: {...} }`. */
export type SchemaRegistryConfig = z.output<typeof schemaRegistrySchema>;

/** How a value or key is decoded: `format`, and for avro / protobuf / json-schema the registry its schema ids point into. */
const payloadDecodingSchema = strictObject({
  format: z.enum(PAYLOAD_FORMATS),
  registry: schemaRegistrySchema.optional(),
}).superRefine((decoding, ctx) => {
  const needsRegistry = (REGISTRY_FORMATS as readonly string[]).includes(decoding.format);
  if (needsRegistry && decoding.registry === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['registry'],
      message: `is required with format "${decoding.format}" (its records name their schema by id)`,
    });
  }
  if (!needsRegistry && decoding.registry !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['registry'],
      message: `is only used with avro, protobuf or json-schema; format "${decoding.format}" takes none`,
    });
  }
});
/** A stream's `value` or `key` decoding. */
export type PayloadDecodingConfig = z.output<typeof payloadDecodingSchema>;

const streamConfigSchema = strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, {
    error: "must be 1-63 characters: lowercase letters, digits, '_' or '-', starting with a letter or digit",
  }),
  kafka: kafkaConnectionSchema,
  topics: z
    .array(
      topicName.refine((name) => !isInternalTopic(name), {
        error: 'internal topics (names starting with "__") cannot be consumed',
      }),
    )
    .min(1)
    .optional(),
  /** JS regex source matched against the whole topic name (anchored: "orders" does not match "orders-eu"). */
  topicPattern: z
    .string()
    .min(1)
    .superRefine((source, ctx) => {
      const error = regexSourceError(source);
      if (error !== undefined) ctx.addIssue({ code: 'custom', message: `is not a valid regular expression: ${error}` });
    })
    .optional(),
  startingOffsets: startingOffsetsSchema.default('earliest'),
  /**
   * Where a topic that appears after the stream's first run (a new topic matching topicPattern, or a
   * listed topic created later) starts; the topics present at the first run start at startingOffsets.
   */
  newTopics: newTopicsSchema.default('earliest'),
  isolationLevel: isolationLevelSchema.default('read_committed'),
  /** Planner schedule period (Spark's batch interval). */
  triggerIntervalMs: wholeNumber().min(1_000).default(60_000),
  /** Continuous mode instead of micro-batches: resident processors commit records as they arrive. */
  continuous: continuousSchema.optional(),
  maxRatePerPartition: z.number().positive().optional(),
  minRatePerPartition: z.number().nonnegative().default(1),
  maxOffsetsPerTrigger: positiveInt.optional(),
  minOffsetsPerTrigger: positiveInt.optional(),
  /** How long a partition under minOffsetsPerTrigger may wait before it is planned anyway. */
  maxTriggerDelayMs: nonNegativeInt.default(900_000),
  backpressure: backpressureSchema.prefault({}),
  processor: processorSchema.prefault({}),
  split: splitSchema.prefault({}),
  failOnDataLoss: z.boolean().default(true),
  /**
   * Where a topic deleted and re-created under its name is read from: its earliest offset (every
   * record of the new topic), or its latest (only records written after the planner noticed).
   */
  recreatedTopicOffsets: z.enum(['earliest', 'latest']).default('earliest'),
  maxAttempts: wholeNumber().min(1).max(100).default(3),
  /**
   * Most open ranges (planned, leased, failed awaiting a retry) the stream has at once, hence most
   * processors running for it (what partitions and provisioned pollers bound for Lambda's Kafka
   * trigger). Unset: no cap of its own; its share of the processor's reserved concurrency applies.
   */
  maxConcurrency: positiveInt.optional(),
  handler: handlerSchema.optional(),
  /**
   * Records older than this (by their Kafka timestamp, when their range was first leased) do not reach
   * the handler: the Kafka trigger's MaximumRecordAgeInSeconds. Unset: no limit.
   */
  maxRecordAgeMs: positiveInt.optional(),
  /** What happens to such a record: a dead letter with cause `expired`, or skipped and counted. */
  expiredRecords: z.enum(['dead-letter', 'skip']).default('dead-letter'),
  /**
   * Record filters (the Kafka trigger's FilterCriteria): a record matching none of these patterns is
   * skipped and counted, its offset committed. At most 5, as Lambda's quota; none: every record.
   */
  filters: z
    .array(filterPatternSchema)
    .max(MAX_FILTERS, { error: `at most ${MAX_FILTERS} patterns (Lambda's FilterCriteria quota)` })
    .optional(),
  /** How record values are decoded before the handler (`decoded.value`); unset or "raw": not at all. */
  value: payloadDecodingSchema.optional(),
  /** How record keys are decoded before the handler (`decoded.key`); unset or "raw": not at all. */
  key: payloadDecodingSchema.optional(),
  poisonPolicy: poisonPolicySchema.default('dead-letter'),
  deadLetters: deadLettersSchema.prefault({}),
  /** Failure destinations every dead letter is delivered to as well (at least once). */
  onFailure: onFailureSchema.optional(),
  /** Kafka consumer group that also receives committed offsets, for standard lag tooling. */
  consumerGroup: consumerGroupId.optional(),
}).superRefine(checkStreamCrossFields, { when: (payload) => isRecord(payload.value) });
export type StreamConfig = z.output<typeof streamConfigSchema>;

/**
 * Rules spanning several fields. They run even when other fields failed (so one pass reports every
 * problem), hence the value is inspected defensively rather than trusted to be the parsed type.
 */
function checkStreamCrossFields(value: unknown, ctx: z.RefinementCtx): void {
  if (!isRecord(value)) return;
  const hasTopics = value.topics !== undefined;
  const hasPattern = value.topicPattern !== undefined;
  if (hasTopics === hasPattern) {
    ctx.addIssue({
      code: 'custom',
      path: ['topics'],
      message: `give exactly one of topics or topicPattern (${hasTopics ? 'both are set' : 'neither is set'})`,
    });
  }

  for (const [min, max] of [
    ['minRatePerPartition', 'maxRatePerPartition'],
    ['minOffsetsPerTrigger', 'maxOffsetsPerTrigger'],
  ] as const) {
    const low = value[min];
    const high = value[max];
    if (fieldFailed(ctx, min) || fieldFailed(ctx, max)) continue;
    if (typeof low === 'number' && typeof high === 'number' && low > high) {
      ctx.addIssue({ code: 'custom', path: [min], message: `must be <= ${max} (${high})` });
    }
  }

  checkStartingOffsetTopics(value, ctx);
  checkFailureTopic(value, ctx);
  checkContinuous(value, ctx);
}

/** What continuous mode cannot combine with: ranges split in parallel (a segment holds its whole partition). */
function checkContinuous(value: Record<string, unknown>, ctx: z.RefinementCtx): void {
  if (!isRecord(value.continuous)) return;
  const split = isRecord(value.split) ? value.split : {};
  if (split.maxRangeSize !== undefined || split.minPartitions !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['split'],
      message: 'a continuous stream reads each partition in one open segment range: it cannot be split into parallel ranges',
    });
  }
  // Both size micro-batches: a segment reads records as they arrive, under rates (maxRatePerPartition, maxOffsetsPerTrigger).
  if (value.minOffsetsPerTrigger !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['minOffsetsPerTrigger'],
      message: 'a continuous stream reads records as they arrive: there is no batch to wait for (remove it or continuous)',
    });
  }
  if (isRecord(value.backpressure) && value.backpressure.enabled === true) {
    ctx.addIssue({
      code: 'custom',
      path: ['backpressure', 'enabled'],
      message:
        'backpressure sizes micro-batches from their processing delay; a continuous stream is limited by ' +
        'maxRatePerPartition and maxOffsetsPerTrigger as rates over time',
    });
  }
  const segmentMs = value.continuous.segmentMs;
  const handoverLeadMs = value.continuous.handoverLeadMs;
  if (typeof segmentMs === 'number' && typeof handoverLeadMs === 'number' && handoverLeadMs * 2 > segmentMs) {
    ctx.addIssue({
      code: 'custom',
      path: ['continuous', 'handoverLeadMs'],
      message: `must be at most half of continuous.segmentMs (${segmentMs})`,
    });
  }
}

/** A failure topic the stream reads would feed its own dead letters back to it (Lambda refuses it too). */
function checkFailureTopic(value: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const target = isRecord(value.onFailure) && isRecord(value.onFailure.kafka) ? value.onFailure.kafka.topic : undefined;
  if (typeof target !== 'string') return;
  const { topics, topicPattern } = value;
  let reads = false;
  if (Array.isArray(topics)) reads = topics.includes(target);
  else if (typeof topicPattern === 'string' && regexSourceError(topicPattern) === undefined) reads = topicMatcher({ topicPattern })(target);
  if (reads) {
    ctx.addIssue({
      code: 'custom',
      path: ['onFailure', 'kafka', 'topic'],
      message:
        `the stream reads this topic (${topicPattern === undefined ? 'in topics' : 'matches topicPattern'}): ` +
        'its dead letters would come back to it',
    });
  }
}

/** Explicit starting offsets for a topic the stream does not read are almost surely a typo. */
function checkStartingOffsetTopics(value: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const starting = value.startingOffsets;
  if (!isRecord(starting) || !isRecord(starting.offsets)) return;
  const { topics, topicPattern } = value;
  let subscribes: (topic: string) => boolean;
  if (Array.isArray(topics) && topics.every((t) => typeof t === 'string') && topicPattern === undefined) {
    subscribes = topicMatcher({ topics });
  } else if (typeof topicPattern === 'string' && topics === undefined && regexSourceError(topicPattern) === undefined) {
    subscribes = topicMatcher({ topicPattern });
  } else {
    return; // the subscription itself is invalid and already reported
  }
  for (const topic of Object.keys(starting.offsets)) {
    if (!subscribes(topic)) {
      ctx.addIssue({
        code: 'custom',
        path: ['startingOffsets', 'offsets', topic],
        message: `the stream does not read this topic (${topicPattern === undefined ? 'not in topics' : 'does not match topicPattern'})`,
      });
    }
  }
}

/** Whether `key` (a direct child of the object being refined) already has a problem reported. */
function fieldFailed(ctx: z.RefinementCtx, key: string): boolean {
  return ctx.issues.some((issue) => issue.path?.[0] === key);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Deployment.

export const deploymentConfigSchema = strictObject({
  /** The JSON Schema an editor checks the file with (`streams.schema.json` of the package); ignored here. */
  $schema: z.string().optional(),
  /** DynamoDB table holding the ledger (can be overridden by the LEDGER_TABLE environment variable). */
  ledgerTable: tableName,
  streams: z.array(streamConfigSchema).min(1, { error: 'must list at least one stream' }),
}).superRefine(
  (value: unknown, ctx) => {
    if (!isRecord(value) || !Array.isArray(value.streams)) return;
    checkDuplicateStreamIds(value.streams, ctx);
    checkHandlerEnvironments(value.streams, ctx);
  },
  { when: (payload) => isRecord(payload.value) },
);

function checkDuplicateStreamIds(streams: unknown[], ctx: z.RefinementCtx): void {
  const firstIndexById = new Map<string, number>();
  streams.forEach((stream, index) => {
    if (!isRecord(stream) || typeof stream.id !== 'string') return;
    const first = firstIndexById.get(stream.id);
    if (first === undefined) {
      firstIndexById.set(stream.id, index);
    } else {
      ctx.addIssue({
        code: 'custom',
        path: ['streams', index, 'id'],
        message: `duplicate stream id ${JSON.stringify(stream.id)} (also streams[${first}].id)`,
      });
    }
  });
}

/**
 * One processor function serves every stream, so a variable has one value for all of them. The
 * values are not quoted: a value is not a secret, but it might be one put in the wrong place.
 */
function checkHandlerEnvironments(streams: unknown[], ctx: z.RefinementCtx): void {
  const firstByName = new Map<string, { index: number; value: string }>();
  streams.forEach((stream, index) => {
    const environment = isRecord(stream) && isRecord(stream.handler) ? stream.handler.environment : undefined;
    if (!isRecord(environment)) return;
    for (const [name, value] of Object.entries(environment)) {
      if (typeof value !== 'string') continue;
      const first = firstByName.get(name);
      if (first === undefined) firstByName.set(name, { index, value });
      else if (first.value !== value) {
        ctx.addIssue({
          code: 'custom',
          path: ['streams', index, 'handler', 'environment', name],
          message:
            `streams[${first.index}].handler.environment sets ${name} to another value, but one ` +
            `processor function serves every stream: give both the same value or use another name`,
        });
      }
    }
  });
}
export type DeploymentConfig = z.output<typeof deploymentConfigSchema> & {
  /** Directory of the file the config was loaded from (handler paths are relative to it); unset for inline JSON. */
  configDir?: string;
};
/** What a config file may contain: optional fields may be omitted and get their defaults. */
export type DeploymentConfigInput = z.input<typeof deploymentConfigSchema>;
export type StreamConfigInput = z.input<typeof streamConfigSchema>;

// ---------------------------------------------------------------------------------------------
// Parsing (the messages are issues.ts's).

/** Validates a deployment config and applies defaults; throws ValidationError listing every problem. */
export function parseDeploymentConfig(input: unknown, source: string): DeploymentConfig {
  return parseWith(deploymentConfigSchema, input, source);
}

/** Validates one stream config and applies defaults (e.g. for tests and ad hoc tools). */
export function parseStreamConfig(input: unknown, source: string): StreamConfig {
  return parseWith(streamConfigSchema, input, source);
}

function parseWith<S extends z.ZodType>(schema: S, input: unknown, source: string): z.output<S> {
  // reportInput keeps each union arm's inputs, which formatIssues uses to pick the arm that was meant.
  const result = schema.safeParse(input, { error: issueMessage, reportInput: true });
  if (result.success) return result.data;
  throw new ValidationError(`invalid config (${source}): ${formatIssues(result.error.issues).join('; ')}`, {
    cause: result.error,
  });
}
