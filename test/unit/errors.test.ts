/** The error catalogue: every error class is an AppError leaf named `...Error` that keeps its cause. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { PlannerRunFailedError } from '../../functions/planner';
import { DeployConfigError } from '../../infra/cfn/settings';
import {
  AppError,
  ConfigurationError,
  ConflictError,
  CredentialsError,
  DeliveryError,
  KafkaError,
  MissingResourceError,
  PreconditionError,
  PrerequisiteError,
  SchemaRegistryError,
  SecretUnavailableError,
  StoreError,
  ThrottledError,
  TimeoutError,
  UndecodableError,
  ValidationError,
} from '../../lib/errors';
import { FencedOutError } from '../../lib/planner/run';
import { HelpRequestedError } from '../../lib/cli/args';
import { PartitionUnavailableError } from '../../lib/ports/kafka-metadata';
import { CommitTooLargeError, type LedgerLimits } from '../../lib/ports/commit-limits';
import { SinkConditionError } from '../../lib/ports/sink-write';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../../lib/ports/range-reader';
import { LeaseLostError, PoisonStopError } from '../../lib/processor/committer';
import { PartialBatchError } from '../../lib/processor/handler-api';
import { LedgerLayoutError } from '../../lib/ledger/locations.dynamodb';
import { FoldWriteError, NondeterministicFoldError } from '../../lib/processor/fold-committer';

const ROOT = resolve(__dirname, '../..');
const cause = new Error('the SDK said no');
const where = { topic: 't', partition: 0 };

/** One instance of each error class, built with `cause`. */
const BUILT: Array<[name: string, code: string, build: (c: unknown) => AppError]> = [
  ['ValidationError', 'VALIDATION', (c) => new ValidationError('m', { cause: c })],
  ['PrerequisiteError', 'PREREQUISITE', (c) => new PrerequisiteError('m', { cause: c })],
  ['TimeoutError', 'TIMEOUT', (c) => new TimeoutError('m', { cause: c })],
  ['ThrottledError', 'THROTTLED', (c) => new ThrottledError('m', { cause: c })],
  ['MissingResourceError', 'MISSING_RESOURCE', (c) => new MissingResourceError('m', { cause: c })],
  ['ConflictError', 'CONFLICT', (c) => new ConflictError('m', { cause: c })],
  ['StoreError', 'STORE', (c) => new StoreError('m', { cause: c })],
  ['PreconditionError', 'PRECONDITION', (c) => new PreconditionError('m', { cause: c })],
  ['ConfigurationError', 'CONFIGURATION', (c) => new ConfigurationError('m', { cause: c })],
  ['CredentialsError', 'CREDENTIALS', (c) => new CredentialsError('m', { cause: c })],
  ['DeliveryError', 'DELIVERY', (c) => new DeliveryError('m', { cause: c })],
  ['SecretUnavailableError', 'SECRET_UNAVAILABLE', (c) => new SecretUnavailableError('m', { cause: c })],
  ['SchemaRegistryError', 'SCHEMA_REGISTRY', (c) => new SchemaRegistryError('m', { cause: c })],
  ['UndecodableError', 'UNDECODABLE', (c) => new UndecodableError('m', { cause: c })],
  ['KafkaError', 'KAFKA', (c) => new KafkaError('m', { cause: c })],
  ['OffsetOutOfRangeError', 'KAFKA', (c) => new OffsetOutOfRangeError('m', { ...where, fetchOffset: 3, cause: c })],
  ['PartitionNotFoundError', 'KAFKA', (c) => new PartitionNotFoundError('m', { ...where, cause: c })],
  ['PartitionUnavailableError', 'KAFKA', (c) => new PartitionUnavailableError('m', { ...where, code: 'NO_LEADER', cause: c })],
  ['SinkConditionError', 'SINK_CONDITION', (c) => new SinkConditionError('m', { cause: c })],
  ['LeaseLostError', 'LEASE_LOST', (c) => new LeaseLostError({ cause: c })],
  ['LedgerLayoutError', 'LEDGER_LAYOUT', (c) => new LedgerLayoutError('s', { cause: c })],
  ['PoisonStopError', 'POISON_STOP', (c) => new PoisonStopError('m', { cause: c })],
  ['PartialBatchError', 'PARTIAL_BATCH', (c) => new PartialBatchError(2, 'm', { cause: c })],
  ['NondeterministicFoldError', 'FOLD_NOT_DETERMINISTIC', (c) => new NondeterministicFoldError('k', 0, 1, c)],
  ['FoldWriteError', 'FOLD_WRITE', (c) => new FoldWriteError('m', { cause: c })],
  ['FencedOutError', 'FENCED_OUT', (c) => new FencedOutError('s', 2, { cause: c })],
  ['PlannerRunFailedError', 'PLANNER_FAILED', (c) => new PlannerRunFailedError('m', { cause: c })],
  ['DeployConfigError', 'DEPLOY_CONFIG', (c) => new DeployConfigError('m', { cause: c })],
];

