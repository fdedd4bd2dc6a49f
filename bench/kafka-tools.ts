/**
 * The benchmarks' child processes: a timed command, and Kafka's own performance tools
 * (ConsumerPerformance, ProducerPerformance) from the broker's jars.
 */
import { spawnSync } from 'node:child_process';
import { PrerequisiteError } from '../lib/errors';
import { ensureKafkaJars, javaBinary } from '../infra/local/kafka';
import { CACHE_DIR } from '../infra/local/stack/dirs';

/** Runs `cmd` to its end (stdin closed); its stdout and wall time, or an error naming `label` with stderr's tail. */
export function runTimed(cmd: string, args: string[], timeoutMs: number, label = cmd): { ms: number; stdout: string } {
  const t0 = performance.now();
  const res = spawnSync(cmd, args, {
    encoding: 'utf8',
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ms = performance.now() - t0;
  // A tool that is not installed is named with what installs it, not as a failed run with no output.
  if ((res.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT')
    throw new PrerequisiteError(
      `${label} is not installed: ${cmd} was not found on PATH (Debian: bash infra/local/install-system-packages.sh)`,
    );
  if (res.error) throw new Error(`${label} failed: ${res.error.message}`);
  if (res.status !== 0) throw new Error(`${label} failed (${res.status ?? res.signal}): ${res.stderr?.slice(-2000)}`);
  return { ms, stdout: res.stdout };
}

/** Runs one of Kafka's tools (`org.apache.kafka.tools.<tool>`) with a 512 MB heap. */
export function runKafkaTool(tool: string, args: string[], timeoutMs: number): { ms: number; stdout: string } {
  const jvm = ['-Xmx512m', '-cp', `${ensureKafkaJars(CACHE_DIR)}/*`, `org.apache.kafka.tools.${tool}`];
  return runTimed(javaBinary(), [...jvm, ...args], timeoutMs, tool);
}

/** ConsumerPerformance reading `records` records of `topic` in the consumer group `group`; its CSV output. */
export function consumerPerformance(p: { brokers: string; topic: string; records: number; group: string; timeoutMs: number }): {
  ms: number;
  stdout: string;
} {
  const args = ['--bootstrap-server', p.brokers, '--topic', p.topic, '--messages', String(p.records), '--timeout', '60000'];
  return runKafkaTool('ConsumerPerformance', [...args, '--group', p.group], p.timeoutMs);
}
