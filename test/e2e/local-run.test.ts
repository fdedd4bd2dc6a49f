/**
 * End to end on the local stack: the bounded main job (`npm start -- --until-caught-up`) with a
 * partition added while events are produced finishes with every produced event applied exactly
 * once in the sink table, account by account.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { DEMO_DEFAULTS, runDemo } from '../../lib/local/demo';
import { testDynamo } from '../support/env';

const ddb = testDynamo();
afterAll(() => ddb.destroy());

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
    // The last line of output is the JSON summary.
    expect(JSON.parse(out.join('').trim().split('\n').at(-1)!)).toMatchObject({
      produced: s.produced,
      applied: s.applied,
      wallMs: s.wallMs,
      invocations: s.invocations,
    });
  }, 90_000);

  it('`npm start -- --until-caught-up --json` exits 0 with the JSON summary as its last line', async () => {
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
  }, 90_000);
});
