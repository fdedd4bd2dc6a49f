/**
 * `npm start` with a service it cannot reach: one line naming the service and the setting, exit 1,
 * no client log and no stack trace; the demo's topic, when it was created, is deleted and said so.
 * An unreachable service is a closed loopback port. A bounded run
 * of a config file says an unavailable cluster once, gives up after its stated time, and exits
 * non-zero whatever stops it (SIGTERM included).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../../infra/local/process';
import { testKafka, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

const root = resolve(__dirname, '..', '..');

type Ran = { code: number | null; stdout: string; stderr: string };

/** `npm start`'s entry point with these arguments and environment: the child, its stderr so far, and how it ended. */
function spawnStart(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; stderr: () => string; done: Promise<Ran> } {
  // A child that hangs is killed (and the test fails on its exit code) rather than outliving the run.
  const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), ['bin/start.ts', ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Ran>((r) => child.on('close', (code) => r({ code, stdout, stderr })));
  return { child, stderr: () => stderr, done };
}

/** Runs the demo with these endpoints; returns exit code and output. */
function start(kafkaBrokers: string, dynamodbEndpoint: string): Promise<Ran> {
  const demoConfig = join(mkdtempSync(join(tmpdir(), 'demo-')), 'streams.json');
  const env = { ...process.env, KAFKA_BROKERS: kafkaBrokers, DYNAMODB_ENDPOINT: dynamodbEndpoint };
  return spawnStart(['--until-caught-up', '--no-progress', '--duration', '1', '--demo-config', demoConfig], env).done;
}

describe('npm start: unreachable services', () => {
  it('names the broker and KAFKA_BROKERS when Kafka cannot be reached', async () => {
    const port = await freePort();
    const res = await start(`127.0.0.1:${port}`, process.env.DYNAMODB_ENDPOINT!);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`error: Kafka: cannot reach 127.0.0.1:${port} (ECONNREFUSED) during connect [KAFKA_BROKERS]\n`);
    expect(res.stdout).toBe('');
  }, 60_000);

  it('names the endpoint and DYNAMODB_ENDPOINT when DynamoDB cannot be reached, after deleting the topic it had created', async () => {
    const port = await freePort();
    const res = await start(process.env.KAFKA_BROKERS!, `http://127.0.0.1:${port}`);
    expect(res.code).toBe(1);
    const [deleted, error, ...rest] = res.stderr.split('\n');
    expect(deleted).toMatch(/^deleted 1 topic \(demo-payments-[0-9a-z]{8}-[0-9a-f]{4}\) in \d+\.\d s$/);
    const topic = deleted!.slice('deleted 1 topic ('.length, deleted!.indexOf(')'));
    expect(`${error}\n`).toMatch(
      new RegExp(
        `^error: (ledger|sink) table [\\w-]+: cannot reach DynamoDB at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\) \\[DYNAMODB_ENDPOINT, else the AWS_REGION endpoint\\]\\n$`,
      ),
    );
    expect(rest).toEqual(['']);
    const admin = testKafka('start-failures').admin();
    await admin.connect();
    try {
      // Deleted (the line names only a topic that existed), and no longer listed when the run ended.
      expect(await admin.listTopics()).not.toContain(topic);
    } finally {
      await admin.disconnect();
    }
  }, 60_000);
});

/** `npm start -- --config <file> --until-caught-up` of a noop stream on `kafkaBrokers`. */
function startConfig(kafkaBrokers: string, extra: string[]): ReturnType<typeof spawnStart> {
  const dir = mkdtempSync(join(tmpdir(), 'start-config-'));
  const file = join(dir, 'streams.json');
  const stream = {
    id: 'gone',
    kafka: { brokers: ['kafka.example.com:9092'] },
    topics: ['t'],
    triggerIntervalMs: 1000,
    handler: { module: 'noop', mode: 'at-least-once' },
  };
  writeFileSync(file, JSON.stringify({ ledgerTable: uniqueName('gone-ledger'), streams: [stream] }));
  return spawnStart(['--config', file, '--until-caught-up', '--no-progress', ...extra], { ...process.env, KAFKA_BROKERS: kafkaBrokers });
}

describe('npm start -- --config: a cluster that cannot be reached', () => {
  it('says so once, in one line, and gives up after its stated time with exit 1', async () => {
    const port = await freePort();
    const t0 = Date.now();
    const res = await startConfig(`127.0.0.1:${port}`, ['--timeout', '5']).done;
    expect(res.code).toBe(1);
    const lines = res.stderr.split('\n').filter(Boolean);
    const reason = `Kafka: cannot reach 127.0.0.1:${port} (ECONNREFUSED) during describeTopics`;
    expect(lines.filter((l) => l.startsWith('unavailable: '))).toEqual([`unavailable: ${reason}`]);
    expect(lines.filter((l) => l.startsWith('planner run for gone failed'))).toEqual([
      `planner run for gone failed: KafkaError: ${reason}`,
    ]);
    expect(lines).toContain(`gave up: Kafka unavailable for 5.0s (${reason})`);
    expect(lines.some((l) => l.includes('[kafkajs'))).toBe(false);
    expect(lines.length).toBeLessThanOrEqual(5);
    expect(res.stdout).toContain('not caught up');
    expect(Date.now() - t0).toBeLessThan(40_000);
  }, 60_000);

  it('exits non-zero when stopped by SIGTERM before it caught up', async () => {
    const port = await freePort();
    const run = startConfig(`127.0.0.1:${port}`, []);
    // Stopped once it is running (its first failure said), not during start-up.
    await waitFor('its first failure on stderr', run.stderr, { until: (said) => said.includes('unavailable: '), timeoutMs: 30_000 });
    expect(run.stderr()).toContain('unavailable: ');
    run.child.kill('SIGTERM');
    const res = await run.done;
    expect(res.code).toBe(130);
    expect(res.stdout).toContain('not caught up');
  }, 60_000);
});