const limits: LedgerLimits = {
  maxSinkWrites: 100,
  maxSinkBytes: 4_000_000,
  maxMarkedWrites: 100,
  deadLetter: { maxValueBytes: 1000, maxKeyBytes: 100, maxHeaderBytes: 100, maxErrorChars: 100 },
};

/** Error classes that are a check of our own, with no error underneath to keep. */
const CAUSELESS: Array<[name: string, code: string, build: () => AppError]> = [
  ['CommitTooLargeError', 'COMMIT_TOO_LARGE', () => new CommitTooLargeError(101, limits)],
  ['HelpRequestedError', 'HELP_REQUESTED', () => new HelpRequestedError('Usage: x')],
];

/** `class X extends Y` declarations of error classes in the project's own code. */
function declaredErrorClasses(): Array<{ file: string; name: string; base: string }> {
  const found: Array<{ file: string; name: string; base: string }> = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|js)$/.test(entry.name)) {
        for (const m of readFileSync(path, 'utf8').matchAll(/\bclass\s+(\w+)\s+extends\s+(\w*Error)\b/g)) {
          found.push({ file: relative(ROOT, path), name: m[1]!, base: m[2]! });
        }
      }
    }
  };
  for (const dir of ['lib', 'functions', 'bin', 'infra']) walk(join(ROOT, dir));
  return found;
}

describe('error catalogue', () => {
  it.each(BUILT)('%s is an AppError with its name and code, and keeps its cause', (name, code, build) => {
    const err = build(cause);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe(name);
    expect(err.code).toBe(code);
    expect(err.cause).toBe(cause);
  });

  it.each(CAUSELESS)('%s is an AppError with its name and code', (name, code, build) => {
    const err = build();
    expect(err).toBeInstanceOf(AppError);
    expect(err.name).toBe(name);
    expect(err.code).toBe(code);
  });

  it('covers every error class the code declares, each named ...Error and extending AppError or a leaf of it', () => {
    const declared = declaredErrorClasses();
    const leaves = declared.filter((c) => c.name !== 'AppError');
    expect(leaves.map((c) => c.name).sort()).toEqual([...BUILT, ...CAUSELESS].map(([name]) => name).sort());
    for (const c of leaves) {
      expect({ ...c, named: c.name.endsWith('Error') }).toEqual({ ...c, named: true });
      expect({ ...c, bare: c.base === 'Error' }).toEqual({ ...c, bare: false });
    }
  });

  it('keeps the Kafka details of the errors the range-reader port names', () => {
    const gone = new OffsetOutOfRangeError('gone', { ...where, fetchOffset: 5, logStartOffset: 9 });
    expect(gone).toBeInstanceOf(KafkaError);
    expect(gone).toMatchObject({ type: 'OFFSET_OUT_OF_RANGE', retriable: false, fetchOffset: 5, logStartOffset: 9, ...where });
    expect(new PartitionNotFoundError('gone', where)).toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION', retriable: false, ...where });
    expect(new PartitionUnavailableError('moving', { ...where, code: 'NO_LEADER' })).toMatchObject({ type: 'NO_LEADER', retriable: true });
  });

  it('words the stop signals as the ledger and logs record them', () => {
    expect(new FencedOutError('payments', 7).message).toBe(
      'planner epoch 7 of stream payments was fenced out by a newer run; it stopped without further writes',
    );
    expect(new LeaseLostError().message).toBe('another processor took the lease; stopped without further writes');
  });

  it('prints a DeployConfigError as its one line (what serverless shows)', () => {
    expect(new DeployConfigError('param x must be true or false').stack).toBe('DeployConfigError: param x must be true or false');
  });
});
