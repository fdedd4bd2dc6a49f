/**
 * `local:up` / `local:down` / `local:prune` as a user runs them, each a process of its own on a
 * persistent stack in a home of its own (KAFKA_DIRECT_HOME under .local/, its jar and virtualenv
 * cache shared): parallel starts make one stack, `down` returns with every port free, a busy stack
 * is waited for and reused, a start from thousands of partitions comes back with every partition
 * led and says so, prune deletes only what the tools left, and the services' logs rotate by size.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { DescribeTableCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel } from 'kafkajs';
import { emulatorClient } from '../../infra/local/dynamodb';
import { commandLine } from '../../infra/local/ownership';
import { isAlive, portInUse, waitUntil } from '../../infra/local/process';
import { CACHE_DIR, LOCAL_DIR } from '../../infra/local/stack/dirs';
import type { StackState } from '../../infra/local/stack/state';
import { createSinkTable } from '../../lib/sink/table.dynamodb';
import { toolResourceName } from '../../lib/local/tool-names';
import { PACKAGE_ROOT } from '../../lib/paths';

jest.setTimeout(600_000);

const home = join(LOCAL_DIR, 'test-homes', `lifecycle-${process.pid}`);
const stackDir = join(home, 'stack');
const stateFile = join(stackDir, 'state.json');

type Ran = { code: number | null; stdout: string; stderr: string };

/** `tsx infra/local/cli.ts <args>` in the test home; `onStderr` sees each chunk as it comes. */
function local(args: string[], env: NodeJS.ProcessEnv = {}, onStderr?: (text: string) => void): Promise<Ran> {
  // Never the test run's own stack or ports.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(LOCAL_|KAFKA_BROKERS|DYNAMODB_ENDPOINT)/.test(k)));
  const child = spawn(join(PACKAGE_ROOT, 'node_modules', '.bin', 'tsx'), ['infra/local/cli.ts', ...args], {
    cwd: PACKAGE_ROOT,
    env: { ...base, KAFKA_DIRECT_HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => void (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    onStderr?.(stderr);
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

const state = (): StackState => JSON.parse(readFileSync(stateFile, 'utf8')) as StackState;

/** Live processes whose command line names this test's home: its brokers and emulators. */
function servicesRunning(): { kafka: number; dynamodb: number } {
  const own = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((pid) => commandLine(Number(pid)) ?? '')
    .filter((cmd) => cmd.includes(home) || cmd.includes(stackDir));
  return {
    kafka: own.filter((c) => c.includes('kafka.Kafka')).length,
    dynamodb: own.filter((c) => c.includes('moto_server.py')).length,
  };
}

function admin(s: StackState) {
  return new Kafka({
    clientId: 'lifecycle-test',
    brokers: s.kafkaBrokers.split(','),
    logLevel: logLevel.NOTHING,
    requestTimeout: 120_000,
  }).admin();
}

beforeAll(() => {
  mkdirSync(home, { recursive: true });
  // The jars and the emulator's virtualenv are shared; the stack is this test's own.
  symlinkSync(CACHE_DIR, join(home, 'cache'));
});

afterAll(async () => {
  await local(['reset']);
  rmSync(home, { recursive: true, force: true });
});

it('a local:up while another is starting the stack waits for it and reports the same stack', async () => {
  const first = local(['up']);
  // The second starts once the first holds the stack's lock: it must wait, not start its own.
  await waitUntil('the first local:up holds the lock', async () => existsSync(join(stackDir, '.lock')), {
    timeoutMs: 60_000,
    intervalMs: 20,
  });
  const [a, b] = await Promise.all([first, local(['up'])]);
  expect([a.code, b.code]).toEqual([0, 0]);
  expect(a.stdout).toMatch(/^KAFKA_BROKERS=127\.0\.0\.1:\d+\nDYNAMODB_ENDPOINT=http:\/\/127\.0\.0\.1:\d+\n$/);
  expect(b.stdout).toBe(a.stdout);
  expect(a.stderr).toMatch(/kafka started in/);
  expect(b.stderr).toMatch(/waiting: the local stack is being started by pid \d+/);
  expect(b.stderr).toMatch(/local stack already running/);
  expect(b.stderr).not.toMatch(/started in|restarted/);
  expect(servicesRunning()).toEqual({ kafka: 1, dynamodb: 1 });
  // Where the logs are, and their limits.
  expect(a.stderr).toMatch(/logs: .*server\.log, .*moto\.log \(rotated at 5 MB, 3 kept\)/);
});

it('local:down returns with every port free; two local:up right after it restart one stack on the same Kafka port', async () => {
  const before = state();
  const ports = [before.kafkaBrokers, before.dynamodbEndpoint].map((a) => Number(a.split(':').at(-1)));
  const down = await local(['down']);
  expect(down.code).toBe(0);
  expect(before.pids.filter(isAlive)).toEqual([]);
  expect(await Promise.all(ports.map(portInUse))).toEqual([false, false]);
  const ups = await Promise.all([local(['up']), local(['up'])]);
  expect(ups.map((u) => u.code)).toEqual([0, 0]);
  expect(ups[0]?.stdout).toBe(ups[1]?.stdout);
  // Whichever came first restarted the stack; the other found it running.
  expect(ups.filter((u) => /Kafka broker restarted on its data dir/.test(u.stderr))).toHaveLength(1);
  expect(ups.filter((u) => /local stack already running/.test(u.stderr))).toHaveLength(1);
  expect(state().kafkaBrokers).toBe(before.kafkaBrokers);
  expect(servicesRunning()).toEqual({ kafka: 1, dynamodb: 1 });
});

it('a busy stack (both services stopped for a while) is waited for and reused, never replaced', async () => {
  const before = state();
  const pids = [...(before.kafkaPids ?? []), ...(before.dynamodbPids ?? [])];
  pids.forEach((pid) => process.kill(pid, 'SIGSTOP'));
  let resumed = false;
  const resume = (): void => {
    if (!resumed) pids.forEach((pid) => process.kill(pid, 'SIGCONT'));
    resumed = true;
  };
  try {
    // Resume once local:up has said it waits for both: the stop is what it must have seen.
    const up = await local(['up'], {}, (err) => {
      if ((err.match(/runs but does not answer yet/g) ?? []).length === 2) resume();
    });
    expect(resumed).toBe(true);
    expect(up.code).toBe(0);
    expect(up.stderr).toMatch(/Kafka broker \(pid \d+\) runs but does not answer yet \(busy\?\)/);
    expect(up.stderr).toMatch(/DynamoDB emulator \(pid \d+\) runs but does not answer yet/);
    expect(up.stderr).toMatch(/local stack already running/);
  } finally {
    resume();
  }
  expect(state()).toEqual(before);
  expect(servicesRunning()).toEqual({ kafka: 1, dynamodb: 1 });
});

const DAY = 86_400_000;
const TOPICS = 30;
const PARTITIONS = 100;

it('restarts on a data dir of 3,000 partitions with every partition led, says how much it keeps and how to prune', async () => {
  const s = state();
  const a = admin(s);
  await a.connect();
  try {
    const topics = Array.from({ length: TOPICS }, (_, i) => ({
      topic: toolResourceName('bench', `many${i}`, Date.now() - (i < 20 ? 3 * DAY : 0)),
      numPartitions: PARTITIONS,
    }));
    await a.createTopics({ topics, timeout: 120_000, waitForLeaders: false });
    // A user's topics, one with an old-looking name: never pruned.
    await a.createTopics({
      topics: [{ topic: 'clicks' }, { topic: `payments-${(Date.now() - 3 * DAY).toString(36)}` }],
      waitForLeaders: false,
    });
  } finally {
    await a.disconnect();
  }
  expect((await local(['down'])).code).toBe(0);
  const up = await local(['up']);
  expect(up.code).toBe(0);
  expect(up.stderr).toMatch(/Kafka topics kept \(32 topics/);
  expect(up.stderr).toMatch(/Kafka data: [\d.]+ [KMG]B in 3,002 partitions/);
  expect(up.stderr).toMatch(/warning: .* over 2,000 partitions, .*npm run local:prune deletes what the project's tools left/);
  // Led right after up returns: a client asking now finds a leader for every partition.
  const b = admin(state());
  await b.connect();
  try {
    const meta = await b.fetchTopicMetadata({ topics: (await b.listTopics()).filter((t) => !t.startsWith('__')) });
    const partitions = meta.topics.flatMap((t) => t.partitions);
    expect(partitions).toHaveLength(TOPICS * PARTITIONS + 2);
    expect(partitions.filter((p) => p.leader < 0)).toEqual([]);
  } finally {
    await b.disconnect();
  }
});

it("local:prune lists, then deletes, only the tools' topics and tables older than a day", async () => {
  const s = state();
  const dynamo = emulatorClient(s.dynamodbEndpoint);
  const oldTable = toolResourceName('chaos', 'ledger', Date.now() - 2 * DAY);
  const keep = ['kafka-direct-ledger', toolResourceName('demo', 'totals')];
  for (const t of [oldTable, ...keep]) await createSinkTable(dynamo, t);
  const dry = await local(['prune', '--dry-run']);
  expect(dry.code).toBe(0);
  const listed = dry.stdout.trim().split('\n');
  expect(listed).toHaveLength(21);
  expect(listed.filter((l) => /^topic bench-many\d+-\w+-\w+ \(bench, created /.test(l))).toHaveLength(20);
  expect(listed).toContain(`table ${oldTable} (chaos, created ${new Date(parseInt(oldTable.split('-')[2] ?? '', 36)).toISOString()})`);
  expect(dry.stderr).toMatch(/would delete 20 topic\(s\) and 1 table\(s\)/);
  const a = admin(s);
  await a.connect();
  try {
    expect((await a.listTopics()).filter((t) => !t.startsWith('__'))).toHaveLength(32);
    const pruned = await local(['prune']);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toBe(dry.stdout);
    expect(pruned.stderr).toMatch(/deleted 20 topic\(s\) and 1 table\(s\)/);
    const left = (await a.listTopics()).filter((t) => !t.startsWith('__'));
    expect(left).toHaveLength(12);
    expect(left).toEqual(expect.arrayContaining(['clicks', expect.stringMatching(/^payments-/)]));
    const tables = (await dynamo.send(new ListTablesCommand({}))).TableNames ?? [];
    expect(tables).not.toContain(oldTable);
    expect(tables).toEqual(expect.arrayContaining(keep));
  } finally {
    await a.disconnect();
    dynamo.destroy();
  }
});

it('rotates the broker and emulator logs by size, keeping the configured number of files', async () => {
  const limits = { LOCAL_LOG_FILE_MB: '0.05', LOCAL_LOG_FILES: '2' };
  expect((await local(['down'])).code).toBe(0);
  const up = await local(['up'], limits);
  expect(up.code).toBe(0);
  expect(up.stderr).toMatch(/\(rotated at 0\.05 MB, 2 kept\)/);
  const s = state();
  const kafkaLog = join(stackDir, 'kafka', 'server.log');
  const motoLog = join(stackDir, 'dynamodb', 'moto.log');
  const dynamo = emulatorClient(s.dynamodbEndpoint);
  const a = admin(s);
  await a.connect();
  try {
    // Log lines: topic creation and deletion on the broker, a request line per refused request on the emulator.
    let round = 0;
    await waitUntil(
      'both logs rotated twice',
      async () => {
        const name = toolResourceName('bench', `rot${round++}`);
        await a.createTopics({ topics: [{ topic: name, numPartitions: 100 }], waitForLeaders: false });
        await a.deleteTopics({ topics: [name] });
        for (let i = 0; i < 200; i++) {
          const refused = await dynamo.send(new DescribeTableCommand({ TableName: 'absent-table' })).catch((e: Error) => e);
          expect((refused as Error).name).toBe('ResourceNotFoundException');
        }
        return existsSync(`${kafkaLog}.2`) && existsSync(`${motoLog}.2`);
      },
      { timeoutMs: 300_000, intervalMs: 0 },
    );
  } finally {
    await a.disconnect();
    dynamo.destroy();
  }
  const limit = 0.05 * 1024 * 1024;
  for (const log of [kafkaLog, motoLog]) {
    expect(existsSync(`${log}.3`)).toBe(false);
    // A file is rotated at the first event past the limit (the broker's start-up configuration dump is one of 20 KB).
    for (const f of [log, `${log}.1`, `${log}.2`]) expect(statSync(f).size).toBeLessThan(2 * limit);
  }
});
