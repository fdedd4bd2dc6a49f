/**
 * The environment-variable tables of the docs list exactly the variables the code reads.
 *
 * What the code reads is found in the syntax of every .ts file under lib/, functions/, bin/,
 * infra/local/ and infra/serverless/ (test/support/env-reads.ts). The rule for which of them are
 * documented: every variable read there is one a user, an operator or the stack sets, and is in the
 * index, configuration.md's "Environment variables" table, except
 * - those the platform sets for the process, read to learn about it (NOT_USER_FACING);
 * - the AWS SDK's own credential and region chain beyond `AWS_REGION` and `AWS_PROFILE`, which the
 *   table names in a row ending with `...` (the SDK reads them; the code only passes them on);
 * and the local stack's own variables (`LOCAL_*`) are also in operations.md's "Local stack" tables,
 * which say what they do. Every variable the tables name is read by the code.
 */
import { envReads } from '../../support/env-reads';
import { codeSpans, markdownTable, markdownTables } from '../../support/markdown-table';

const SCANNED = ['lib', 'functions', 'bin', 'infra/local', 'infra/serverless'];

/** Set by the platform, not by a user: why each is read. */
const NOT_USER_FACING: Record<string, string> = {
  AWS_LAMBDA_FUNCTION_NAME: 'Lambda sets it; MSK IAM names its session after the function, a trigger function gets it in its context',
  AWS_LAMBDA_FUNCTION_VERSION: "Lambda sets it; a trigger function's context carries it",
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "Lambda sets it; a trigger function's context carries it",
  AWS_LAMBDA_LOG_GROUP_NAME: "Lambda sets it; a trigger function's context carries it",
  AWS_LAMBDA_LOG_STREAM_NAME: "Lambda sets it; a trigger function's context carries it",
  JEST_WORKER_ID: 'jest sets it; handler files load differently under jest',
  PATH: "the OS's; the local Lambda's tools are looked up on it",
};

/** The AWS SDK's chain: the table's "`AWS_REGION`, `AWS_PROFILE`, ..." row stands for them. */
const SDK_CHAIN = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_DEFAULT_REGION',
  'AWS_DEFAULT_PROFILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
];

/** Reads whose name is data, not code: the variable a secret reference of the streams config names. */
const DYNAMIC_READS = [/^lib\/kafka\/secrets\.ts:\d+: env\[ref\.env\]$/];

const VARIABLE = /^[A-Z][A-Z0-9_]*$/;

/** The variables a table's first column names (several per row: `A`, `B`). */
const variablesIn = (rows: string[][]): string[] => rows.flatMap((r) => codeSpans(r[0] as string).filter((s) => VARIABLE.test(s)));

const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();

describe('docs: environment variables', () => {
  const reads = envReads(SCANNED);
  const read = new Set(reads.names.keys());
  const index = markdownTable('docs/configuration.md', 'Environment variables', { columns: ['variable', 'used by', 'meaning'] });
  const indexed = variablesIn(index.rows);
  const local = markdownTables('docs/operations.md', 'Local stack')
    .filter((t) => t.columns[0] === 'variable')
    .flatMap((t) => variablesIn(t.rows));

  it('the scan names every read (a read it cannot name is a new form to teach it)', () => {
    expect(reads.unresolved.filter((r) => !DYNAMIC_READS.some((d) => d.test(r)))).toEqual([]);
    // The scan finds the forms it knows: a constant, a template over a union, a reading helper.
    for (const name of ['STREAMS_CONFIG', 'SCHEDULE_PERIOD_MS', 'AWS_ENDPOINT_URL_SQS', 'LOCAL_LOG_FILE_MB', 'LOCAL_REGISTRY_PORT']) {
      expect(read).toContain(name);
    }
  });

  it("configuration.md's table lists every variable the code reads that a user sets", () => {
    const expected = [...read].filter((v) => !(v in NOT_USER_FACING) && !SDK_CHAIN.includes(v));
    expect(expected.filter((v) => !indexed.includes(v)).map((v) => `${v} (read by ${[...(reads.names.get(v) ?? [])].join(', ')})`)).toEqual(
      [],
    );
    // The row that stands for the rest of the SDK's chain.
    expect(index.rows.some((r) => /`AWS_REGION`, `AWS_PROFILE`, \.\.\./.test(r[0] as string))).toBe(true);
  });

  it('every variable the tables list is read by the code', () => {
    expect(sorted([...indexed, ...local].filter((v) => !read.has(v)))).toEqual([]);
  });

  it("operations.md's local stack tables describe every LOCAL_* variable", () => {
    expect(sorted([...read].filter((v) => v.startsWith('LOCAL_')))).toEqual(sorted(local.filter((v) => v.startsWith('LOCAL_'))));
  });

  it('the exceptions are still read (a stale one would hide nothing but mislead)', () => {
    for (const v of [...Object.keys(NOT_USER_FACING), ...SDK_CHAIN]) expect(read).toContain(v);
  });
});
