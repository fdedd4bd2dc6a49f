/**
 * `bench:keys`, run as a user runs it (its own process, on the test stack): with 1,000 busy
 * partitions in one stream, no DynamoDB partition key of the ledger receives more than DynamoDB's
 * 1,000 write units a second, neither while the partitions register nor at a 1 s trigger (the
 * writes of each tick, planner and processors, counted from the requests by key), the load spreads
 * over several keys, and every record was processed.
 *
 * On a private stack of its own (the benchmark starts one when KAFKA_BROKERS and DYNAMODB_ENDPOINT
 * are unset): its thousand partitions and its thousands of ledger requests on the shared broker and
 * the one-request-at-a-time emulator held the other files' requests back for tens of seconds.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

jest.setTimeout(300_000);

const root = resolve(__dirname, '..', '..');

/** The benchmark's script in a child process, its last stdout line parsed. */
function runBench(args: string[]): Promise<{ code: number | null; result: Record<string, unknown>; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/keys.ts', ...args], {
    cwd: root,
    env: { ...process.env, KAFKA_BROKERS: '', DYNAMODB_ENDPOINT: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 280_000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((r) =>
    child.on('close', (code) => {
      const last = stdout.trim().split('\n').at(-1) ?? '{}';
      r({ code, result: JSON.parse(last.startsWith('{') ? last : '{}') as Record<string, unknown>, stderr });
    }),
  );
}

it('keeps every ledger key under 1,000 write units a second with 1,000 busy partitions', async () => {
  const run = await runBench(['--topics', '10', '--partitions', '100', '--ticks', '2']);
  expect({ code: run.code, stderr: run.code === 0 ? '' : run.stderr }).toEqual({ code: 0, stderr: '' });
  const r = run.result as {
    partitions: number;
    keys: number;
    maxWriteUnitsPerKeyPerTick: number;
    writeUnitsPerKeyPerTick: Record<string, number>;
    registration: { partitions: number; maxWriteUnitsPerKeyPerSec: number };
    rangesPlannedPerTick: number;
    partitionsCaughtUp: number;
  };
  expect(r.partitions).toBe(1000);
  expect(r.registration.partitions).toBe(1000);
  // Every partition busy in every tick: a range each, all processed.
  expect(r.rangesPlannedPerTick).toBe(1000);
  expect(r.partitionsCaughtUp).toBe(1000);
  // The counts are real: a tick of 1,000 ranges writes hundreds of units, over several keys.
  expect(Object.values(r.writeUnitsPerKeyPerTick).reduce((s, n) => s + n, 0)).toBeGreaterThan(300);
  expect(r.keys).toBeGreaterThanOrEqual(5);
  expect(r.maxWriteUnitsPerKeyPerTick).toBeLessThanOrEqual(1000);
  expect(r.registration.maxWriteUnitsPerKeyPerSec).toBeLessThanOrEqual(1000);
});
