/** Bad input for the local stack: each gives one clear message, never a stack trace or a hang. */
import { createServer, type Server } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrerequisiteError } from '../../lib/errors';
import { ensureMoto } from '../../infra/local/dynamodb';
import { javaBinary, newClusterId } from '../../infra/local/kafka';
import { choosePort, LOOPBACK, requireCommand, waitUntil } from '../../infra/local/process';

describe('local stack prerequisites', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('names a missing command and how to install it', () => {
    expect(() => requireCommand('no-such-command-xyz', ['-v'], 'install it with apt-get install xyz')).toThrow(
      /no-such-command-xyz is required but was not found: install it with apt-get install xyz/,
    );
  });

  it('names a missing Java and how to get one', () => {
    process.env.JAVA_HOME = '/nonexistent-jdk';
    expect(() => javaBinary()).toThrow(PrerequisiteError);
    expect(() => javaBinary()).toThrow(/Java 17\+ runtime .*JAVA_HOME/);
  });

  it('names a missing Python for the emulator', () => {
    process.env.PYTHON = '/nonexistent/python3';
    const cache = mkdtempSync(join(tmpdir(), 'moto-cache-'));
    expect(() => ensureMoto(cache)).toThrow(/Python 3 .*apt-get install python3/);
  });

  it('reports a requested port that is already in use', async () => {
    const srv: Server = await new Promise((resolve) => {
      const s = createServer().listen(0, LOOPBACK, () => resolve(s));
    });
    const port = (srv.address() as { port: number }).port;
    try {
      await expect(choosePort(String(port), 'LOCAL_KAFKA_PORT')).rejects.toThrow(
        new RegExp(`port ${port} \\(LOCAL_KAFKA_PORT\\) is already in use`),
      );
      await expect(choosePort('70000', 'LOCAL_KAFKA_PORT')).rejects.toThrow(/not a valid TCP port/);
    } finally {
      srv.close();
    }
  });

  it('bounds every wait', async () => {
    const t0 = Date.now();
    await expect(waitUntil('never-ready service', async () => false, { timeoutMs: 300, intervalMs: 50 })).rejects.toThrow(
      /never-ready service not ready after 300 ms/,
    );
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('never formats Kafka with a cluster id that looks like a command-line flag', () => {
    // 0xfb 0xef -> base64url "--..."; the second draw is an ordinary id.
    const draws = [Buffer.from([0xfb, 0xef, ...Array(14).fill(0)]), Buffer.alloc(16, 7)];
    const id = newClusterId(() => draws.shift() as Buffer);
    expect(id).toBe(Buffer.alloc(16, 7).toString('base64url'));
    expect(Buffer.from([0xfb, 0xef]).toString('base64url').startsWith('-')).toBe(true);
  });
});
