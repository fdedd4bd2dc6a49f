/**
 * The local stack: one Kafka broker (or a cluster of `kafkaNodes`) and one DynamoDB emulator. Either
 * service is skipped when its environment variable (KAFKA_BROKERS, DYNAMODB_ENDPOINT) already points
 * at an existing one. The persistent stack (`upPersistent`) keeps Kafka's data across restarts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { dataUsage, usageLimits, usageReport } from './data-usage';
import { dynamoLogFiles, startDynamo } from './dynamodb';
import { startKafka, startKafkaCluster, stopKafka, type ScramUser, type SecuredListeners } from './kafka';
import { describeLogLimits, logLimits } from './logs';
import { nodePorts, ownPids, recordedServicesAnswer, type AnswerOptions } from './observe';
import { describePortOwner } from './ownership';
import { isAlive, portInUse, sleep, stopProcess } from './process';
import { ensureRegistry, readRegistryState, registryReady, stopRecordedRegistry } from './registry';
import { withStackLock } from './stack-lock';
import { ensureSystemPackages } from './system-packages';
import { PrerequisiteError } from '../../lib/errors';
import { localCommand } from '../../lib/local/cli-hint';
import { LOCAL_ROOT } from '../../lib/paths';
import { strictArgs } from './args';

/** Project-local state: jar and virtualenv cache, persistent stack, per-run test stacks. */
export const LOCAL_DIR = LOCAL_ROOT;
export const CACHE_DIR = join(LOCAL_DIR, 'cache');

export type StackState = {
  kafkaBrokers: string;
  dynamodbEndpoint: string;
  /** Processes this stack started (services reused from env vars are not listed). */
  pids: number[];
  /** The Kafka node processes among `pids`, in node order (absent in states recorded before it was kept). */
  kafkaPids?: number[];
  /** The emulator process among `pids` (likewise). */
  dynamodbPids?: number[];
  /** Watchdogs that kill those processes if their owner dies (test runs only). */
  watchdogPids: number[];
  dir: string;
  /** The broker's secured listeners (`--secured`): SASL_SSL with SCRAM-SHA-512, and SSL with client certificates. */
  secured?: SecuredListeners;
};

/** The environment lines that name a secured stack's listeners, TLS files and SCRAM user (what `local:up --secured` prints). */
export function securedEnv(s: SecuredListeners): Record<string, string> {
  const user = s.scramUsers[0];
  return {
    KAFKA_SASL_SSL_BROKERS: s.saslSsl,
    KAFKA_SSL_BROKERS: s.ssl,
    KAFKA_TLS_DIR: s.tls.dir,
    ...(user ? { KAFKA_SCRAM_USERNAME: user.name, KAFKA_SCRAM_PASSWORD: user.password } : {}),
  };
}

/** The SCRAM user a secured stack is formatted with: a fresh password each time, kept only in the stack's own files. */
function newScramUsers(): ScramUser[] {
  return [{ name: 'app', password: randomBytes(12).toString('base64url') }];
}

export type Timings = Record<string, number>;

type Log = (line: string) => void;

/** One service of the stack as started (or found): where it listens and its processes. */
type Part = { address: string; pids: number[]; watchdogPids: number[]; secured?: SecuredListeners };

