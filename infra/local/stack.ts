/**
 * The local stack: one Kafka broker (or a cluster of `kafkaNodes`) and one DynamoDB emulator. Either
 * service is skipped when its environment variable (KAFKA_BROKERS, DYNAMODB_ENDPOINT) already points
 * at an existing one.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startDynamo, type DynamoInstance } from './dynamodb';
import { kafkaReady, startKafka, startKafkaCluster, type KafkaInstance } from './kafka';
import { isAlive, stopProcess } from './process';
import { PrerequisiteError } from '../../lib/errors';

/** Project-local state: jar and virtualenv cache, persistent stack, per-run test stacks. */
export const LOCAL_DIR = resolve(__dirname, '..', '..', '.local');
export const CACHE_DIR = join(LOCAL_DIR, 'cache');

export type StackState = {
  kafkaBrokers: string;
  dynamodbEndpoint: string;
  /** Processes this stack started (services reused from env vars are not listed). */
  pids: number[];
  /** Watchdogs that kill those processes if their owner dies (test runs only). */
  watchdogPids: number[];
  dir: string;
};

export type Timings = Record<string, number>;

type Log = (line: string) => void;

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
}): Promise<StackState> {
  const env = opts.env ?? process.env;
  mkdirSync(opts.dir, { recursive: true });
  const started: Array<KafkaInstance | DynamoInstance> = [];
  const timed = async <T extends KafkaInstance | DynamoInstance>(name: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    const inst = await fn();
    started.push(inst);
    opts.log(`${name} started in ${Date.now() - t0} ms (pid ${inst.pid})`);
    return inst;
  };
  const startCluster = async (nodes: number): Promise<{ brokers: string }> => {
    const t0 = Date.now();
    const cluster = await startKafkaCluster({ dir: join(opts.dir, 'kafka'), cacheDir: CACHE_DIR, ownerPid: opts.ownerPid, brokers: nodes });
    started.push(...cluster.nodes.values());
    opts.log(`kafka cluster of ${nodes} started in ${Date.now() - t0} ms (pids ${[...cluster.nodes.values()].map((n) => n.pid).join(', ')})`);
    return cluster;
  };
  const nodes = opts.kafkaNodes ?? 1;
  try {
    const [kafka, dynamo] = await Promise.all([
      env.KAFKA_BROKERS
        ? Promise.resolve(undefined)
        : nodes > 1
          ? startCluster(nodes)
          : timed('kafka', () =>
              startKafka({ dir: join(opts.dir, 'kafka'), cacheDir: CACHE_DIR, ownerPid: opts.ownerPid, port: env.LOCAL_KAFKA_PORT }),
            ),
      env.DYNAMODB_ENDPOINT
        ? Promise.resolve(undefined)
        : timed('dynamodb', () =>
            startDynamo({ dir: join(opts.dir, 'dynamodb'), cacheDir: CACHE_DIR, ownerPid: opts.ownerPid, port: env.LOCAL_DYNAMODB_PORT }),
          ),
    ]);
    return {
      kafkaBrokers: kafka?.brokers ?? (env.KAFKA_BROKERS as string),
      dynamodbEndpoint: dynamo?.endpoint ?? (env.DYNAMODB_ENDPOINT as string),
      pids: started.map((s) => s.pid),
      watchdogPids: started.flatMap((s) => (s.watchdogPid ? [s.watchdogPid] : [])),
      dir: opts.dir,
    };
  } catch (err) {
    // Never leave half a stack running.
    await Promise.all(started.map((s) => stopProcess(s.pid)));
    await Promise.all(started.map((s) => (s.watchdogPid ? stopProcess(s.watchdogPid, 1000) : undefined)));
    throw err;
  }
}

/** Stops every process of the stack (watchdogs last) and reports how long it took. */
export async function stopStack(state: StackState, log: Log): Promise<void> {
  const t0 = Date.now();
  await Promise.all(state.pids.map((pid) => stopProcess(pid)));
  await Promise.all((state.watchdogPids ?? []).map((pid) => stopProcess(pid, 1000)));
  log(`local stack stopped in ${Date.now() - t0} ms`);
}

const PERSISTENT_DIR = join(LOCAL_DIR, 'stack');
const STATE_FILE = join(PERSISTENT_DIR, 'state.json');

function readState(): StackState | undefined {
  if (!existsSync(STATE_FILE)) return undefined;
  try {
    return JSON.parse(readFileSync(STATE_FILE, 'utf8')) as StackState;
  } catch {
    return undefined;
  }
}

/** `npm run local:up`: reuses a running persistent stack or starts a fresh one. */
export async function upPersistent(log: Log, opts: { kafkaNodes?: number } = {}): Promise<StackState> {
  const prev = readState();
  const nodes = opts.kafkaNodes ?? 1;
  const sameShape = prev !== undefined && prev.kafkaBrokers.split(',').length === nodes;
  if (prev && sameShape && prev.pids.every(isAlive) && (await kafkaReady(prev.kafkaBrokers, nodes).catch(() => false))) {
    log('local stack already running');
    return prev;
  }
  if (prev) await stopStack(prev, log);
  rmSync(PERSISTENT_DIR, { recursive: true, force: true });
  const state = await startStack({ dir: PERSISTENT_DIR, log, kafkaNodes: nodes });
  writeFileSync(STATE_FILE, JSON.stringify(state, null, 2));
  return state;
}

/** `npm run local:down`: stops the persistent stack if one is recorded. */
export async function downPersistent(log: Log): Promise<void> {
  const prev = readState();
  if (!prev) {
    log('no local stack recorded');
    return;
  }
  await stopStack(prev, log);
  rmSync(STATE_FILE, { force: true });
}

/** `--brokers N` (Kafka nodes of the local stack; default 1). */
export function parseUpArgs(args: string[]): { kafkaNodes: number } {
  if (args.length === 0) return { kafkaNodes: 1 };
  const [flag, value, ...rest] = args;
  const n = Number(value);
  if (flag !== '--brokers' || rest.length > 0 || !Number.isInteger(n) || n < 1 || n > 9) {
    throw new PrerequisiteError(`usage: local:up [--brokers N] with N from 1 to 9, not ${JSON.stringify(args.join(' '))}`);
  }
  return { kafkaNodes: n };
}
