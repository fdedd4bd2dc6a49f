/**
 * Chaos scenario `load`: the local runtime (`createLocalRunner` over `composeAdapters`, as `npm
 * start` runs it) drains a stream over 240 partitions split into small ranges (about 960 in flight
 * after the first planner run) while 10% of its DynamoDB requests are throttled. Every record must be
 * applied exactly once with no invariant violation, and the process must behave like warm Lambdas
 * under reserved concurrency: open sockets after the drain back near where they started, resident
 * memory bounded, the SDK never short of sockets, and the planner's DynamoDB requests per run not
 * growing with the ranges in flight.
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { checkInvariants } from './invariants';
import { readLedgerSnapshot } from './snapshot.dynamodb';
import { parseStreamConfig, type StreamConfig } from '../../lib/config/schema';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { createLocalRunner, runnerDepsFrom, type RunnerStats } from '../../lib/runtime/local';
import type { RecordsHandler } from '../../lib/processor/handler-api';
import { DEFAULT_LOCAL_CONCURRENCY } from '../../lib/dispatch/dispatcher.local';
import { composeAdapters, dynamoClientFromEnv, localDynamoClientOptions, type Adapters } from '../../lib/runtime/compose';
import { createScenarioLedger, createScenarioTable, createScenarioTopics, scenarioName } from './scenario-resources';
import type { ChaosEnv, ScenarioResult } from './harness';
import { NO_SIDE_FIGURES } from './run-checks';
import { scanTotals } from '../support/scan';

const PARTITIONS = 240;
const PER_PARTITION = 20;
/** Ranges of 5 offsets: 4 per partition, 960 in flight after the first run. */
const RANGE_SIZE = 5;
const THROTTLED = 0.1;
const READER_IDLE_MS = 1000;
/** Sockets the process may hold after the drain beyond those before it (the metadata connection, the store clock's). */
const SOCKET_SLACK = 8;
/**
 * How much the process may grow while it drains 4,800 small records: the readers of the processor
 * slots, the SDK's sockets and V8's heap headroom. With a reader and a processor per range in
 * flight (960 at once) it grew by over 500 MB and stayed there. At its peak the resident set also
 * holds garbage V8 has not collected yet: in the full suite, where this worker starts the drain at
 * ~700 MB, the peak rose 265 MB above it and fell to 130 MB below it after. So the peak may rise by
 * `RSS_PEAK_GROWTH_MAX_MB`, and what stays after the drain by `RSS_GROWTH_MAX_MB`.
 */
const RSS_PEAK_GROWTH_MAX_MB = 400;
const RSS_GROWTH_MAX_MB = 256;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Open sockets of this process (Linux: /proc/self/fd), else the TCP handles Node reports. */
export function openSockets(): number {
  try {
    return readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:');
      } catch {
        return false; // closed while listing
      }
    }).length;
  } catch {
    return process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
  }
}

/** Resident set size in MB (from /proc when available: `memoryUsage().rss` is the same figure). */
const rssMb = (): number => {
  try {
    const pages = Number(readFileSync('/proc/self/statm', 'utf8').split(' ')[1]);
    return Math.round((pages * 4096) / 2 ** 20);
  } catch {
    return Math.round(process.memoryUsage().rss / 2 ** 20);
  }
};

type Samples = { sockets: number[]; rssMb: number[] };
const emptySamples = (): Samples => ({ sockets: [], rssMb: [] });
const sample = (s: Samples): void => {
  s.sockets.push(openSockets());
  s.rssMb.push(rssMb());
};

