/**
 * A benchmark on a shared stack removes what it created: `bench:planner`, small, run as a user runs
 * it (its own process, KAFKA_BROKERS and DYNAMODB_ENDPOINT naming the test stack), leaves none of its
 * topics and not its ledger table behind when it ends, nor when SIGTERM cuts it short (exit 130);
 * with --keep it leaves them and names them, and the clean-up helper then removes them.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { paginateListTables } from '@aws-sdk/client-dynamodb';
import { removeResources } from '../../lib/local/tool-cleanup';
import { testDynamo, testKafka } from '../support/env';

jest.setTimeout(180_000);

const root = resolve(__dirname, '..', '..');
const admin = testKafka('bench-cleanup-test').admin();
const dynamo = testDynamo();

beforeAll(() => admin.connect());
afterAll(async () => {
  await admin.disconnect();
  dynamo.destroy();
});

type Ran = { code: number | null; stdout: string; stderr: string };

/**
 * `npm run bench:planner -- <args>`'s script in a child process; resolves `started` once stderr
 * matches `startedWhen`. Node runs it with tsx's loader rather than through the tsx command, so a
 * signal sent to the child reaches the benchmark itself (the command relays it, on a timer).
 */
function spawnPlanner(
  args: string[],
  startedWhen = /$^/,
): { kill(signal: NodeJS.Signals): void; started: Promise<void>; done: Promise<Ran> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/planner.ts', ...args], {
    cwd: root,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 150_000,
  });
  let stdout = '';
  let stderr = '';
  let started = (): void => undefined;
  const startedPromise = new Promise<void>((r) => (started = r));
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (startedWhen.test(stderr)) started();
  });
  const done = new Promise<Ran>((r) => child.on('close', (code) => r({ code, stdout, stderr })));
  return { kill: (signal) => child.kill(signal), started: startedPromise, done };
}

/** The planner benchmark's topics and tables on the stack now (no other test makes such names). */
async function plannerLeftovers(): Promise<{ topics: string[]; tables: string[] }> {
  const mine = (names: string[]) => names.filter((n) => n.startsWith('bench-planner-')).sort();
  const tables: string[] = [];
  for await (const page of paginateListTables({ client: dynamo }, {})) tables.push(...(page.TableNames ?? []));
  return { topics: mine(await admin.listTopics()), tables: mine(tables) };
}

const lines = (text: string) => text.trim().split('\n');

describe('bench:planner on a shared stack', () => {
  it('deletes its topics and its ledger table when it ends, in one stderr line; the JSON result stays the last line', async () => {
    const before = await plannerLeftovers();
    const run = await spawnPlanner(['--topics', '3', '--partitions', '2']).done;
    if (run.code !== 0) throw new Error(`exit ${run.code}\n${run.stderr}`);
    expect(JSON.parse(lines(run.stdout).at(-1)!)).toMatchObject({ partitions: 6 });
    expect(run.stderr).toContain('[bench:planner] created 3 topics x 2 partitions = 6');
    const deleted = lines(run.stderr).filter((l) => l.startsWith('[bench:planner] deleted '));
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toMatch(
      /^\[bench:planner\] deleted 3 topics \((bench-planner-[0-9a-z]{8}-[0-9a-f]{4})-0000, \1-0001, \1-0002\) and 1 table \(bench-planner-ledger-[0-9a-z]{8}-[0-9a-f]{4}\) in \d+\.\d s$/,
    );
    // The benchmark waited until the broker no longer listed them: they are gone now, not later.
    expect(await plannerLeftovers()).toEqual(before);
  });

  it('keeps them with --keep and names them; the clean-up helper then deletes them and waits until they are gone', async () => {
    const before = await plannerLeftovers();
    const run = await spawnPlanner(['--topics', '2', '--partitions', '1', '--keep']).done;
    if (run.code !== 0) throw new Error(`exit ${run.code}\n${run.stderr}`);
    const after = await plannerLeftovers();
    const kept = {
      topics: after.topics.filter((t) => !before.topics.includes(t)),
      tables: after.tables.filter((t) => !before.tables.includes(t)),
    };
    expect(kept.topics).toHaveLength(2);
    expect(kept.tables).toHaveLength(1);
    expect(run.stderr).toContain(`[bench:planner] kept (--keep): 2 topics (${kept.topics.join(', ')}) and 1 table (${kept.tables[0]})\n`);

    const removal = await removeResources({ ...kept, groups: [] }, { admin, dynamo });
    expect({ topics: [...removal.topics].sort(), tables: removal.tables, errors: removal.errors }).toEqual({ ...kept, errors: [] });
    expect(await plannerLeftovers()).toEqual(before);
  });

  it('cleans up when SIGTERM cuts it short, then exits 130', async () => {
    const before = await plannerLeftovers();
    const run = spawnPlanner(['--topics', '30', '--partitions', '10'], /created 30 topics/);
    await run.started;
    run.kill('SIGTERM');
    const ran = await run.done;
    expect(ran.code).toBe(130);
    expect(ran.stderr).toContain('[bench:planner] SIGTERM: cleaning up before exiting (again to exit at once)\n');
    expect(ran.stderr).toMatch(/^\[bench:planner\] deleted 30 topics \(.*\) in \d+\.\d s$/m);
    // No result: the run did not finish. No failure either: the interruption is not one.
    expect(ran.stdout).toBe('');
    expect(ran.stderr).not.toContain('failed:');
    expect(await plannerLeftovers()).toEqual(before);
  });
});
