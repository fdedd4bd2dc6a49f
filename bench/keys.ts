/**
 * `npm run bench:keys`: the ledger's write units per DynamoDB partition key with many busy
 * partitions in one stream (default 10 topics x 100 = 1,000) at a 1 s trigger, counted from the
 * requests sent. First the planner registers every partition (a burst under the stream's own key:
 * its busiest second is reported). Then, tick after tick: one record to every partition, a planner
 * tick (planStream, as a loop's tick does), and the invocations it dispatched run to completion
 * through the processor in this process (processRanges, small ranges shared). Each write is counted
 * under its item's partition key at the largest size the item had (sampled after every tick) and
 * under its tick: at a 1 s trigger a tick's writes fall in its second, so units per key per tick
 * are units per key per second. The processors run after the tick, not beside it, so the tick's time
 * is the planner's alone: on the emulator, and estimated for DynamoDB from the planner's own time
 * (the tick's time with no request in flight) plus its requests in sequence at DYNAMODB_REQUEST_MS.
 * At the end, `partitionsCaughtUp` counts the partitions whose committed offset is past every record.
 *
 * Flags: --topics N --partitions N --ticks N --keep. The last line printed is one JSON object.
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { parseDeploymentConfig, type StreamConfig } from '../lib/config/schema';
import { createInProcessDispatcher } from '../lib/dispatch/dispatcher.local';
import { quietKafkaLog } from '../lib/kafka/client';
import { ensureLedgerTable } from '../lib/ledger/table';
import { planStream, type StreamPlanReport } from '../lib/planner/run';
import { processRanges } from '../lib/processor/process-range';
import { rangesOfPayload } from '../lib/ranges';
import { composeAdapters, dynamoClientFromEnv, LOCAL_EMULATOR_LIMITS } from '../lib/runtime/compose';
import { wholeNumberOption } from '../lib/cli/args';
import { benchArgs, benchLog, benchProgram, runBench } from './cli';
import { countRequestsByRole } from './request-counts';
import { median } from './stats';
import { createBusyTopics } from './busy-topics';
import { withStack, type BenchStack } from './stack';
import { storedSizes } from './drain';
import { writesOfRequest, writeUnitsFor, type ItemWrite } from './write-units';

const log = benchLog('keys');

const program = benchProgram('keys', "the ledger's write units per DynamoDB partition key with many busy partitions in one stream")
  .addOption(wholeNumberOption('--topics <n>', 'busy topics', 10))
  .addOption(wholeNumberOption('--partitions <n>', 'partitions per topic', 100))
  .addOption(wholeNumberOption('--ticks <n>', 'planner ticks under load', 10));

async function main(): Promise<void> {
  const { keep, ...flags } = benchArgs<Flags & { keep: boolean }>(program);
  await withStack(log, { keep }, (stack) => benchKeys(stack, flags));
}

type Flags = { topics: number; partitions: number; ticks: number };
/** One ledger write as sent: when, in which tick (-1: registration), to which item, transactional or not. */
type Sent = { atMs: number; tick: number; write: ItemWrite };

/**
 * What one DynamoDB request of the planner takes in the same region, assumed for the estimate: its
 * single-item writes and strongly consistent reads take single-digit milliseconds, a transaction of
 * 100 items or a 100-key BatchGetItem a few tens; 20 ms each, one after another, bounds a tick.
 */
const DYNAMODB_REQUEST_MS = 20;

async function benchKeys(stack: BenchStack, flags: Flags): Promise<void> {
  const busy = await createBusyTopics(stack, {
    what: 'keys',
    clientId: 'bench-keys',
    topics: flags.topics,
    partitions: flags.partitions,
  });
  const ledgerTable = stack.table('keys-ledger');
  const dynamo = dynamoClientFromEnv(process.env, { limits: LOCAL_EMULATOR_LIMITS });
  await ensureLedgerTable(dynamo, ledgerTable);
  const tick = { current: -1 };
  const sent = recordWrites(dynamo, ledgerTable, tick);
  const roles = countRequestsByRole(dynamo);
  const timer = timeRequests(dynamo);
  const config = parseDeploymentConfig(busy.config(ledgerTable), 'bench');
  const stream = config.streams[0] as StreamConfig;
  const ctx = composeAdapters({ config, env: process.env, dynamo, kafkaLog: quietKafkaLog });
  try {
    const figures = await tickUnderLoad({ ctx, stream, names: busy.names, flags, producer: busy.producer, sent, roles, timer, tick });
    process.stdout.write(`${JSON.stringify(figures)}\n`);
  } finally {
    await Promise.allSettled([ctx.close(), busy.close()]);
  }
}