/** Produces PER_PARTITION records to every partition (key `r-<id>`, amount id); returns id -> where it went. */
async function produceAll(env: ChaosEnv, topic: string): Promise<Map<string, { id: number }>> {
  const produced = new Map<string, { id: number }>();
  let nextId = 1;
  for (let p0 = 0; p0 < PARTITIONS; p0 += 40) {
    const messages = [];
    for (let p = p0; p < Math.min(PARTITIONS, p0 + 40); p++)
      for (let i = 0; i < PER_PARTITION; i++) {
        const id = nextId++;
        produced.set(`r-${id}`, { id });
        messages.push({ key: `r-${id}`, value: JSON.stringify({ amount: id }), partition: p });
      }
    await env.producer.send({ topic, messages });
  }
  return produced;
}

type Tally = { requests: number; throttled: number; warnings: string[]; byCommand: Map<string, { n: number; ms: number }> };

/**
 * The runtime's one DynamoDB client (ledger, store clock, sink), sized as `npm start` sizes it, with
 * THROTTLED of its requests refused before they are sent (inside the SDK's retries, which see them)
 * and the HTTP handler's warnings kept.
 */
function throttledClient(seed: number, tally: Tally): DynamoDBClient {
  let a = seed >>> 0;
  const rng = () => (a = (Math.imul(a ^ (a >>> 15), 1 | a) + 0x6d2b79f5) >>> 0) / 4294967296;
  const dynamo = dynamoClientFromEnv(process.env, {
    ...localDynamoClientOptions(DEFAULT_LOCAL_CONCURRENCY),
    logger: { warn: (m) => tally.warnings.push(m) },
  });
  dynamo.middlewareStack.add(
    (next) => async (args) => {
      tally.requests++;
      if (rng() < THROTTLED) {
        tally.throttled++;
        throw new ProvisionedThroughputExceededException({ message: 'chaos: throttled', $metadata: { httpStatusCode: 400 } });
      }
      return next(args);
    },
    { step: 'deserialize', name: 'chaosThrottle', priority: 'low' },
  );
  // Per command: requests (SDK retries aside) and their wall time, for CHAOS_DEBUG.
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const t = performance.now();
      try {
        return await next(args);
      } finally {
        const c = tally.byCommand.get(context.commandName as string) ?? { n: 0, ms: 0 };
        c.n++;
        c.ms += performance.now() - t;
        tally.byCommand.set(context.commandName as string, c);
      }
    },
    { step: 'initialize', name: 'loadTally' },
  );
  return dynamo;
}

/** The topic (produced), the sink, a ledger of its own and the stream config. */
async function setUp(env: ChaosEnv) {
  const id = scenarioName('load');
  const topic = `${id}-t`;
  await createScenarioTopics(env, [{ topic, numPartitions: PARTITIONS }], 60_000);
  const produced = await produceAll(env, topic);
  const sinkTable = await createScenarioTable(env, 'load-sink');
  // A ledger of its own: the emulator's transactions cost in proportion to the tables they touch.
  const ledgerTable = await createScenarioLedger(env, 'load-ledger');
  const stream = parseStreamConfig(
    {
      id,
      kafka: { brokers: (process.env.KAFKA_BROKERS as string).split(',') },
      topics: [topic],
      triggerIntervalMs: 1000,
      split: { orderInsensitive: true, maxRangeSize: RANGE_SIZE },
      maxAttempts: 12,
      // Long enough that a processor waiting on a busy emulator is not stopped by its deadline, and
      // that ranges waiting in the queue are not sent again as never started (a processor that
      // fails records it, and its range is sent again at once).
      processor: { timeoutMs: 20_000, leaseMs: 60_000 },
      handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
    },
    'chaos load',
  );
  return { id, produced, sinkTable, ledgerTable, stream };
}

type Drain = {
  before: Samples;
  during: Samples;
  after: Samples;
  readersOpen: number[];
  startedAt: number;
  drainedAtMs?: number;
  firstHandledAtMs?: number;
  stats: RunnerStats;
};

/**
 * Runs the local runtime until every partition is committed to its end (or the budget is spent),
 * sampling sockets and RSS before, every 250 ms during, and after it idled with its planner still
 * running (readers released); then stops it.
 */
