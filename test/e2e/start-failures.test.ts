/**
 * `npm start` with a service it cannot reach: one line naming the service and the setting, exit 1,
 * no client log and no stack trace. An unreachable service is a closed loopback port.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../../infra/local/process';

const root = resolve(__dirname, '..', '..');

/** Runs `npm start`'s entry point with these endpoints; returns exit code and output. */
async function start(kafkaBrokers: string, dynamodbEndpoint: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const demoConfig = join(mkdtempSync(join(tmpdir(), 'demo-')), 'streams.json');
  const env = { ...process.env, KAFKA_BROKERS: kafkaBrokers, DYNAMODB_ENDPOINT: dynamodbEndpoint };
  const args = ['bin/start.ts', '--until-caught-up', '--no-progress', '--duration', '1', '--demo-config', demoConfig];
  // A child that hangs is killed (and the test fails on its exit code) rather than outliving the run.
  const child = spawn(join(root, 'node_modules', '.bin', 'tsx'), args, {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 45_000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  return { code, stdout, stderr };
}

describe('npm start: unreachable services', () => {
  it('names the broker and KAFKA_BROKERS when Kafka cannot be reached', async () => {
    const port = await freePort();
    const res = await start(`127.0.0.1:${port}`, process.env.DYNAMODB_ENDPOINT!);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`error: Kafka: cannot reach 127.0.0.1:${port} (ECONNREFUSED) during connect [KAFKA_BROKERS]\n`);
    expect(res.stdout).toBe('');
  }, 60_000);

  it('names the endpoint and DYNAMODB_ENDPOINT when DynamoDB cannot be reached', async () => {
    const port = await freePort();
    const res = await start(process.env.KAFKA_BROKERS!, `http://127.0.0.1:${port}`);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(
      new RegExp(
        `^error: (ledger|sink) table [\\w-]+: cannot reach DynamoDB at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\) \\[DYNAMODB_ENDPOINT, else the AWS_REGION endpoint\\]\\n$`,
      ),
    );
  }, 60_000);
});