/** A fresh Kafka: one broker in `kafkaDir`, or `nodes` nodes in `kafkaDir/node-N`; `secured` only with one. */
async function startKafkaPart(
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

async function startDynamoPart(dir: string, o: { ownerPid?: number; port?: string; log: Log }): Promise<Part> {
  const t0 = Date.now();
  const d = await startDynamo({ dir, cacheDir: CACHE_DIR, ownerPid: o.ownerPid, port: o.port });
  o.log(`dynamodb started in ${Date.now() - t0} ms (pid ${d.pid})`);
  return { address: d.endpoint, pids: [d.pid], watchdogPids: d.watchdogPid ? [d.watchdogPid] : [] };
}

function stateOf(dir: string, kafka: Part, dynamo: Part): StackState {
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

async function stopParts(parts: Part[]): Promise<void> {
  await Promise.all(parts.flatMap((p) => p.pids).map((pid) => stopProcess(pid)));
  await Promise.all(parts.flatMap((p) => p.watchdogPids).map((pid) => stopProcess(pid, 1000)));
}

/**
 * Waits for both services, then, if either failed, stops what `started` holds (the other may still
 * have been starting when the first failed) and rethrows: never half a stack running.
 */
async function bothOrNone(started: Part[], both: [Promise<Part>, Promise<Part>]): Promise<[Part, Part]> {
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

const PERSISTENT_DIR = join(LOCAL_DIR, 'stack');

/** Where a persistent stack lives: its data dir and its state file. Tests pass a place of their own. */
export type PersistentPlace = { dir: string; stateFile: string; ownerPid?: number };
/** The persistent stack of `npm start` / `npm run local:up`. */
export const PERSISTENT: PersistentPlace = { dir: PERSISTENT_DIR, stateFile: join(PERSISTENT_DIR, 'state.json') };

/** The recorded state of a persistent stack, if any. */
export function readState(stateFile: string): StackState | undefined {
  if (!existsSync(stateFile)) return undefined;
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8')) as StackState;
  } catch {
    return undefined;
  }
}

/** What `local:up` finds before deciding: the recorded stack, which of its services answer, and the Kafka data on disk. */
export type Observed = {
  prev?: StackState;
  /** Kafka nodes asked for. */
  kafkaNodes: number;
  kafkaUp: boolean;
  dynamoUp: boolean;
  /** Recorded pids still the stack's own processes (alive, on their ports): the only ones ever stopped. */
  ownPids: number[];
  /** Formatted Kafka node dirs found under the stack's dir (0: none, a fresh broker is needed). */
  kafkaDataNodes: number;
};

/** What `local:up` does with each service. */
export type UpPlan = {
  kafka: 'reuse' | 'restart' | 'fresh';
  dynamodb: 'reuse' | 'start';
  /** Recorded processes to stop first: only the stack's own (a dead one's pid may be another process's now). */
  stopPids: number[];
  /** Why the Kafka data is deleted first, when it is. */
  wipeReason?: string;
};

/** Decides what to keep, restart or start fresh (pure; the I/O is in `upPersistent`). */
export function planUp(o: Observed): UpPlan {
  const plan = planServices(o);
  return { ...plan, stopPids: plan.stopPids.filter((pid) => o.ownPids.includes(pid)) };
}

function planServices(o: Observed): UpPlan {
  const { prev } = o;
  const recordedNodes = prev ? prev.kafkaBrokers.split(',').length : o.kafkaDataNodes;
  const dataNodes = o.kafkaDataNodes || recordedNodes;
  if (recordedNodes > 0 && dataNodes !== o.kafkaNodes) {
    return {
      kafka: 'fresh',
      dynamodb: 'start',
      stopPids: prev?.pids ?? [],
      wipeReason: `the local stack has ${dataNodes} Kafka node${dataNodes === 1 ? '' : 's'}, not ${o.kafkaNodes}`,
    };
  }
  const kafka = prev && o.kafkaUp ? 'reuse' : o.kafkaDataNodes > 0 ? 'restart' : 'fresh';
  const dynamodb = prev && o.dynamoUp ? 'reuse' : 'start';
  if (!prev || (kafka === 'reuse' && dynamodb === 'reuse')) return { kafka, dynamodb, stopPids: [] };
  if (prev.kafkaPids === undefined || prev.dynamodbPids === undefined) {
    // Recorded before the state named each service's processes: a live one cannot be told apart, so stop all.
    return { kafka: kafka === 'reuse' ? 'restart' : kafka, dynamodb: 'start', stopPids: prev.pids };
  }
  const stopPids = [...(kafka === 'reuse' ? [] : prev.kafkaPids), ...(dynamodb === 'reuse' ? [] : prev.dynamodbPids)];
  return { kafka, dynamodb, stopPids };
}

/** What `local:up` found out while carrying out its plan, for the report. */
export type UpOutcome = {
  /** A stack was recorded (else this follows a `local:down`, or it is the first start). */
  hadState: boolean;
  /** User topics on the broker once it is up. */
  topics: number;
  kafkaNodes: number;
  /** New endpoints that differ from the recorded ones (the old port was taken). */
  movedTo?: { kafkaBrokers?: string; dynamodbEndpoint?: string };
};

const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/** The one or two lines that say what survived and what was lost (pure). */
export function upReport(plan: UpPlan, out: UpOutcome): string[] {
  const kafkaName = out.kafkaNodes > 1 ? 'Kafka cluster' : 'Kafka broker';
  const topicsKept = `Kafka topics kept (${plural(out.topics, 'topic')})`;
  const lines: string[] = [];
  if (plan.wipeReason) {
    lines.push(`${plan.wipeReason}: starting a fresh stack; its Kafka data and DynamoDB tables are gone`);
  } else if (plan.kafka === 'reuse' && plan.dynamodb === 'reuse') {
    lines.push('local stack already running');
  } else if (plan.dynamodb === 'start' && (out.hadState || plan.kafka === 'restart')) {
    const lost = out.hadState
      ? 'DynamoDB emulator had stopped: its tables (ledgers, sinks) are gone'
      : 'DynamoDB emulator keeps its tables in memory: those from before local:down (ledgers, sinks) are gone';
    if (plan.kafka === 'fresh') {
      lines.push(`${lost}; ${kafkaName} had stopped and its data dir is gone: starting a fresh stack (no topics, no tables)`);
    } else {
      const how = plan.kafka === 'restart' ? `, ${kafkaName} restarted on its data dir` : '';
      lines.push(`${lost}; Kafka topics kept (${plural(out.topics, 'topic')}${how})`);
      // A lost ledger with kept topics replays into a kept sink only if the sink survived: it did not.
      if (out.topics > 0) {
        lines.push(
          'streams start again from their startingOffsets (the ledger is new); their sink tables were on the emulator too, ' +
            'so no record is applied twice into a kept sink',
        );
      }
    }
  } else if (plan.kafka === 'restart') {
    lines.push(`${kafkaName} had stopped: restarted on its data dir and ports; ${topicsKept}; DynamoDB tables kept`);
  } else if (plan.kafka === 'fresh' && out.hadState) {
    lines.push(
      `${kafkaName} had stopped and its data dir is gone: a fresh one has no topics; DynamoDB tables kept, ` +
        `but their ledgers name topics that are gone (${localCommand('reset')} starts both fresh)`,
    );
  }
  if (out.movedTo?.kafkaBrokers) lines.push(`KAFKA_BROKERS is now ${out.movedTo.kafkaBrokers} (a new port: export it again)`);
  if (out.movedTo?.dynamodbEndpoint) lines.push(`DYNAMODB_ENDPOINT is now ${out.movedTo.dynamodbEndpoint} (a new port: export it again)`);
  return lines;
}

const formatted = (dir: string): boolean => existsSync(join(dir, 'server.properties')) && existsSync(join(dir, 'data', 'meta.properties'));

/** Formatted Kafka node dirs under `kafkaDir`: 1 for a single broker, N for `node-1`..`node-N`, 0 for none. */
export function kafkaDataNodes(kafkaDir: string): number {
  if (formatted(kafkaDir)) return 1;
  let n = 0;
  while (formatted(join(kafkaDir, `node-${n + 1}`))) n++;
  return n;
}

function nodeDirs(kafkaDir: string, nodes: number): string[] {
  return nodes === 1 ? [kafkaDir] : Array.from({ length: nodes }, (_, i) => join(kafkaDir, `node-${i + 1}`));
}

async function observe(prev: StackState | undefined, dir: string, kafkaNodes: number, o: AnswerOptions): Promise<Observed> {
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
async function kafkaFor(plan: UpPlan, prev: StackState | undefined, kafkaDir: string, nodes: number, o: PartOptions): Promise<Part> {
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
async function dynamoFor(plan: UpPlan, prev: StackState | undefined, dir: string, o: PartOptions): Promise<Part> {
  if (plan.dynamodb === 'reuse' && prev) return { address: prev.dynamodbEndpoint, pids: prev.dynamodbPids ?? [], watchdogPids: [] };
  const port = o.env.LOCAL_DYNAMODB_PORT || (await previousPort(prev?.dynamodbEndpoint));
  return startDynamoPart(dir, { ownerPid: o.ownerPid, port, log: o.log });
}

/** How `upPersistent` is called: the node count and listeners asked for, where the stack lives, and how long to wait for a busy one. */
export type UpOptions = {
  kafkaNodes?: number;
  place?: PersistentPlace;
  env?: NodeJS.ProcessEnv;
  secured?: boolean;
  /** How long a live but busy service of the stack may take to answer (default 120 s); it is never replaced. */
  busyWaitMs?: number;
};

/**
 * `npm run local:up` / `npm start`: reuses what still runs of the persistent stack, restarts a dead
 * Kafka on its data dir (topics and records kept), starts a new emulator (in memory: its tables are
 * gone) and says in a line or two what was lost, what Kafka keeps on disk and where the logs are.
 * One caller at a time per stack dir (stack-lock.ts): a second one waits, then finds the first's
 * stack running. KAFKA_BROKERS / DYNAMODB_ENDPOINT are ignored: after `eval "$(npm run -s local:up)"`
 * they name this very stack, which may be the thing that died.
 */
export async function upPersistent(log: Log, opts: UpOptions = {}): Promise<StackState> {
  const place = opts.place ?? PERSISTENT;
  const state = await withStackLock(place.dir, 'started', () => upLocked(log, place, opts), { log });
  reportData(state, log, opts.env ?? process.env);
  return state;
}

async function upLocked(log: Log, place: PersistentPlace, opts: UpOptions): Promise<StackState> {
  const env = opts.env ?? process.env;
  const nodes = opts.kafkaNodes ?? 1;
  const prev = readState(place.stateFile);
  const plan = planUp(await observe(prev, place.dir, nodes, { busyWaitMs: opts.busyWaitMs ?? 120_000, log }));
  if (prev && plan.kafka === 'reuse' && plan.dynamodb === 'reuse') {
    if (opts.secured && !prev.secured) {
      throw new PrerequisiteError(`the local stack runs without secured listeners: ${localCommand('reset')}, then start it with --secured`);
    }
    upReport(plan, { hadState: true, topics: 0, kafkaNodes: nodes }).forEach(log);
    return prev;
  }
  // Something starts: the tools it needs first (installed as root on Debian, else the command to run).
  ensureSystemPackages(log, env);
  await Promise.all(plan.stopPids.map((pid) => stopProcess(pid)));
  // Their watchdogs (test runs) end by themselves once their service is gone.
  const kafkaDir = join(place.dir, 'kafka');
  if (plan.wipeReason) wipeData(place.dir);
  else if (plan.kafka === 'fresh') rmSync(kafkaDir, { recursive: true, force: true });
  mkdirSync(place.dir, { recursive: true });

  const started: Part[] = [];
  const keep = (p: Part): Part => (started.push(p), p);
  const o = { ownerPid: place.ownerPid, log, env, secured: opts.secured };
  const [kafka, dynamo] = await bothOrNone(started, [
    kafkaFor(plan, prev, kafkaDir, nodes, o).then((p) => (plan.kafka === 'reuse' ? p : keep(p))),
    dynamoFor(plan, prev, join(place.dir, 'dynamodb'), o).then((p) => (plan.dynamodb === 'reuse' ? p : keep(p))),
  ]);
  const state = stateOf(place.dir, kafka, dynamo);
  const topics =
    plan.kafka === 'fresh'
      ? 0
      : await topicsLed(state.kafkaBrokers).catch(async (err: unknown) => {
          await stopParts(started);
          throw err;
        });
  writeFileSync(place.stateFile, JSON.stringify(state, null, 2));
  const moved = (was: string | undefined, now: string): string | undefined => (was && was !== now ? now : undefined);
  const movedTo = plan.wipeReason
    ? undefined
    : {
        kafkaBrokers: moved(prev?.kafkaBrokers, state.kafkaBrokers),
        dynamodbEndpoint: moved(prev?.dynamodbEndpoint, state.dynamodbEndpoint),
      };
  upReport(plan, { hadState: prev !== undefined, topics, kafkaNodes: nodes, movedTo }).forEach(log);
  return state;
}

/** Deletes the stack's data but not its lock (held by this caller). */
function wipeData(dir: string): void {
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
function reportData(state: StackState, log: Log, env: NodeJS.ProcessEnv): void {
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
async function topicsLed(brokers: string, timeoutMs = 180_000): Promise<number> {
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

/**
 * `npm run local:down`: stops every process of the persistent stack and returns once they have
 * exited and their ports are free. Kafka's data dir is kept for the next `local:up` (the emulator's
 * tables live in memory and are gone); `wipe` (local:reset) deletes it. Holds the stack's lock, so a
 * `local:up` in another shell waits for it and then starts afresh.
 */
export async function downPersistent(log: Log, opts: { place?: PersistentPlace; wipe?: boolean } = {}): Promise<void> {
  const place = opts.place ?? PERSISTENT;
  await withStackLock(place.dir, opts.wipe ? 'reset' : 'stopped', () => downLocked(log, place, opts.wipe === true), { log });
  if (opts.wipe) {
    try {
      rmdirSync(place.dir);
    } catch {
      // Not empty: another caller has just taken the lock to start it again.
    }
  }
}

async function downLocked(log: Log, place: PersistentPlace, wipe: boolean): Promise<void> {
  if (await stopRecordedRegistry(join(place.dir, 'registry'))) log('schema registry stopped (its schemas, in memory, are gone)');
  const prev = readState(place.stateFile);
  if (prev) {
    const t0 = Date.now();
    // Only the stack's own processes: a dead one's pid may belong to someone else by now.
    // A broker with thousands of partitions may take a while to shut down cleanly (a kill means log recovery at the next start).
    await Promise.all(ownPids(prev).map((pid) => stopProcess(pid, 60_000)));
    await Promise.all((prev.watchdogPids ?? []).filter(isAlive).map((pid) => stopProcess(pid, 1000)));
    await portsFree(stackPorts(prev));
    log(`local stack stopped in ${Date.now() - t0} ms`);
  } else log('no local stack recorded');
  rmSync(place.stateFile, { force: true });
  const kafkaDir = join(place.dir, 'kafka');
  if (wipe) {
    wipeData(place.dir);
    log('local stack data deleted: the next local:up starts fresh');
  } else if (kafkaDataNodes(kafkaDir) > 0) {
    log(`Kafka data kept in ${kafkaDir} for the next local up (${localCommand('reset')} deletes it); DynamoDB tables are gone`);
  }
}

/**
 * The persistent stack's schema registry (`local:up --registry`): started when `start` asks and none
 * of ours answers, else the running one kept; resolves to its Confluent URL, or undefined when none runs.
 * Its schemas live in memory: a restarted registry has none. `local:down` stops it.
 */
export async function upRegistry(
  log: Log,
  opts: { start: boolean; place?: PersistentPlace; env?: NodeJS.ProcessEnv },
): Promise<string | undefined> {
  const place = opts.place ?? PERSISTENT;
  const dir = join(place.dir, 'registry');
  if (!opts.start) {
    const running = readRegistryState(dir);
    return running && (await registryReady(running.url).catch(() => false)) ? running.url : undefined;
  }
  const t0 = Date.now();
  const port = (opts.env ?? process.env).LOCAL_REGISTRY_PORT || undefined;
  const { instance, started } = await ensureRegistry({ dir, cacheDir: CACHE_DIR, ownerPid: place.ownerPid, port });
  log(
    started
      ? `schema registry (Apicurio, Confluent API) started in ${Date.now() - t0} ms (pid ${instance.pid}); log: ${instance.logFile}`
      : 'schema registry already running',
  );
  return instance.url;
}

/** Every port the recorded stack listens on: its brokers' (client, controller, secured) and the emulator's. */
function stackPorts(s: StackState): number[] {
  const kafkaDir = join(s.dir, 'kafka');
  const nodes = s.kafkaBrokers.split(',').length;
  const fromProps = nodeDirs(kafkaDir, nodes).flatMap(nodePorts);
  const recorded = [...s.kafkaBrokers.split(','), s.dynamodbEndpoint].map((a) => Number(a.split(':').at(-1)));
  return [...new Set([...recorded, ...fromProps])].filter((p) => Number.isInteger(p) && p > 0);
}

/** Resolves once nothing listens on `ports`; names the port and its holder after `timeoutMs`. */
async function portsFree(ports: number[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const taken = (await Promise.all(ports.map(async (p) => ((await portInUse(p)) ? p : undefined)))).filter((p) => p !== undefined);
    if (taken.length === 0) return;
    if (Date.now() > deadline) {
      const who = describePortOwner(taken[0] as number);
      throw new PrerequisiteError(
        `the local stack stopped, but port ${taken[0]} is still taken${who ? ` by ${who}` : ''} after ${timeoutMs / 1000} s`,
      );
    }
    await sleep(200);
  }
}

/** `--brokers N` (Kafka nodes of the local stack; default 1). */
export function parseUpArgs(args: string[]): { kafkaNodes: number; secured: boolean } {
  const usage = () =>
    new PrerequisiteError(
      `usage: local:up [--brokers N] [--secured] with N from 1 to 9 (--secured: one broker), not ${JSON.stringify(args.join(' '))}`,
    );
  const { values } = strictArgs(args, { brokers: { type: 'string' }, secured: { type: 'boolean' } }, usage);
  const secured = values.secured === true;
  const n = values.brokers === undefined ? 1 : Number(values.brokers);
  if (!Number.isInteger(n) || n < 1 || n > 9 || (secured && n > 1)) throw usage();
  return { kafkaNodes: n, secured };
}
