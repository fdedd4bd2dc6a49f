/**
 * The planner loop as it is deployed: the real planner Lambda handler invoked the way its schedule
 * invokes it (one invocation per period, a Lambda context counting down, overlapping invocations),
 * processors through the real processor handler in this process, on the broker and the emulator.
 * Under load, each invocation hands over to the next at its next due tick: one invocation ticks at a
 * time, a duplicate delivery leaves at once, and the exactly-once sink ends exact. A planner killed
 * mid-loop (SIGKILL, in a process of its own) is replaced by the next invocation once its loop lease
 * expires, and nothing is lost or applied twice.
 */
import { spawn } from 'node:child_process';
import { Partitioners, type Producer } from 'kafkajs';
import { createPlannerHandler } from '../../functions/planner';
import { handler as processor } from '../../functions/processor';
import { createInProcessDispatcher } from '../../lib/dispatch/dispatcher.local';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { lambdaContext, runSchedule } from '../../lib/runtime/scheduled-invocations';
import type { StreamLoopReport } from '../../lib/planner/loop';
import type { Ledger } from '../../lib/ports/ledger';
import { PACKAGE_ROOT } from '../../lib/paths';
import { awsRuntime, resetAwsRuntime, type Runtime } from '../../lib/runtime/aws';
import { createSinkTable, createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';
import { scanTotals } from '../support/scan';
import { waitFor } from '../support/wait-for';

jest.setTimeout(240_000);

const ddb = testDynamo();
const admin = testKafka('loop-it').admin();
const ledgerTable = uniqueName('loop-ledger');
const saved = { ...process.env };
const PARTITIONS = 4;
const ACCOUNTS = 40;

type LoopResult = { loop: true; streams: StreamLoopReport[] };

/** A stream of exactly-once running totals over a fresh topic, ticking every second; the config in STREAMS_CONFIG. */
async function exactlyOnceStream(name: string) {
  const topic = uniqueName(name);
  const sinkTable = await createSinkTable(ddb, `${name}-sink`);
  await createTopicsReady(admin, [{ topic, numPartitions: PARTITIONS }]);
  const stream = {
    id: topic,
    kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
    topics: [topic],
    triggerIntervalMs: 1000,
    handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
    processor: { timeoutMs: 5_000, leaseMs: 6_000 },
    // Processors have 5 s: on a machine busy with other suites one can run out of time more than
    // the default 3 times, and a parked range would leave the sink short for a reason these tests are not about.
    maxAttempts: 10,
  };
  process.env.STREAMS_CONFIG = JSON.stringify({ ledgerTable, streams: [stream] });
  await resetAwsRuntime();
  return { topic, sinkTable, id: topic };
}

/** Produces `perSec` records a second over the accounts until stopped; keeps what each account should total. */
function producing(producer: Producer, topic: string, perSec: number) {
  const expected = new Map<string, number>();
  let n = 0;
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const batch = Array.from({ length: perSec / 10 }, () => {
        const account = `acct-${n % ACCOUNTS}`;
        const amount = (n++ % 7) + 1;
        expected.set(account, (expected.get(account) ?? 0) + amount);
        return { key: account, value: JSON.stringify({ amount }) };
      });
      await producer.send({ topic, acks: -1, messages: batch });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    expected,
    count: () => n,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

/** The runtime, with every planner lease take (one per tick) recorded: who ticked, when. */
function recordingRuntime() {
  const ticks: Array<{ owner: string; atMs: number }> = [];
  const rt = awsRuntime(process.env);
  const ledger: Ledger = {
    ...rt.ledger,
    acquirePlannerLease: async (input) => {
      const lease = await rt.ledger.acquirePlannerLease(input);
      // The loop's run tokens are `<request id>:<invocation start>:<tick start>`.
      if (lease.acquired) ticks.push({ owner: input.ownerToken.split(':')[0] as string, atMs: input.nowMs });
      return lease;
    },
  };
  const runtime: Runtime = { ...rt, ledger };
  return { ticks, runtime: () => runtime };
}

/** The planner handler as deployed, with processors through the processor handler in this process. */
function deployedShape(runtime?: () => Runtime) {
  const dispatcher = createInProcessDispatcher((range) => processor(range, lambdaContext(`p-${Date.now()}`, 5_000, 'processor')));
  const planner = createPlannerHandler({ dispatcher, runtime });
  return { dispatcher, invoke: (event: unknown, context: Parameters<typeof planner>[1]) => planner(event, context) as Promise<LoopResult> };
}

/**
 * Invokes the loop (5 s invocations) until the sink holds everything produced, for up to 2 minutes:
 * on a machine busy with other suites a drain takes more ticks than on a quiet one.
 */
async function drain(shape: ReturnType<typeof deployedShape>, stream: string, sinkTable: string, expected: Map<string, number>) {
  const seen: string[] = [];
  for (let i = 0, giveUpAt = Date.now() + 120_000; Date.now() < giveUpAt; i++) {
    const res = await shape.invoke({ loop: true }, lambdaContext(`drain-${i}`, 5000));
    const rep = res.streams[0];
    seen.push(`${rep?.outcome}/${rep?.ticks}${rep?.reason ? ` (${rep.reason})` : ''}`);
    await shape.dispatcher.idle();
    const totals = await scanTotals(ddb, sinkTable);
    if ([...expected].every(([a, t]) => totals.get(a)?.total === t)) return totals;
  }
  // Not drained: say what the loop and the ledger did, so a failure shows stuck planning, not only short totals.
  const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });
  const open = (await ledger.readOpenRanges(stream)).map((r) => `${r.partition}@${r.from}:${r.status}x${r.attempts}`);
  const parts = (await ledger.readPartitions(stream)).map((p) => `${p.partition}:${p.status} committed ${p.committed} next ${p.nextFrom}`);
  process.stderr.write(
    `planner-loop drain: not drained; invocations (outcome/ticks) ${seen.join(', ')}; ` +
      `partitions ${parts.join('; ')}; open ranges ${open.join(' ') || 'none'}\n`,
  );
  return scanTotals(ddb, sinkTable);
}

