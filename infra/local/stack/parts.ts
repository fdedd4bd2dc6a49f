/**
 * Starting and stopping the local stack's parts: one Kafka broker (or a cluster of `kafkaNodes`) and
 * one DynamoDB emulator, both or neither. Either service is skipped when its environment variable
 * (KAFKA_BROKERS, DYNAMODB_ENDPOINT) already points at an existing one.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDynamo } from '../dynamodb';
import { startKafka, startKafkaCluster, type SecuredListeners } from '../kafka';
import { stopProcess } from '../process';
import { ensureSystemPackages } from '../system-packages';
import { PrerequisiteError } from '../../../lib/errors';
import { CACHE_DIR } from './dirs';
import { newScramUsers } from './secured';
import type { StackState } from './state';

export type Timings = Record<string, number>;

export type Log = (line: string) => void;

/** One service of the stack as started (or found): where it listens and its processes. */
export type Part = { address: string; pids: number[]; watchdogPids: number[]; secured?: SecuredListeners };

/** A fresh Kafka: one broker in `kafkaDir`, or `nodes` nodes in `kafkaDir/node-N`; `secured` only with one. */
export async function startKafkaPart(
  kafkaDir: string,
  nodes: number,
  o: { ownerPid?: number; port?: string; log: Log; secured?: boolean },
): Promise<Part> {
  const t0 = Date.now();
  if (o.secured && nodes > 1)
    throw new PrerequisiteError('the secured local broker is a single node: --secured does not go with --brokers');
  if (nodes > 1) {
    const cluster = await startKafkaCluster({ dir: kafkaDir, cacheDir: CACHE_DIR, ownerPid: o.ownerPid, brokers: nodes });
    const ns = [...cluster.nodes.values()];
    o.log(`kafka cluster of ${nodes} started in ${Date.now() - t0} ms (pids ${ns.map((n) => n.pid).join(', ')})`);
    return { address: cluster.brokers, pids: ns.map((n) => n.pid), watchdogPids: ns.flatMap((n) => n.watchdogPid ?? []) };
  }
  const secured = o.secured ? { scramUsers: newScramUsers() } : undefined;
  const k = await startKafka({ dir: kafkaDir, cacheDir: CACHE_DIR, ownerPid: o.ownerPid, port: o.port, secured });
  o.log(`kafka started in ${Date.now() - t0} ms (pid ${k.pid})${k.secured ? `; SASL_SSL ${k.secured.saslSsl}, SSL ${k.secured.ssl}` : ''}`);
  return { address: k.brokers, pids: [k.pid], watchdogPids: k.watchdogPid ? [k.watchdogPid] : [], secured: k.secured };
}

export async function startDynamoPart(dir: string, o: { ownerPid?: number; port?: string; log: Log }): Promise<Part> {
  const t0 = Date.now();
  const d = await startDynamo({ dir, cacheDir: CACHE_DIR, ownerPid: o.ownerPid, port: o.port });
  o.log(`dynamodb started in ${Date.now() - t0} ms (pid ${d.pid})`);
  return { address: d.endpoint, pids: [d.pid], watchdogPids: d.watchdogPid ? [d.watchdogPid] : [] };
}

export function stateOf(dir: string, kafka: Part, dynamo: Part): StackState {
  return {
    kafkaBrokers: kafka.address,
    dynamodbEndpoint: dynamo.address,
    pids: [...kafka.pids, ...dynamo.pids],
    kafkaPids: kafka.pids,
    dynamodbPids: dynamo.pids,
    watchdogPids: [...kafka.watchdogPids, ...dynamo.watchdogPids],
    dir,
    ...(kafka.secured ? { secured: kafka.secured } : {}),
  };
}

export async function stopParts(parts: Part[]): Promise<void> {
  await Promise.all(parts.flatMap((p) => p.pids).map((pid) => stopProcess(pid)));
  await Promise.all(parts.flatMap((p) => p.watchdogPids).map((pid) => stopProcess(pid, 1000)));
}

/**
 * Waits for both services, then, if either failed, stops what `started` holds (the other may still
 * have been starting when the first failed) and rethrows: never half a stack running.
 */
export async function bothOrNone(started: Part[], both: [Promise<Part>, Promise<Part>]): Promise<[Part, Part]> {
  const [k, d] = await Promise.allSettled(both);
  if (k.status === 'fulfilled' && d.status === 'fulfilled') return [k.value, d.value];
  await stopParts(started);
  throw k.status === 'rejected' ? k.reason : (d as PromiseRejectedResult).reason;
}

/**
 * Starts whatever the environment does not already provide. `ownerPid` ties the processes to a
 * parent (test runs); without it they outlive this process until `stopStack` (npm run local:up).
 */
export async function startStack(opts: {
  dir: string;
  ownerPid?: number;
  log: Log;
  env?: NodeJS.ProcessEnv;
  /** Kafka nodes: 1 (default) is a single broker; more form one cluster (replication 3, min.insync.replicas 2). */
  kafkaNodes?: number;
  /** Secured listeners on the (single) broker beside PLAINTEXT. */
  secured?: boolean;
}): Promise<StackState> {
  const env = opts.env ?? process.env;
  ensureSystemPackages(opts.log, env);
  mkdirSync(opts.dir, { recursive: true });
  const started: Part[] = [];
  const keep = (p: Part): Part => (started.push(p), p);
  const given = (address: string | undefined): Promise<Part> | undefined =>
    address ? Promise.resolve({ address, pids: [], watchdogPids: [] }) : undefined;
  const o = { ownerPid: opts.ownerPid, log: opts.log };
  const [kafka, dynamo] = await bothOrNone(started, [
    given(env.KAFKA_BROKERS) ??
      startKafkaPart(join(opts.dir, 'kafka'), opts.kafkaNodes ?? 1, { ...o, port: env.LOCAL_KAFKA_PORT, secured: opts.secured }).then(keep),
    given(env.DYNAMODB_ENDPOINT) ?? startDynamoPart(join(opts.dir, 'dynamodb'), { ...o, port: env.LOCAL_DYNAMODB_PORT }).then(keep),
  ]);
  return stateOf(opts.dir, kafka, dynamo);
}

/** Stops every process of the stack (watchdogs last) and reports how long it took. */
export async function stopStack(state: StackState, log: Log): Promise<void> {
  const t0 = Date.now();
  await Promise.all(state.pids.map((pid) => stopProcess(pid)));
  await Promise.all((state.watchdogPids ?? []).map((pid) => stopProcess(pid, 1000)));
  log(`local stack stopped in ${Date.now() - t0} ms`);
}
