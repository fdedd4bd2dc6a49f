/**
 * `kafka-direct deploy --stage <s> --emulate`, as a user runs it: one command packages the stage,
 * creates the stack in the local CloudFormation emulator and runs its zips under Lambda's runtime
 * emulator, the planner on its schedule; the records of the config's topic are processed (a line per
 * invocation says so), and Ctrl-C stops it all, leaving no emulator behind.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Admin } from 'kafkajs';
import { LOCAL_DIR } from '../../infra/local/stack/dirs';
import { testKafka, uniqueName } from '../support/env';

jest.setTimeout(300_000);

const ROOT = resolve(__dirname, '..', '..');
const id = uniqueName('emulate');
const topic = `${id}-t`;
let admin: Admin;

/** The processes whose working directory is under `dir` (the emulators and runtimes of a task root). */
function processesIn(dir: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readlinkSync(`/proc/${p}/cwd`).startsWith(dir);
      } catch {
        return false;
      }
    });
}
let dir: string;

beforeAll(async () => {
  admin = testKafka('deploy-emulate').admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  const producer = testKafka('deploy-emulate').producer();
  await producer.connect();
  await producer.send({ topic, messages: Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: i % 2 })) });
  await producer.disconnect();
  dir = mkdtempSync(join(tmpdir(), 'deploy-emulate-'));
  // The brokers of a deployed stage: --emulate reads from the local broker instead.
  const stream = { id, kafka: { brokers: ['kafka-1.example.com:9092'] }, topics: [topic], triggerIntervalMs: 1000 };
  writeFileSync(
    join(dir, 'streams.json'),
    JSON.stringify({
      ledgerTable: 'unused',
      streams: [{ ...stream, processor: { timeoutMs: 60_000 }, handler: { module: 'noop', mode: 'at-least-once' } }],
    }),
  );
});

afterAll(async () => {
  await admin?.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin?.disconnect();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('packages, creates the stack in the emulator, processes the topic under Lambda runtime, and stops on Ctrl-C', async () => {
  const args = ['--import', 'tsx', 'bin/cli.ts', 'deploy', '--stage', 'emu', '--emulate', '--config', join(dir, 'streams.json')];
  const child = spawn(process.execPath, [...args, '--param', 'processorTimeout=90', '--service', 'emulate-test'], {
    cwd: ROOT,
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stdout.resume();
  const processed = new Promise<void>((ok, fail) => {
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (/\[emulate\] processor Event ok init \d+ ms, \d+ ms/.test(stderr)) ok();
    });
    child.on('exit', (code) => fail(new Error(`deploy --emulate exited (${code}) before a processor ran:\n${stderr}`)));
  });
  await processed;
  expect(stderr).toMatch(
    /\[emulate\] stack emulate-test-emu created in the local CloudFormation emulator; functions: emulate-test-emu-planner \(192 MB, 90 s\)/,
  );
  child.kill('SIGINT');
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  expect(code).toBe(0);
  // Nothing of the run is left: no process works in its task roots.
  expect(processesIn(join(LOCAL_DIR, 'lambda', 'emulate-test-emu'))).toEqual([]);
});