beforeAll(async () => {
  await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect()]);
});
afterAll(async () => {
  process.env = saved;
  await resetAwsRuntime();
  await admin.disconnect();
  ddb.destroy();
});

it('hands over from invocation to invocation under load: one ticks at a time, a duplicate leaves, the sink is exact', async () => {
  const { topic, sinkTable } = await exactlyOnceStream('loop-handover');
  const producer = testKafka('loop-producer').producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const load = producing(producer, topic, 500);
  const rec = recordingRuntime();
  const shape = deployedShape(rec.runtime);
  // A duplicate delivery of the second schedule, at the same moment.
  const duplicate = (async () => {
    await new Promise((r) => setTimeout(r, 4000));
    return shape.invoke({ loop: true }, lambdaContext('duplicate', 8000));
  })();
  const runs = await runSchedule({ invoke: shape.invoke, event: { loop: true }, periodMs: 4000, timeoutMs: 8000, invocations: 4 });
  const dup = await duplicate;
  await load.stop();
  await producer.disconnect();

  expect(runs.map((r) => r.error)).toEqual([undefined, undefined, undefined, undefined]);
  const outcomes = runs.map((r) => r.result?.streams[0]?.outcome);
  // Each schedule hands over to the next; the last runs until its time is up. The second schedule and
  // its duplicate arrived together: one waited and ticked, the other found it waiting and left.
  expect([outcomes[0], outcomes[2], outcomes[3]]).toEqual(['handed-over', 'handed-over', 'time-up']);
  expect([outcomes[1], dup.streams[0]?.outcome].sort()).toEqual(['handed-over', 'not-taken']);
  const reports = [runs[0], runs[1], runs[2], runs[3]].map((r) => r?.result?.streams[0]);
  const loops = [reports[0], outcomes[1] === 'handed-over' ? reports[1] : dup.streams[0], reports[2], reports[3]];
  // One invocation ticks at a time: once the next has ticked, the one before never ticks again.
  const owners = rec.ticks.map((t) => t.owner);
  const order = owners.filter((o, i) => o !== owners[i - 1]);
  expect(new Set(order).size).toBe(order.length);
  expect(order).toHaveLength(4);
  // Hand-overs leave about one interval (1 s) between ticks: never less (two owners' ticks too close), and
  // well under the 4 s schedule period (a lost hand-over waits for the next schedule). A tick of a machine
  // busy with other suites waits behind the emulator's queue for a second or two more.
  const gaps = loops.slice(1).map((r) => r?.handoverGapMs ?? -1);
  expect({ gaps, inBounds: gaps.every((g) => g >= 900 && g <= 3500) }).toEqual({ gaps, inBounds: true });
  expect(loops.slice(0, 3).every((r) => (r?.ticks ?? 0) >= 3)).toBe(true);

  const totals = await drain(shape, topic, sinkTable, load.expected);
  expect(load.count()).toBeGreaterThan(5000);
  expect(new Map([...totals].map(([a, t]) => [a, t.total]))).toEqual(load.expected);
});