/** Every ledger write the client sends, with its time and tick (the request body as sent). */
function recordWrites(dynamo: DynamoDBClient, table: string, tick: { current: number }): Sent[] {
  const sent: Sent[] = [];
  dynamo.middlewareStack.add(
    (next) => async (args) => {
      const req = args.request as { headers?: Record<string, string>; body?: unknown };
      const operation = req.headers?.['x-amz-target']?.split('.')[1] ?? '';
      const body = typeof req.body === 'string' ? req.body : req.body instanceof Uint8Array ? new TextDecoder().decode(req.body) : '';
      if (body)
        for (const write of writesOfRequest(operation, JSON.parse(body)))
          if (write.table === table) sent.push({ atMs: Date.now(), tick: tick.current, write });
      return next(args);
    },
    { step: 'build', name: 'benchKeyWrites' },
  );
  return sent;
}

/** The wall time with at least one DynamoDB request in flight (requests overlap). */
function timeRequests(dynamo: DynamoDBClient): { busyMs: () => number } {
  let busyMs = 0;
  let inFlight = 0;
  let since = 0;
  dynamo.middlewareStack.add(
    (next) => async (args) => {
      if (inFlight++ === 0) since = performance.now();
      try {
        return await next(args);
      } finally {
        if (--inFlight === 0) busyMs += performance.now() - since;
      }
    },
    { step: 'initialize', name: 'benchKeyTimer' },
  );
  return { busyMs: () => busyMs };
}

type Run = {
  ctx: ReturnType<typeof composeAdapters>;
  stream: StreamConfig;
  names: string[];
  flags: Flags;
  producer: ReturnType<Kafka['producer']>;
  sent: Sent[];
  roles: ReturnType<typeof countRequestsByRole>;
  timer: { busyMs: () => number };
  tick: { current: number };
};

type Tick = { ms: number; dynamoBusyMs: number; requests: number; planned: number; invocations: number; processMs: number };

/** Registers the partitions, then ticks `ticks` times with one new record in every partition; the figures. */
async function tickUnderLoad(r: Run) {
  const { ctx, stream, flags } = r;
  // The processors start once the tick is over (the gate opens), as they would on other machines.
  let gate = Promise.resolve();
  const dispatcher = createInProcessDispatcher(
    async (payload) =>
      gate.then(() =>
        r.roles.as('processor', () =>
          processRanges(
            { ledger: ctx.ledger, readerFor: (s) => ctx.readerFor(s), handlerFor: (s) => ctx.handlerFor(s), storeClock: ctx.storeClock },
            { stream, ranges: rangesOfPayload(payload), deadlineAtMs: Date.now() + 60_000, single: !('ranges' in payload) },
          ),
        ),
      ),
    (_p, err) => log(`processor error: ${String(err)}`),
  );
  const deps = { ledger: ctx.ledger, metadataFor: (s: StreamConfig) => ctx.metadata.forStream(s), dispatcher, plannerLeaseMs: 60_000 };
  const plan = () => r.roles.as('planner', async () => planStream(deps, stream, { dryRun: false, nowMs: await ctx.storeClock() }));
  const registration = await register(r, plan);
  const sizes = new Map<string, number>();
  const ticks: Tick[] = [];
  for (let n = 0; n < flags.ticks; n++) {
    await produceOne(r);
    r.tick.current = n;
    const [requestsBefore, busyBefore, t0] = [totalRequests(r.roles, 'planner'), r.timer.busyMs(), performance.now()];
    let open = () => {};
    gate = new Promise<void>((res) => (open = res));
    const rep = await plan();
    open();
    const ms = performance.now() - t0;
    const dynamoBusyMs = r.timer.busyMs() - busyBefore;
    const requests = totalRequests(r.roles, 'planner') - requestsBefore;
    const p0 = performance.now();
    await dispatcher.idle();
    ticks.push({ ms, dynamoBusyMs, requests, planned: rep.rangesPlanned, invocations: rep.invocations, processMs: performance.now() - p0 });
    for (const [k, size] of await storedSizes(ctx.dynamo, ctx.config.ledgerTable)) sizes.set(k, Math.max(size, sizes.get(k) ?? 0));
    log(`tick ${n}: ${rep.rangesPlanned} ranges in ${rep.invocations} invocations, planned in ${Math.round(ms)} ms`);
  }
  const partitions = await ctx.ledger.readPartitions(stream.id);
  const caughtUp = partitions.filter((p) => p.committed === flags.ticks).length;
  return { ...figures(r, registration, ticks, sizes), partitionsCaughtUp: caughtUp };
}

/** How long the partitions may take to register (a loaded machine elects a thousand leaders slowly). */
const REGISTRATION_DEADLINE_MS = 120_000;

