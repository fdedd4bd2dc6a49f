/**
 * A user handler file outside the repository, named by path in a streams config that is outside it
 * too, packaged with `sls package`: the handler is bundled statically into the functions (no file
 * loaded at run time), the config travels inline in STREAMS_CONFIG, the declared sink table is a
 * stack resource that only the processor may write; a handler that cannot be loaded or built fails
 * packaging naming the stream and the file.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSlsPackage, slsPackage, type Packaged } from './package';
import { readZip } from './zip';

const MARKER = 'click-counts-handler-7f3a';
const HANDLER = `// A user handler: counts clicks per user, exactly once.
export default {
  mode: 'dynamodb-exactly-once' as const,
  handle(records: Array<{ key: Buffer | null }>) {
    const perUser = new Map<string, number>();
    for (const r of records) perUser.set(String(r.key), (perUser.get(String(r.key)) ?? 0) + 1);
    return [...perUser].map(([user, n]) => ({
      update: { key: { userId: user }, expression: 'ADD clicks :n SET tag = :tag', values: { ':n': n, ':tag': '${MARKER}' } },
    }));
  },
};
`;

const dir = mkdtempSync(join(tmpdir(), 'byo-package-'));
const configFile = (name: string, module: string) => {
  const file = join(dir, name);
  writeFileSync(
    file,
    JSON.stringify({
      ledgerTable: 'ignored-on-aws',
      streams: [
        {
          id: 'clicks',
          kafka: { brokers: ['kafka-1.example.com:9093'] },
          topics: ['clicks'],
          processor: { timeoutMs: 300_000 },
          handler: {
            module,
            mode: 'dynamodb-exactly-once',
            sinkTable: { name: 'kafka-lambda-direct-byo-click-counts', key: { partitionKey: 'userId' } },
          },
        },
      ],
    }),
  );
  return file;
};

let packaged: Packaged;
beforeAll(() => {
  mkdirSync(join(dir, 'handlers'));
  writeFileSync(join(dir, 'handlers', 'click-counts.ts'), HANDLER);
  packaged = slsPackage('byo', 'us-east-1', { streamsConfig: configFile('streams.json', './handlers/click-counts.ts') });
}, 240_000);
afterAll(() => {
  if (packaged) rmSync(packaged.dir, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

describe('a user handler outside the repository', () => {
  it('is bundled into the processor, and the config goes inline (the functions read no file of it)', () => {
    const entries = readZip(join(packaged.dir, 'processor.zip'));
    // Besides the CRC-32C binding, where this machine has the one for arm64 (test/deploy/package.test.ts).
    const files = entries.map((e) => e.name).filter((name) => !name.endsWith('.node'));
    expect(files.sort()).toEqual(['functions/processor.bundle.js', 'functions/processor.bundle.js.map', 'functions/processor.js']);
    const code = entries
      .find((e) => e.name === 'functions/processor.bundle.js')!
      .data()
      .toString('utf8');
    expect(code).toContain(MARKER);
    const fn = packaged.template.Resources.ProcessorLambdaFunction!.Properties as { Environment: { Variables: Record<string, unknown> } };
    const inline = JSON.parse(String(fn.Environment.Variables.STREAMS_CONFIG)) as { streams: Array<{ handler: { module: string } }> };
    expect(inline.streams[0]!.handler.module).toBe('./handlers/click-counts.ts');
  });

  it('gets its declared sink table, writable by the processor only', () => {
    const table = packaged.template.Resources.ClickCountsTable!;
    expect(table.Properties).toMatchObject({
      TableName: 'kafka-lambda-direct-byo-click-counts',
      KeySchema: [{ AttributeName: 'userId', KeyType: 'HASH' }],
    });
    const sinkStatements = (role: string) =>
      (
        packaged.template.Resources[role]!.Properties as {
          Policies: Array<{ PolicyDocument: { Statement: Array<{ Sid: string; Resource: unknown }> } }>;
        }
      ).Policies[0]!.PolicyDocument.Statement.filter((s) => s.Sid === 'SinkTables');
    expect(sinkStatements('ProcessorRole').map((s) => s.Resource)).toEqual([[{ 'Fn::GetAtt': ['ClickCountsTable', 'Arn'] }]]);
    expect(sinkStatements('PlannerRole')).toEqual([]);
  });

  it.each([
    [
      'a missing file',
      'missing.json',
      './handlers/nope.ts',
      undefined,
      `stream clicks: handler.module "./handlers/nope.ts" (${join(dir, 'handlers', 'nope.ts')}): no such file`,
    ],
    [
      'a syntax error',
      'broken.json',
      './handlers/broken.ts',
      `export default { mode: 'dynamodb-exactly-once', handle( {\n`,
      `stream clicks: handler.module "./handlers/broken.ts" (${join(dir, 'handlers', 'broken.ts')}): cannot be built`,
    ],
    [
      'no handler export',
      'none.json',
      './handlers/none.ts',
      `export const other = 1;\n`,
      `stream clicks: handler.module "./handlers/none.ts" (${join(dir, 'handlers', 'none.ts')}): no handler export`,
    ],
  ])('fails packaging on %s, naming the stream and the file', (_what, config, module, source, message) => {
    if (source !== undefined) writeFileSync(join(dir, module), source);
    const run = runSlsPackage('byo', 'us-east-1', { streamsConfig: configFile(config, module) });
    try {
      expect(run.status).toBe(1);
      expect(`${run.stdout}${run.stderr}`).toContain(`Error: the streams config does not fit stage byo: ${message}`);
    } finally {
      rmSync(run.dir, { recursive: true, force: true });
    }
  });

  it('on the local stage keeps the ledger table of the config file (the one npm start and the CLI use)', () => {
    const file = join(dir, 'local.json');
    const config = JSON.parse(readFileSync(configFile('local-base.json', './handlers/click-counts.ts'), 'utf8')) as { ledgerTable: string };
    writeFileSync(file, JSON.stringify({ ...config, ledgerTable: 'my-own-ledger' }));
    const local = slsPackage('local', 'us-east-1', { streamsConfig: file });
    try {
      const fn = local.template.Resources.ProcessorLambdaFunction!.Properties as { Environment: { Variables: Record<string, unknown> } };
      expect(fn.Environment.Variables.LEDGER_TABLE).toBe('my-own-ledger');
      expect(fn.Environment.Variables.STREAMS_CONFIG).toBe(file);
    } finally {
      rmSync(local.dir, { recursive: true, force: true });
    }
  });
});
