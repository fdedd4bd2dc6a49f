/**
 * Chaos scenario `freeze-thaw` (issue 42): Lambda freezes a container between invocations, and a NAT
 * gateway or firewall forgets a connection idle past its timeout without telling either side. A warm
 * function thawed after that holds kept-alive sockets (DynamoDB's HTTP, Kafka's) that look open and
 * never answer: a request sent on one waits for a timeout, or for ever.
 *
 * The packaged functions (`sls package`'s zips under Lambda's runtime emulator, the local Lambda of
 * infra/local/lambda/) reach every service through an idle NAT (test/support/idle-nat.ts): a private
 * broker whose proxied listener is advertised at the Kafka NAT's address (so the broker's own
 * redirects go through it too), the DynamoDB emulator (DYNAMODB_ENDPOINT), the same emulator as the
 * other AWS endpoints (AWS_ENDPOINT_URL), and the local Lambda's Invoke API (the planner dispatches
 * the processor through it). One stream, exactly-once into a sink with `running-totals`, every
 * record a key of its own. The test invokes the planner itself (one-shot runs, no schedule).
 *
 * 1. Warm: records produced, the planner invoked until they are committed.
 * 2. Long freeze: every environment (planner and processor) stopped with SIGSTOP for longer than the
 *    NAT's idle timeout and the functions' connection idle limit (CONNECTION_IDLE_MAX_MS, 10 s by
 *    default), so the NATs forget the functions' connections (checked: the fault fired). Thawed,
 *    new records, the planner invoked: measured from the invocation's start to the last new record
 *    committed. Goal: within 5 s, no request waiting out a timeout.
 * 3. Short freeze: longer than the NAT's idle timeout, shorter than the idle limit, so the planner
 *    keeps its (dead) connections and only timeouts bring them back: measured and reported; it must
 *    finish within the processor's budget. The processor's idle time before its next invocation
 *    includes the planner's recovery, so it may have passed the limit by then (the figures say).
 *
 * Then the sink is compared record by record with what was produced and the ledger's invariants
 * are checked. Everything is stopped and deleted in `finally`: the stack and its environments, the
 * NATs, the broker (its topic with it), the tables.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { startKafka, stopKafka, type KafkaInstance } from '../../infra/local/kafka';
import { runPackagedStack, type PackagedRun } from '../../infra/local/lambda/run-packaged';
import type { InvocationRecord, LocalLambda } from '../../infra/local/lambda/service';
import { freePort } from '../../infra/local/process';
import { CACHE_DIR, LOCAL_DIR } from '../../infra/local/stack/dirs';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import type { Ledger } from '../../lib/ports/ledger';
import { slsPackage } from '../deploy/package';
import { createTopicsReady } from '../support/env';
import { startIdleNat, type IdleNat } from '../support/idle-nat';
import { scanTotals } from '../support/scan';
import { waitFor } from '../support/wait-for';
import type { ChaosEnv } from './env';
import type { ScenarioResult } from './harness';
import { NO_SIDE_FIGURES } from './run-checks';
import { checkInvariants } from './invariants';
import { createScenarioTable, scenarioName } from './scenario-resources';
import { readLedgerSnapshot } from './snapshot.dynamodb';

/** The NATs' idle timeout (AWS's NAT gateway: 350 s), under the local Lambda's keep-alive timeout (5 s), so the NAT forgets first. */
const NAT_IDLE_MS = 4_000;
/** The functions' connection idle limit (CONNECTION_IDLE_MAX_MS): their default, not set here. */
const CONNECTION_IDLE_MAX_MS = 10_000;
/** Longer than both: the functions should drop their connections at the thaw. */
const LONG_FREEZE_MS = 14_000;
/** Longer than the NAT's idle timeout, shorter than the functions' limit (with the time between the invocations around it). */
const SHORT_FREEZE_MS = 6_000;
/** Issue 42's goal: the range committed within 5 s of the planner invocation's start after a thaw. */
const GOAL_MS = 5_000;
/** The processor's function timeout and the stream's processor.timeoutMs (its budget). */
const PROCESSOR_TIMEOUT_MS = 30_000;
/** How long a thawed run is waited for: a request waiting out the Kafka client's 30 s timeout, then a processor's budget. */
const RECOVERY_WAIT_MS = 30_000 + PROCESSOR_TIMEOUT_MS;
const PARTITIONS = 3;
const PER_ROUND = 30;
const REGION = 'us-east-1';