async function drain(env: ChaosEnv, adapters: Adapters, stream: StreamConfig, warnings: string[], deadlineMs: number): Promise<Drain> {
  const d: Drain = {
    before: emptySamples(),
    during: emptySamples(),
    after: emptySamples(),
    readersOpen: [],
    startedAt: 0,
    stats: undefined as never,
  };
  const deps = runnerDepsFrom(adapters, (l) => warnings.push(l));
  const handlerFor = (s: StreamConfig): RecordsHandler => {
    const inner = deps.handlerFor(s);
    const handle = (async (records: never, ctx: never) => {
      d.firstHandledAtMs ??= Date.now();
      return (inner.handle as (r: never, c: never) => unknown)(records, ctx);
    }) as RecordsHandler['handle'];
    return { ...inner, handle } as RecordsHandler;
  };
  // Readers idle for a second are closed (the default is 10 s), so the drained state shows quickly.
  const runner = createLocalRunner({ ...deps, handlerFor, readerIdleMs: READER_IDLE_MS }, [stream]);
  const clean = createDynamoLedger({ client: env.ddb, tableName: adapters.config.ledgerTable });
  sample(d.before);
  d.startedAt = Date.now();
  const sampler = setInterval(() => {
    sample(d.during);
    d.readersOpen.push(runner.stats().readersOpen);
  }, 250);
  try {
    runner.start();
    while (Date.now() < deadlineMs) {
      await sleep(500);
      const parts = await clean.readPartitions(stream.id);
      if (parts.length === PARTITIONS && parts.every((p) => p.committed === PER_PARTITION)) {
        d.drainedAtMs = Date.now();
        break;
      }
    }
    clearInterval(sampler);
    await runner.idle();
    // Idle like a long `npm start` between bursts: the planner keeps running, idle readers are closed.
    await sleep(READER_IDLE_MS + 1500);
    sample(d.after);
  } finally {
    clearInterval(sampler);
    await runner.stop({ graceMs: 5000 });
  }
  d.stats = runner.stats();
  return d;
}
/** Scans the sink: records applied (of those produced), extra applications, and anything wrong in it. */
async function checkSink(env: ChaosEnv, sinkTable: string, produced: Map<string, { id: number }>) {
  const problems: string[] = [];
  const sink = await scanTotals(env.ddb, sinkTable);
  let duplicates = 0;
  for (const [k, v] of sink) {
    const r = produced.get(k);
    if (!r) problems.push(`sink holds ${k}, which was never produced`);
    else if (v.total !== r.id * v.count) problems.push(`sink total of ${k} is ${v.total}, expected ${r.id} x ${v.count}`);
    duplicates += Math.max(0, v.count - 1);
  }
  const applied = [...produced.keys()].filter((k) => sink.has(k)).length;
  return { applied, duplicates, problems };
}

/** What the samples say, and the problems they show: sockets back near the start, no SDK socket warning. */
function resourceFigures(d: Drain, tally: Tally): { text: string; problems: string[] } {
  const peak = (xs: number[]) => Math.max(0, ...xs);
  const [socketsBefore, socketsAfter] = [d.before.sockets[0] ?? 0, d.after.sockets[0] ?? 0];
  const problems: string[] = [];
  if (socketsAfter > socketsBefore + SOCKET_SLACK) problems.push(`${socketsAfter} sockets open after the drain, ${socketsBefore} before`);
  const rssBeforeMb = d.before.rssMb[0] ?? 0;
  const rssPeakGrowthMb = peak([...d.during.rssMb, ...d.after.rssMb]) - rssBeforeMb;
  const rssKeptMb = (d.after.rssMb[0] ?? 0) - rssBeforeMb;
  if (rssPeakGrowthMb > RSS_PEAK_GROWTH_MAX_MB)
    problems.push(`RSS grew by ${rssPeakGrowthMb} MB during the drain (at most ${RSS_PEAK_GROWTH_MAX_MB} MB allowed)`);
  if (rssKeptMb > RSS_GROWTH_MAX_MB)
    problems.push(`RSS stayed ${rssKeptMb} MB above its start after the drain (at most ${RSS_GROWTH_MAX_MB} MB allowed)`);
  const sdk = tally.warnings.filter((w) => w.includes('socket usage at capacity'));
  if (sdk.length) problems.push(`the DynamoDB client ran out of sockets: ${sdk[0]}`);
  const text =
    `sockets ${socketsBefore} before, ${peak(d.during.sockets)} at most during, ${socketsAfter} after; ` +
    `RSS ${d.before.rssMb[0]} MB before, ${peak([...d.during.rssMb, ...d.after.rssMb])} MB at most, ${d.after.rssMb[0]} MB after; ` +
    `at most ${peak(d.readersOpen)} range readers open (${DEFAULT_LOCAL_CONCURRENCY} processors at once)`;
  return { text, problems };
}

