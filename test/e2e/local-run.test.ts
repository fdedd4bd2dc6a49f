/**
 * End to end on the local stack: the bounded main job (`npm start -- --until-caught-up`) with a
 * partition added while events are produced finishes with every produced event applied exactly
 * once in the sink table, account by account; then deletes its topic and sink table, or with
 * `--keep` leaves them.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DescribeTableCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { DEMO_DEFAULTS, runDemo } from '../../lib/local/demo';
import { removeResources } from '../../lib/local/tool-cleanup';
import { testDynamo, testKafka } from '../support/env';

const ddb = testDynamo();
const admin = testKafka('local-run-test').admin();
beforeAll(() => admin.connect());
afterAll(async () => {
  await admin.disconnect();
  ddb.destroy();
});

/** Whether the topic and the table exist now. */
async function exist(topic: string, table: string): Promise<{ topic: boolean; table: boolean }> {
  const tableExists = await ddb.send(new DescribeTableCommand({ TableName: table })).then(
    () => true,
    (err: unknown) => {
      if (err instanceof ResourceNotFoundException) return false;
      throw err;
    },
  );
  return { topic: (await admin.listTopics()).includes(topic), table: tableExists };
}

describe('local runtime, bounded run', () => {
  it('applies every produced event exactly once, including those of a partition added mid-run', async () => {
    const out: string[] = [];
    const res = await runDemo(
      {
        untilCaughtUp: true,
        json: true,
        ratePerSec: 200,
        durationMs: 10_000,
        partitions: 3,
        addPartitionAfterMs: 4_000,
        accounts: 40,
        timeoutMs: 45_000,
        progress: 'off',
        triggerIntervalMs: 1000,
        ledgerTable: DEMO_DEFAULTS.ledgerTable,
        maxConcurrency: DEMO_DEFAULTS.maxConcurrency,
        configFile: null,
      },
      {
        kafkaBrokers: process.env.KAFKA_BROKERS!,
        dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT!,
        env: process.env,
        out: (s) => out.push(s),
        err: () => undefined,
      },
    );
    const s = res.summary;
    expect(res.exitCode).toBe(0);
    expect(s).toMatchObject({ caughtUp: true, exact: true, consistent: true, partitions: 4, deadLetters: 0, processorErrors: 0 });
    expect(s.produced).toBeGreaterThan(1500);
    expect(s.applied).toBe(s.produced);
    expect(s.kafkaRecords).toBe(s.produced);
    // Per account: the same number of payments and the same total, in cents.
    expect(res.sink).toEqual(res.expected);
    expect(Object.keys(res.sink).length).toBe(40);
    // The added partition was discovered, registered at its earliest offset and fully processed.
    const ledger = createDynamoLedger({ client: ddb, tableName: DEMO_DEFAULTS.ledgerTable });
    const parts = (await ledger.readPartitions(s.stream)).sort((a, b) => a.partition - b.partition);
    expect(parts.map((p) => p.partition)).toEqual([0, 1, 2, 3]);
    expect(parts[3]).toMatchObject({ startOffset: 0, status: 'active' });
    expect(parts[3]!.committed).toBeGreaterThan(0);
    expect(parts.reduce((sum, p) => sum + p.committed, 0)).toBe(s.produced);
    expect(await ledger.readOpenRanges(s.stream)).toEqual([]);
    // The run's topic and sink table are gone when it returns; its ledger items stay (read above).
    expect(s.cleanup).toBe('deleted');
    expect(s.topic).toMatch(/^demo-payments-[0-9a-z]{8}-[0-9a-f]{4}$/);
    expect(await exist(s.topic, s.sinkTable)).toEqual({ topic: false, table: false });
    // The last line of output is the JSON summary.
    expect(JSON.parse(out.join('').trim().split('\n').at(-1)!)).toMatchObject({
      produced: s.produced,
      applied: s.applied,
      wallMs: s.wallMs,
      invocations: s.invocations,
    });
  }, 90_000);

  it('`npm start -- --until-caught-up --json --keep` exits 0 with the JSON summary as its last line, leaving topic and sink', async () => {
    const root = resolve(__dirname, '..', '..');
    const demoConfig = join(mkdtempSync(join(tmpdir(), 'demo-')), 'streams.json');
    const args = [
      'bin/start.ts',
      '--until-caught-up',
      '--json',
      '--duration',
      '4',
      '--rate',
      '150',
      '--add-partition-after',
      '2',
      '--demo-config',
      demoConfig,
      '--keep',
    ];
    const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), args, {
      cwd: root,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    if (code !== 0) throw new Error(`exit ${code}\n${stderr}`);
    const last = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(Object.keys(last).slice(0, 4)).toEqual(['produced', 'applied', 'wallMs', 'invocations']);
    expect(last).toMatchObject({ exact: true, partitions: 4 });
    expect(last.applied).toBe(last.produced);
    expect(last.produced).toBeGreaterThan(400);
    // The demo config the CLI uses names the run's stream.
    expect(JSON.parse(readFileSync(demoConfig, 'utf8')).streams[0].id).toBe(last.stream);
    // --keep: the topic and the sink table are still there, as the summary says.
    expect(last.cleanup).toBe('kept');
    expect(await exist(last.topic, last.sinkTable)).toEqual({ topic: true, table: true });
    const removal = await removeResources({ topics: [last.topic], tables: [last.sinkTable], groups: [] }, { admin, dynamo: ddb });
    expect(removal.errors).toEqual([]);
  }, 90_000);
});