/** Runs the planner until every partition is registered; the busiest second of each key meanwhile. */
async function register(r: Run, plan: () => Promise<StreamPlanReport>) {
  const partitions = r.flags.topics * r.flags.partitions;
  const t0 = performance.now();
  let registered = 0;
  while (registered < partitions) {
    const rep = await plan();
    registered += rep.registered;
    if (registered >= partitions) break;
    // Why a run registered nothing (the lease held, Kafka's metadata not there yet) says what went wrong.
    const why = JSON.stringify({ status: rep.status, reason: rep.reason, unavailable: rep.unavailablePartitions, warnings: rep.warnings });
    if (performance.now() - t0 > REGISTRATION_DEADLINE_MS)
      throw new Error(`only ${registered} of ${partitions} partitions registered in ${REGISTRATION_DEADLINE_MS} ms; the last run: ${why}`);
    if (rep.registered === 0) {
      log(`a planner run registered no partition: ${why}`);
      await new Promise((res) => setTimeout(res, 1000));
    }
  }
  const writes = r.sent.filter((s) => s.tick === -1);
  const perKey = new Map<string, Array<{ atMs: number; units: number }>>();
  for (const { atMs, write } of writes) {
    const pk = pkOf(write);
    perKey.set(pk, [...(perKey.get(pk) ?? []), { atMs, units: writeUnitsFor(write.requestSizeBytes, write.transactional) }]);
  }
  const busiest = Object.fromEntries([...perKey].map(([pk, ws]) => [pk, busiestSecond(ws)]));
  return { partitions, ms: Math.round(performance.now() - t0), maxWriteUnitsPerKeyPerSec: Math.max(...Object.values(busiest)), busiest };
}

/** The most units sent inside any one-second window. */
function busiestSecond(writes: Array<{ atMs: number; units: number }>): number {
  const sorted = [...writes].sort((a, b) => a.atMs - b.atMs);
  let best = 0;
  let sum = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    sum += sorted[i]!.units;
    while (sorted[j]!.atMs <= sorted[i]!.atMs - 1000) sum -= sorted[j++]!.units;
    best = Math.max(best, sum);
  }
  return best;
}

const pkOf = (write: ItemWrite): string =>
  (JSON.parse(write.key) as Array<[string, AttributeValue]>).find(([n]) => n === 'pk')?.[1]?.S ?? '?';

const totalRequests = (roles: ReturnType<typeof countRequestsByRole>, role: string): number =>
  Object.values(roles.roles().get(role)?.byOperation ?? {}).reduce((s, n) => s + n, 0);

/** One record to every partition. */
async function produceOne(r: Run): Promise<void> {
  await r.producer.sendBatch({
    topicMessages: r.names.map((topic) => ({
      topic,
      messages: Array.from({ length: r.flags.partitions }, (_, p) => ({ value: 'x', partition: p })),
    })),
  });
}

/** The run's figures: write units per key per tick (the busiest tick), the ticks' times. */
function figures(r: Run, registration: Awaited<ReturnType<typeof register>>, ticks: Tick[], sizes: Map<string, number>) {
  const perKeyTick = new Map<string, Map<number, number>>();
  for (const { tick, write } of r.sent) {
    if (tick < 0) continue;
    const pk = pkOf(write);
    const units = writeUnitsFor(Math.max(write.requestSizeBytes, sizes.get(write.key) ?? 0), write.transactional);
    const byTick = perKeyTick.get(pk) ?? new Map<number, number>();
    byTick.set(tick, (byTick.get(tick) ?? 0) + units);
    perKeyTick.set(pk, byTick);
  }
  const byKey = Object.fromEntries([...perKeyTick].sort(([a], [b]) => a.localeCompare(b)).map(([pk, t]) => [pk, Math.max(...t.values())]));
  const ranges = ticks.reduce((s, t) => s + t.planned, 0);
  const total = [...perKeyTick.values()].reduce((s, t) => s + [...t.values()].reduce((a, b) => a + b, 0), 0);
  const q = (xs: number[]) => ({ p50: Math.round(median(xs)), max: Math.round(Math.max(...xs)) });
  const own = ticks.map((t) => t.ms - t.dynamoBusyMs);
  return {
    partitions: r.flags.topics * r.flags.partitions,
    ticks: ticks.length,
    keys: Object.keys(byKey).length,
    maxWriteUnitsPerKeyPerTick: Math.max(...Object.values(byKey)),
    writeUnitsPerKeyPerTick: byKey,
    ledgerWriteUnitsPerRange: Number((total / Math.max(1, ranges)).toFixed(2)),
    registration,
    rangesPlannedPerTick: Math.round(median(ticks.map((t) => t.planned))),
    invocationsPerTick: Math.round(median(ticks.map((t) => t.invocations))),
    tickMs: q(ticks.map((t) => t.ms)),
    tickDynamoBusyMs: q(ticks.map((t) => t.dynamoBusyMs)),
    tickOwnMs: q(own),
    plannerRequestsPerTick: q(ticks.map((t) => t.requests)),
    tickOnDynamoDbEstimateMs: q(ticks.map((t, i) => own[i]! + t.requests * DYNAMODB_REQUEST_MS)),
    dynamoDbRequestMsAssumed: DYNAMODB_REQUEST_MS,
    processMsPerTick: q(ticks.map((t) => t.processMs)),
  };
}

runBench('keys', main);