it('replaces a planner killed mid-loop once its loop lease expires; nothing is lost or applied twice', async () => {
  const { topic, id, sinkTable } = await exactlyOnceStream('loop-kill');
  const producer = testKafka('loop-kill-producer').producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const load = producing(producer, topic, 300);
  const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });
  // Node itself with tsx as its loader: the tsx command would run the script in a child process of its own, which a kill would orphan.
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/planner-invocation.ts', '60000', 'doomed'], {
    cwd: PACKAGE_ROOT,
    env: process.env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let said = '';
  child.stderr?.on('data', (d: Buffer) => void (said += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_code, signal) => r(signal)));
  try {
    // Kill it once it holds the loop and has ticked three times (and its processors have work in hand).
    // The child's exit ends the wait too, so that a planner that died early fails at once, with what it said.
    const state = async () => ({ meta: await ledger.readMeta(id), exitCode: child.exitCode });
    const ticked = (s: Awaited<ReturnType<typeof state>>): boolean => !!s.meta?.loop?.ownerToken?.startsWith('doomed') && s.meta.epoch >= 3;
    const seen = await waitFor('the planner process to hold the loop and tick three times', state, {
      until: (s) => ticked(s) || s.exitCode !== null,
      timeoutMs: 60_000,
    }).catch((err: Error) => {
      throw new Error(`${err.message}; it said: ${said}`, { cause: err });
    });
    if (!ticked(seen)) throw new Error(`the planner process never ticked three times: ${said}`);
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const killedAtMs = Date.now();
    const held = (await ledger.readMeta(id))?.loop;
    expect(held?.ownerToken).toMatch(/^doomed/);
    // The next schedule waits as the successor until the dead holder's lease expires, then ticks.
    const shape = deployedShape();
    const next = await shape.invoke({ loop: true }, lambdaContext('next', 45_000));
    const rep = next.streams[0];
    expect(rep?.outcome).toBe('time-up');
    expect(rep?.waitedMs).toBeGreaterThan(0);
    expect(rep?.holderSinceMs).toBeGreaterThanOrEqual(held?.expiresAtMs ?? Infinity);
    expect(rep?.ticks).toBeGreaterThan(5);
    expect(Date.now() - killedAtMs).toBeLessThan(60_000);
    await load.stop();
    const totals = await drain(shape, id, sinkTable, load.expected);
    expect(new Map([...totals].map(([a, t]) => [a, t.total]))).toEqual(load.expected);
  } finally {
    child.kill('SIGKILL');
    await producer.disconnect();
  }
});
