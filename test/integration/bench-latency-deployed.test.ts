/**
 * `bench:latency -- --deployed`, small, run as a user runs it (its own process, KAFKA_BROKERS and
 * DYNAMODB_ENDPOINT naming the test stack): the real planner handler on a shortened schedule hands
 * the loop over three times under load, both handlers' records are all seen committed, the
 * exactly-once sink is exact, the last line of stdout is the result object, and nothing the run
 * created is left on the stack.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { paginateListTables } from '@aws-sdk/client-dynamodb';
import { testDynamo, testKafka } from '../support/env';

jest.setTimeout(240_000);

const root = resolve(__dirname, '..', '..');
const admin = testKafka('bench-latency-deployed-test').admin();
const dynamo = testDynamo();

beforeAll(() => admin.connect());
afterAll(async () => {
  await admin.disconnect();
  dynamo.destroy();
});

type Ran = { code: number | null; stdout: string; stderr: string };

/** The benchmark's script in a child process (Node with tsx's loader, as bench-cleanup.test.ts runs bench:planner). */
function runBench(args: string[]): Promise<Ran> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/latency.ts', ...args], {
    cwd: root,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 220_000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((r) => child.on('close', (code) => r({ code, stdout, stderr })));
}

/** This benchmark's topics and tables on the stack now. */
async function leftovers(): Promise<{ topics: string[]; tables: string[] }> {
  const mine = (names: string[]) => names.filter((n) => n.startsWith('bench-latency-deployed-')).sort();
  const tables: string[] = [];
  for await (const page of paginateListTables({ client: dynamo }, {})) tables.push(...(page.TableNames ?? []));
  return { topics: mine(await admin.listTopics()), tables: mine(tables) };
}

const number = expect.any(Number);
const ledgerAndLogs = { ledgerWriteUnitsPerRange: number, processorInvocationsPerTick: number, logBytesPerInvocation: number };

it('drives the planner handler over three hand-overs; the result line has the fixed shape and the sink is exact', async () => {
  const before = await leftovers();
  const run = await runBench(
    ['--deployed', '--rate', '300', '--partitions', '2', '--accounts', '30', '--schedule-period-ms', '4000'].concat([
      '--planner-timeout-ms',
      '8000',
      '--invocations',
      '4',
      '--runs',
      '1',
    ]),
  );
  if (run.code !== 0) throw new Error(`exit ${run.code}\n${run.stderr}`);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  expect(result).toEqual({
    triggerIntervalMs: 1000,
    schedulePeriodMs: 4000,
    handovers: number,
    maxTickGapMs: number,
    noop: { p50Ms: number, p99Ms: number, maxMs: number, ...ledgerAndLogs },
    exactlyOnce: { p50Ms: number, p99Ms: number, maxMs: number, exact: true, ...ledgerAndLogs },
  });
  // Each phase's ranges cost ledger writes and ran in processor invocations.
  for (const phase of ['noop', 'exactlyOnce'] as const) {
    const p = result[phase] as Record<string, number>;
    expect(p.ledgerWriteUnitsPerRange).toBeGreaterThan(0);
    expect(p.processorInvocationsPerTick).toBeGreaterThan(0);
  }
  expect(result.handovers).toBeGreaterThanOrEqual(3);
  // Ticks went on across the hand-overs: no gap near a schedule period.
  expect(result.maxTickGapMs).toBeGreaterThanOrEqual(900);
  expect(result.maxTickGapMs).toBeLessThan(4000);
  // Every record produced (300/s for 3 periods of 4 s) was seen committed, in both phases.
  const details = run.stderr.split('\n').filter((l) => l.startsWith('[bench:latency] detail '));
  expect(details).toHaveLength(2);
  for (const line of details) {
    const d = JSON.parse(line.replace(/^\[bench:latency\] detail [a-z-]+ /, '')) as { records: number; observed: number; ticks: number };
    expect(d.records).toBe(3600);
    expect(d.observed).toBe(3600);
    expect(d.ticks).toBeGreaterThanOrEqual(10);
  }
  expect(run.stderr).toMatch(/\[bench:latency\] deleted 2 topics .* and 3 tables /);
  expect(await leftovers()).toEqual(before);
});