/** Runs the `load` scenario (see the module comment); never throws for a failed check. */
export async function runLoad(env: ChaosEnv, seed: number, opts: { budgetMs?: number } = {}): Promise<ScenarioResult> {
  const t0 = Date.now();
  const budgetMs = opts.budgetMs ?? 360_000;
  const { id, produced, sinkTable, ledgerTable, stream } = await setUp(env);
  const tally: Tally = { requests: 0, throttled: 0, warnings: [], byCommand: new Map() };
  const dynamo = throttledClient(seed, tally);
  const adapters = composeAdapters({ config: { ledgerTable, streams: [stream] }, env: process.env, dynamo });
  let d: Drain;
  try {
    // The budget starts with the runtime: creating 240 partitions and producing is set-up.
    d = await drain(env, adapters, stream, tally.warnings, Date.now() + budgetMs);
  } finally {
    await adapters.close();
  }
  const sink = await checkSink(env, sinkTable, produced);
  const violations = checkInvariants(await readLedgerSnapshot(env.ddb, ledgerTable, id));
  const resources = resourceFigures(d, tally);
  const problems = [...sink.problems, ...resources.problems];
  if (!d.drainedAtMs) problems.push(`did not drain within ${budgetMs} ms`);
  const since = (ms?: number) => (ms ? `${ms - d.startedAt} ms` : '-');
  const injected =
    `${PARTITIONS} partitions x ${PER_PARTITION} records in ranges of ${RANGE_SIZE} (${(PARTITIONS * PER_PARTITION) / RANGE_SIZE} ranges) through the local runtime; ` +
    `${tally.throttled} of ${tally.requests} DynamoDB requests throttled (${THROTTLED * 100}%); ${resources.text}; ` +
    `first record handled after ${since(d.firstHandledAtMs)}, drained after ${since(d.drainedAtMs)} with ${d.stats.plannerRuns} planner runs (longest ${d.stats.maxPlannerRunMs} ms)`;
  if (process.env.CHAOS_DEBUG)
    console.log(JSON.stringify(Object.fromEntries([...tally.byCommand].map(([k, v]) => [k, { n: v.n, avgMs: Math.round(v.ms / v.n) }]))));
  const ok = problems.length === 0 && violations.length === 0 && sink.duplicates === 0 && sink.applied === produced.size;
  return {
    scenario: 'load',
    seed,
    injected,
    produced: produced.size,
    expected: produced.size,
    applied: sink.applied,
    duplicates: sink.duplicates,
    losses: produced.size - sink.applied,
    ...NO_SIDE_FIGURES,
    violations,
    problems,
    rounds: d.stats.plannerRuns,
    invocations: d.stats.invocations,
    processorErrors: d.stats.byStatus.error ?? 0,
    statuses: Object.fromEntries(Object.entries(d.stats.byStatus).map(([k, v]) => [k, v ?? 0])),
    wallMs: Date.now() - t0,
    ok,
  };
}