const debug = (line: string): void => {
  if (process.env.CHAOS_DEBUG) console.log(`[freeze-thaw] ${line}`);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const NAT_NAMES = ['kafka', 'dynamodb', 'aws', 'lambda'] as const;
type NatName = (typeof NAT_NAMES)[number];
type Nats = Record<NatName, IdleNat>;
type PerNat = Record<NatName, number>;
const perNat = (f: (name: NatName) => number): PerNat => Object.fromEntries(NAT_NAMES.map((n) => [n, f(n)])) as PerNat;

/** The scenario's running pieces, and what it produced (record key -> amount). */
type Stage = {
  nats: Nats;
  run: PackagedRun;
  producer: Producer;
  admin: Admin;
  topic: string;
  streamId: string;
  planner: string;
  ledger: Ledger;
  ledgerTable: string;
  sinkTable: string;
  produced: Map<string, number>;
};

/** What one thaw showed. */
type Thaw = {
  freezeMs: number;
  /** Connections the NATs forgot while the environments were frozen, per NAT. */
  forgotten: PerNat;
  /** From the first planner invocation's start to the last new record committed; undefined: not within the wait. */
  recoveredMs?: number;
  plannerMs: number[];
  processorMs: number[];
  processorOutcomes: string[];
  /** Bytes the thawed functions sent on forgotten connections, per NAT. */
  voidBytes: PerNat;
  /** Since each function's previous invocation ended (what the functions' idle limit compares). */
  gapMs: { planner?: number; processor?: number };
};

/** Runs the scenario (see the module comment); never throws for a failed check. */
export async function runFreezeThaw(env: ChaosEnv, seed: number, opts: { budgetMs?: number } = {}): Promise<ScenarioResult> {
  const t0 = Date.now();
  const problems: string[] = [];
  const cleanups: Array<() => Promise<unknown>> = [];
  const thaws: Thaw[] = [];
  let stage: Stage | undefined;
  let outcome: Omit<ScenarioResult, 'problems' | 'ok' | 'wallMs' | 'injected'> | undefined;
  // The functions' lines are printed (CHAOS_DEBUG) while the scenario runs, not after its end.
  const lines = { print: true };
  try {
    stage = await setUp(env, cleanups, lines);
    debug(`set up in ${Date.now() - t0} ms`);
    await produceRound(stage);
    const warm = await drive(stage, opts.budgetMs ?? 120_000);
    if (warm.recoveredMs === undefined) problems.push('the warm run did not commit its records');
    else {
      thaws.push(await freezeAndThaw(stage, LONG_FREEZE_MS, cleanups));
      if (thaws[0]!.recoveredMs !== undefined) thaws.push(await freezeAndThaw(stage, SHORT_FREEZE_MS, cleanups));
    }
    problems.push(...thawProblems(thaws));
    outcome = await checkSinkAndLedger(env, stage, seed, problems);
  } catch (err) {
    problems.push(`the scenario failed: ${(err as Error).stack ?? String(err)}`);
  } finally {
    lines.print = false;
    for (const clean of cleanups.reverse()) await clean().catch((err: Error) => problems.push(`clean-up: ${err.message}`));
  }
  const base = outcome ?? emptyOutcome(seed, stage?.produced.size ?? 0);
  return {
    ...base,
    injected: injectedText(thaws),
    // The long freeze's: from the thawed planner's invocation to the new records committed.
    ...(thaws[0]?.recoveredMs !== undefined && { recoveryMs: thaws[0].recoveredMs }),
    problems,
    wallMs: Date.now() - t0,
    ok: problems.length === 0 && base.violations.length === 0 && base.duplicates === 0 && base.losses === 0,
  };
}

/** The NATs, the private broker behind one, the topic, the sink, the packaged stack; each with its clean-up. */
async function setUp(env: ChaosEnv, cleanups: Array<() => Promise<unknown>>, lines: { print: boolean }): Promise<Stage> {
  const id = scenarioName('freeze-thaw');
  const dir = mkdtempSync(join(tmpdir(), 'chaos-freeze-thaw-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const emulator = new URL(process.env.DYNAMODB_ENDPOINT!).host;
  // The Kafka and Lambda NATs learn their upstream once the broker and the local Lambda listen.
  const nats: Nats = {
    kafka: await startIdleNat({ idleTimeoutMs: NAT_IDLE_MS }),
    dynamodb: await startIdleNat({ upstream: emulator, idleTimeoutMs: NAT_IDLE_MS }),
    aws: await startIdleNat({ upstream: emulator, idleTimeoutMs: NAT_IDLE_MS }),
    lambda: await startIdleNat({ idleTimeoutMs: NAT_IDLE_MS }),
  };
  cleanups.push(() => Promise.all(Object.values(nats).map((n) => n.stop())));
  const broker: KafkaInstance = await startKafka({
    dir: join(dir, 'kafka'),
    cacheDir: CACHE_DIR,
    ownerPid: process.pid,
    port: String(await freePort()),
    startTimeoutMs: 60_000,
    proxied: { advertised: nats.kafka.address },
  });
  cleanups.push(() => stopKafka(broker));
  nats.kafka.setUpstream(broker.proxied!.listener);
  // The test's own clients reach the broker directly (its PLAINTEXT listener), never through the NAT.
  const kafka = new Kafka({ clientId: 'chaos-freeze-thaw', brokers: [broker.brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
  cleanups.push(() => Promise.allSettled([admin.disconnect(), producer.disconnect()]));
  const topic = `${id}-t`;
  await createTopicsReady(admin, [{ topic, numPartitions: PARTITIONS }]);
  const sinkTable = await createScenarioTable(env, 'freeze-thaw-sink');
  const run = await packageAndRun(id, { brokers: nats.kafka.address, topic, sinkTable, dir, nats, lines }, cleanups);
  nats.lambda.setUpstream(new URL(run.lambda.endpoint).host);
  const planner = run.stack.functions.find((f) => f.name.endsWith('-planner'))!;
  const ledgerTable = planner.env.LEDGER_TABLE!;
  env.created.tables.push(ledgerTable);
  const ledger = createDynamoLedger({ client: env.ddb, tableName: ledgerTable });
  return { nats, run, producer, admin, topic, streamId: id, planner: planner.name, ledger, ledgerTable, sinkTable, produced: new Map() };
}

/** `sls package` of the one stream, run as deployed with the functions' endpoints on the NATs. */
async function packageAndRun(
  id: string,
  o: { brokers: string; topic: string; sinkTable: string; dir: string; nats: Nats; lines: { print: boolean } },
  cleanups: Array<() => Promise<unknown>>,
): Promise<PackagedRun> {
  const project = join(o.dir, 'project');
  mkdirSync(project);
  const stream = {
    id,
    kafka: { brokers: [o.brokers] },
    topics: [o.topic],
    maxAttempts: 10,
    processor: { timeoutMs: PROCESSOR_TIMEOUT_MS },
    handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: o.sinkTable },
  };
  writeFileSync(join(project, 'streams.json'), JSON.stringify({ ledgerTable: 'named-by-the-stack', streams: [stream] }));
  // A stage of its own: the functions' and the ledger's names follow it, so no other packaged stack is touched.
  const stage = `ft${randomBytes(2).toString('hex')}`;
  const t = Date.now();
  const packaged = slsPackage(stage, REGION, {
    streamsConfig: join(project, 'streams.json'),
    processorTimeout: String(PROCESSOR_TIMEOUT_MS / 1000),
  });
  cleanups.push(async () => rmSync(packaged.dir, { recursive: true, force: true }));
  debug(`packaged in ${Date.now() - t} ms`);
  const runDir = join(LOCAL_DIR, 'test-runs', id);
  cleanups.push(async () => rmSync(runDir, { recursive: true, force: true }));
  const run = await runPackagedStack({
    packageDir: packaged.dir,
    stackName: id,
    awsEndpoint: process.env.DYNAMODB_ENDPOINT!,
    region: REGION,
    dir: runDir,
    cacheDir: CACHE_DIR,
    schedules: false,
    // One environment per function: every invocation after a thaw is a thawed one (a second,
    // cold environment would bring fresh connections and hide the fault).
    maxEnvironments: 1,
    functionEndpoints: { dynamodb: o.nats.dynamodb.url, aws: o.nats.aws.url, lambda: o.nats.lambda.url },
    onLine: (fn, line) => {
      if (o.lines.print) debug(`${fn.split('-').pop()}: ${line.slice(0, 300)}`);
    },
  });
  cleanups.push(() => run.stop());
  return run;
}

/** PER_ROUND new records, keys `r-<n>` (amount n) over the partitions. */
async function produceRound(s: Stage): Promise<void> {
  const first = s.produced.size + 1;
  const messages = Array.from({ length: PER_ROUND }, (_, i) => {
    const n = first + i;
    s.produced.set(`r-${n}`, n);
    return { key: `r-${n}`, value: JSON.stringify({ amount: n }), partition: n % PARTITIONS };
  });
  await s.producer.send({ topic: s.topic, messages });
}

const voidBytes = (n: Nats) => perNat((k) => n[k].bytesIntoTheVoid());
const forgottenBy = (n: Nats) => perNat((k) => n[k].forgotten());
const minus = (a: PerNat, b: PerNat) => perNat((k) => a[k] - b[k]);

/** Freezes every environment for `freezeMs`, thaws them, produces a round and measures its way to the sink. */
async function freezeAndThaw(s: Stage, freezeMs: number, cleanups: Array<() => Promise<unknown>>): Promise<Thaw> {
  await waitFor('the functions to be idle', () => s.run.lambda.idle().then(() => true), { timeoutMs: 60_000 });
  const before = forgottenBy(s.nats);
  const frozen = await freeze(s.run.lambda, freezeMs);
  cleanups.push(async () => frozen.thaw());
  debug(`froze ${frozen.processes} processes in ${frozen.groups.length} environments for ${freezeMs} ms`);
  await sleep(freezeMs);
  const forgotten = minus(forgottenBy(s.nats), before);
  frozen.thaw();
  await produceRound(s);
  const lastEnd = (fn: string) => lastEndOf(s.run.lambda.records, fn);
  const ends = { planner: lastEnd('-planner'), processor: lastEnd('-processor') };
  const voidBefore = voidBytes(s.nats);
  const d = await drive(s, RECOVERY_WAIT_MS);
  const gap = (end: number | undefined, fn: string) => {
    const next = s.run.lambda.records.find((r) => r.function.endsWith(fn) && r.startedAtMs >= d.startedAtMs);
    return end !== undefined && next ? Math.round(next.startedAtMs - end) : undefined;
  };
  const thaw: Thaw = {
    freezeMs,
    forgotten,
    ...(d.recoveredMs !== undefined && { recoveredMs: d.recoveredMs }),
    plannerMs: d.plannerMs,
    processorMs: d.processors.map((r) => Math.round(r.durationMs ?? -1)),
    processorOutcomes: d.processors.map((r) => r.outcome),
    voidBytes: minus(voidBytes(s.nats), voidBefore),
    gapMs: { planner: gap(ends.planner, '-planner'), processor: gap(ends.processor, '-processor') },
  };
  debug(JSON.stringify(thaw));
  return thaw;
}

const lastEndOf = (records: InvocationRecord[], fn: string): number | undefined => {
  const last = records.filter((r) => r.function.endsWith(fn)).at(-1);
  return last ? last.startedAtMs + (last.durationMs ?? 0) : undefined;
};

/**
 * Invokes the planner (one-shot, `{}`), one invocation at a time, a second after the previous one
 * answered, until every produced record is committed or `waitMs` has passed; the time from the first
 * invocation's start to the commit, each planner invocation's time (from here, till its answer or the
 * deadline), and the processor invocations of the while.
 */
async function drive(s: Stage, waitMs: number) {
  const startedAtMs = Date.now();
  const deadline = startedAtMs + waitMs;
  const ends = await logEnds(s);
  const plannerMs: number[] = [];
  let done = false;
  const planner = (async () => {
    while (!done && Date.now() < deadline) {
      const t = Date.now();
      const answered = await beforeDeadline(s.run.lambda.invoke(s.planner, {}), deadline);
      plannerMs.push(Date.now() - t);
      if (!answered) return;
      debug(`planner answered after ${Date.now() - t} ms: ${answered.functionError ?? ''} ${answered.body.slice(0, 300)}`);
      for (let i = 0; i < 10 && !done; i++) await sleep(100);
    }
  })();
  let recoveredMs: number | undefined;
  while (Date.now() < deadline) {
    const parts = await s.ledger.readPartitions(s.streamId);
    if (parts.length === PARTITIONS && parts.every((p) => p.committed >= (ends.get(p.partition) ?? Infinity))) {
      recoveredMs = Date.now() - startedAtMs;
      break;
    }
    await sleep(100);
  }
  done = true;
  await planner;
  // The processor invocation that committed has still to answer: its record comes then.
  if (recoveredMs !== undefined) await beforeDeadline(s.run.lambda.idle(), Date.now() + 10_000);
  const processors = s.run.lambda.records.filter((r) => r.function.endsWith('-processor') && r.startedAtMs >= startedAtMs);
  return { startedAtMs, recoveredMs, plannerMs, processors };
}

/** The log end of every partition of the topic. */
async function logEnds(s: Stage): Promise<Map<number, number>> {
  const offsets = await s.admin.fetchTopicOffsets(s.topic);
  return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
}

/** The promise's value, or undefined once the deadline has passed (it goes on; its failure is dropped). */
async function beforeDeadline<T>(p: Promise<T>, deadline: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), Math.max(0, deadline - Date.now()))));
  try {
    return await Promise.race([p.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Processes of a process group and their states (`T`: stopped), from /proc. */
function groupProcesses(pgid: number): Array<{ pid: number; state: string }> {
  const out: Array<{ pid: number; state: string }> = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // After "pid (comm) ": state, ppid, pgrp, ...
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid) out.push({ pid: Number(name), state: state ?? '?' });
  }
  return out;
}

/**
 * Stops every environment of the local Lambda (SIGSTOP to its process group: shell, emulator,
 * runtime), as Lambda freezes an idle container, and checks that each of their processes stopped.
 * A guard process thaws them even if this one dies before `thaw` (their own watchdogs then end them).
 */
async function freeze(lambda: LocalLambda, freezeMs: number): Promise<{ groups: number[]; processes: number; thaw(): void }> {
  const groups = lambda.environments().map((e) => e.pid);
  const guard = spawn(
    'bash',
    ['-c', `sleep ${Math.ceil(freezeMs / 1000) + 60}; kill -CONT ${groups.map((g) => `-${g}`).join(' ')} 2>/dev/null`],
    { detached: true, stdio: 'ignore' },
  );
  guard.unref();
  let thawed = false;
  const thaw = (): void => {
    if (thawed) return;
    thawed = true;
    for (const g of groups) signal(-g, 'SIGCONT');
    if (guard.pid !== undefined) signal(-guard.pid, 'SIGKILL');
  };
  for (const g of groups) signal(-g, 'SIGSTOP');
  const stopped = await waitFor(
    'every process of the environments to be stopped',
    () => {
      const all = groups.flatMap(groupProcesses);
      return all.every((p) => p.state === 'T') ? all.length : undefined;
    },
    { timeoutMs: 5_000, intervalMs: 20 },
  ).catch((err: Error) => {
    thaw();
    throw err;
  });
  return { groups, processes: stopped, thaw };
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone */
  }
}

/** Problems the thaws show: the fault did not fire, the goal was missed, a run did not finish in its budget. */
function thawProblems(thaws: Thaw[]): string[] {
  const out: string[] = [];
  const [long, short] = thaws;
  if (!long) return out;
  const unforgotten = (['kafka', 'dynamodb'] as const).filter((k) => long.forgotten[k] === 0);
  if (unforgotten.length) out.push(`the NAT forgot no connection of the functions to ${unforgotten.join(' or ')} during the long freeze`);
  if (long.recoveredMs === undefined)
    out.push(`after a ${LONG_FREEZE_MS} ms freeze, the records were not committed within ${RECOVERY_WAIT_MS} ms`);
  else if (long.recoveredMs > GOAL_MS) out.push(`recovery took ${long.recoveredMs} ms > ${GOAL_MS} after a ${LONG_FREEZE_MS} ms freeze`);
  if (!short) {
    out.push('the short freeze was not run: the long one did not recover');
    return out;
  }
  if (short.forgotten.kafka + short.forgotten.dynamodb === 0) out.push('the NATs forgot no connection during the short freeze');
  if (short.recoveredMs === undefined || short.recoveredMs > PROCESSOR_TIMEOUT_MS)
    out.push(`after a ${SHORT_FREEZE_MS} ms freeze, the records were not committed within the processor's ${PROCESSOR_TIMEOUT_MS} ms`);
  const slow = short.processorMs.filter((ms) => ms > PROCESSOR_TIMEOUT_MS);
  if (slow.length || short.processorOutcomes.some((o) => o !== 'ok'))
    out.push(
      `after the short freeze, processor invocations ended ${short.processorOutcomes.join(', ')} in ${short.processorMs.join(', ')} ms`,
    );
  return out;
}

/** The sink record by record against what was produced, and the ledger's invariants. */
async function checkSinkAndLedger(env: ChaosEnv, s: Stage, seed: number, problems: string[]) {
  const sink = await scanTotals(env.ddb, s.sinkTable);
  let duplicates = 0;
  for (const [k, v] of sink) {
    const amount = s.produced.get(k);
    if (amount === undefined) problems.push(`sink holds ${k}, which was never produced`);
    else if (v.total !== amount * v.count) problems.push(`sink total of ${k} is ${v.total}, expected ${amount} x ${v.count}`);
    duplicates += Math.max(0, v.count - 1);
  }
  const applied = [...s.produced.keys()].filter((k) => sink.has(k)).length;
  const violations = checkInvariants(await readLedgerSnapshot(env.ddb, s.ledgerTable, s.streamId));
  const records = s.run.lambda.records;
  const processors = records.filter((r) => r.function.endsWith('-processor'));
  const statuses: Record<string, number> = {};
  for (const r of processors) for (const st of statusesOf(r)) statuses[st] = (statuses[st] ?? 0) + 1;
  return {
    ...emptyOutcome(seed, s.produced.size),
    applied,
    duplicates,
    losses: s.produced.size - applied,
    violations,
    rounds: records.filter((r) => r.function.endsWith('-planner')).length,
    invocations: processors.length,
    processorErrors: processors.filter((r) => r.outcome !== 'ok').length,
    statuses,
  };
}

/** The statuses a processor invocation answered (one range, or a shared invocation's ranges), else its outcome. */
function statusesOf(r: InvocationRecord): string[] {
  try {
    const a = JSON.parse(r.answer) as { status?: string; ranges?: Array<{ status: string }> };
    return a.ranges ? a.ranges.map((x) => x.status) : [a.status ?? r.outcome];
  } catch {
    return [r.outcome];
  }
}

function emptyOutcome(seed: number, produced: number) {
  return {
    scenario: 'freeze-thaw' as const,
    seed,
    produced,
    expected: produced,
    applied: 0,
    duplicates: 0,
    losses: produced,
    ...NO_SIDE_FIGURES,
    violations: [] as ScenarioResult['violations'],
    rounds: 0,
    invocations: 0,
    processorErrors: 0,
    statuses: {} as Record<string, number>,
  };
}

/** One line: each freeze, what the NATs forgot, the way back to the sink, the bytes sent into the void. */
function injectedText(thaws: Thaw[]): string {
  const sum = (r: PerNat) => Object.values(r).reduce((a, b) => a + b, 0);
  const per = (r: PerNat) => `kafka ${r.kafka}, dynamodb ${r.dynamodb}, aws ${r.aws}, lambda ${r.lambda}`;
  const ms = (xs: number[]) => (xs.length ? xs.map((x) => `${x}`).join(' + ') : '-');
  const s = (x?: number) => (x === undefined ? '?' : `${(x / 1000).toFixed(1)} s`);
  const one = (t: Thaw) =>
    `frozen ${t.freezeMs / 1000} s (idle between invocations: planner ${s(t.gapMs.planner)}, processor ${s(t.gapMs.processor)}): ` +
    `NATs forgot ` +
    `${sum(t.forgotten)} connections (${per(t.forgotten)}); new records committed ` +
    `${t.recoveredMs === undefined ? `not within ${RECOVERY_WAIT_MS}` : t.recoveredMs} ms after the planner invocation started ` +
    `(planner invocations ${ms(t.plannerMs)} ms, processor ${ms(t.processorMs)} ms); ` +
    `${sum(t.voidBytes)} bytes sent into the void (${per(t.voidBytes)})`;
  const head =
    `packaged planner and processor behind idle NATs (forget after ${NAT_IDLE_MS / 1000} s) to Kafka, DynamoDB, AWS and Lambda, ` +
    `functions' connection idle limit ${CONNECTION_IDLE_MAX_MS / 1000} s`;
  return [head, ...thaws.map(one)].join('; ');
}
