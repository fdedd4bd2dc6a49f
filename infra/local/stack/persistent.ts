/**
 * The persistent stack of `npm start` and `local:up` / `local:down` / `local:reset`, one caller at a
 * time under its lock: reuses what still runs, restarts a dead Kafka on its data dir (kept across
 * restarts), starts what is missing, records the state and says what was lost; stops it all again.
 */
import { mkdirSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ownPids } from '../observe';
import { isAlive, stopProcess } from '../process';
import { stopRecordedRegistry } from '../registry';
import { withStackLock } from '../stack-lock';
import { ensureSystemPackages } from '../system-packages';
import { PrerequisiteError } from '../../../lib/errors';
import { localCommand } from '../../../lib/local/cli-hint';
import { reportData, topicsLed, wipeData } from './data';
import { kafkaDataNodes } from './kafka-dirs';
import { bothOrNone, stateOf, stopParts, type Log, type Part } from './parts';
import { planUp, upReport } from './plan-up';
import { portsFree, stackPorts } from './ports';
import { dynamoFor, kafkaFor, observe } from './restart';
import { PERSISTENT, readState, type PersistentPlace, type StackState } from './state';

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
