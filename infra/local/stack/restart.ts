/**
 * Bringing back a recorded stack's services for `local:up`: what still answers (`observe`), a dead
 * Kafka restarted on its data dirs and ports, or fresh ones on the old ports when free.
 */
import { join } from 'node:path';
import { startKafka, stopKafka } from '../kafka';
import { ownPids, recordedServicesAnswer, type AnswerOptions } from '../observe';
import { portInUse } from '../process';
import { PrerequisiteError } from '../../../lib/errors';
import { localCommand } from '../../../lib/local/cli-hint';
import { CACHE_DIR } from './dirs';
import { kafkaDataNodes, nodeDirs } from './kafka-dirs';
import { startDynamoPart, startKafkaPart, type Log, type Part } from './parts';
import type { Observed, UpPlan } from './plan-up';
import type { StackState } from './state';

export async function observe(prev: StackState | undefined, dir: string, kafkaNodes: number, o: AnswerOptions): Promise<Observed> {
  const kafkaDir = join(dir, 'kafka');
  const { kafkaUp, dynamoUp } = prev
    ? await recordedServicesAnswer(prev, kafkaDir, join(dir, 'dynamodb'), o)
    : { kafkaUp: false, dynamoUp: false };
  return { prev, kafkaNodes, kafkaUp, dynamoUp, ownPids: prev ? ownPids(prev) : [], kafkaDataNodes: kafkaDataNodes(kafkaDir) };
}

/** Restarts every node of the recorded Kafka on its data dir and ports (all at once: a quorum needs its voters). */
async function restartKafkaOnDirs(
  kafkaDir: string,
  nodes: number,
  ownerPid: number | undefined,
  port: string | undefined,
  log: Log,
): Promise<Part> {
  const t0 = Date.now();
  // A secured broker keeps its listeners, certificates and users across restarts (kafka.ts reads them from its dir).
  const settled = await Promise.allSettled(
    nodeDirs(kafkaDir, nodes).map((dir) =>
      startKafka({
        dir,
        cacheDir: CACHE_DIR,
        ownerPid,
        reuseDir: true,
        // A LOCAL_KAFKA_PORT other than the one the data was formatted for is refused, not ignored.
        port: nodes === 1 ? port : undefined,
        expectBrokers: nodes,
        heap: nodes > 1 ? (process.env.LOCAL_KAFKA_HEAP ?? '384m') : undefined,
        // Thousands of partitions after an unclean stop are recovered before the broker answers.
        startTimeoutMs: 180_000,
      }),
    ),
  );
  const ok = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(ok.map((k) => stopKafka(k)));
    const why = failed.reason instanceof Error ? failed.reason.message : String(failed.reason);
    throw new PrerequisiteError(`${why}; ${localCommand('reset')} deletes the Kafka data and starts fresh`, { cause: failed.reason });
  }
  log(`kafka restarted on its data in ${Date.now() - t0} ms (pid${ok.length > 1 ? 's' : ''} ${ok.map((k) => k.pid).join(', ')})`);
  return {
    address: ok.map((k) => k.brokers).join(','),
    pids: ok.map((k) => k.pid),
    watchdogPids: ok.flatMap((k) => k.watchdogPid ?? []),
    secured: ok[0]?.secured,
  };
}

/** The previous port when it is free again (clients keep the address they were given), else none (a free one). */
async function previousPort(address: string | undefined): Promise<string | undefined> {
  const port = Number(address?.split(':').at(-1));
  return Number.isInteger(port) && port > 0 && !(await portInUse(port)) ? String(port) : undefined;
}

type PartOptions = { ownerPid?: number; log: Log; env: NodeJS.ProcessEnv; secured?: boolean };

/** The recorded Kafka, restarted on its data, or a fresh one (on the old port when free, unless LOCAL_KAFKA_PORT says otherwise). */
export async function kafkaFor(plan: UpPlan, prev: StackState | undefined, kafkaDir: string, nodes: number, o: PartOptions): Promise<Part> {
  const part = await kafkaPartFor(plan, prev, kafkaDir, nodes, o);
  if (o.secured && !part.secured) {
    throw new PrerequisiteError(
      `the local stack's broker was formatted without secured listeners: ${localCommand('reset')}, then start it with --secured`,
    );
  }
  return part;
}

async function kafkaPartFor(plan: UpPlan, prev: StackState | undefined, kafkaDir: string, nodes: number, o: PartOptions): Promise<Part> {
  if (plan.kafka === 'reuse' && prev)
    return { address: prev.kafkaBrokers, pids: prev.kafkaPids ?? [], watchdogPids: [], secured: prev.secured };
  if (plan.kafka === 'restart') return restartKafkaOnDirs(kafkaDir, nodes, o.ownerPid, o.env.LOCAL_KAFKA_PORT, o.log);
  const port = o.env.LOCAL_KAFKA_PORT || (await previousPort(nodes === 1 ? prev?.kafkaBrokers : undefined));
  return startKafkaPart(kafkaDir, nodes, { ownerPid: o.ownerPid, port, log: o.log, secured: o.secured });
}

/** The recorded emulator, or a new (empty) one on the old port when free. */
export async function dynamoFor(plan: UpPlan, prev: StackState | undefined, dir: string, o: PartOptions): Promise<Part> {
  if (plan.dynamodb === 'reuse' && prev) return { address: prev.dynamodbEndpoint, pids: prev.dynamodbPids ?? [], watchdogPids: [] };
  const port = o.env.LOCAL_DYNAMODB_PORT || (await previousPort(prev?.dynamodbEndpoint));
  return startDynamoPart(dir, { ownerPid: o.ownerPid, port, log: o.log });
}
