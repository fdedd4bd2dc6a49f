/**
 * The persistent stack's data: deleting it (its lock kept), reporting what Kafka keeps on disk and
 * where the logs are, and counting the topics of a broker restarted on it once they are led again.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { dataUsage, usageLimits, usageReport } from '../data-usage';
import { dynamoLogFiles } from '../dynamodb';
import { describeLogLimits, logLimits } from '../logs';
import { sleep } from '../process';
import { PrerequisiteError } from '../../../lib/errors';
import { localCommand } from '../../../lib/local/cli-hint';
import { kafkaDataNodes, nodeDirs } from './kafka-dirs';
import type { Log } from './parts';
import type { StackState } from './state';

/** Deletes the stack's data but not its lock (held by this caller). */
export function wipeData(dir: string): void {
  for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
    if (!entry.startsWith('.lock')) rmSync(join(dir, entry), { recursive: true, force: true });
  }
}

/** The Kafka log dirs of a stack's dir (one per node). */
function kafkaLogDirs(dir: string): string[] {
  const kafkaDir = join(dir, 'kafka');
  return nodeDirs(kafkaDir, Math.max(1, kafkaDataNodes(kafkaDir))).map((d) => join(d, 'data'));
}

/** What Kafka keeps on disk (with a warning and the prune command above the limits), and where the logs are. */
export function reportData(state: StackState, log: Log, env: NodeJS.ProcessEnv): void {
  const kafkaDir = join(state.dir, 'kafka');
  usageReport(dataUsage(kafkaLogDirs(state.dir)), kafkaDir, usageLimits(env), localCommand('prune')).forEach(log);
  const nodes = state.kafkaBrokers.split(',').length;
  const brokerLogs = nodeDirs(kafkaDir, nodes).map((d) => join(d, 'server.log'));
  log(`logs: ${[...brokerLogs, dynamoLogFiles(join(state.dir, 'dynamodb')).log].join(', ')} (${describeLogLimits(logLimits(env))})`);
}

/**
 * The user topics on a broker restarted on its data, once every partition has a leader again: the
 * broker answers before it has reopened thousands of partitions, and a client then would see them
 * leaderless. Gives up after `timeoutMs`, naming how many are still without one.
 */
export async function topicsLed(brokers: string, timeoutMs = 180_000): Promise<number> {
  const admin = new Kafka({ clientId: 'local-stack-up', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  const deadline = Date.now() + timeoutMs;
  try {
    await admin.connect();
    for (;;) {
      const topics = (await admin.listTopics()).filter((t) => !t.startsWith('__'));
      const meta = topics.length ? await admin.fetchTopicMetadata({ topics }) : { topics: [] };
      const leaderless = meta.topics.flatMap((t) => t.partitions.filter((p) => p.leader < 0));
      if (leaderless.length === 0) return topics.length;
      if (Date.now() > deadline) {
        throw new PrerequisiteError(
          `the restarted broker still has ${leaderless.length} partition(s) without a leader after ${timeoutMs / 1000} s`,
        );
      }
      await sleep(500);
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
