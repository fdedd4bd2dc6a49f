/**
 * `replay <stream> --from <timestamp> --to <timestamp>`: a bounded backfill under its own stream id
 * (`<stream>-replay-<name>`), like Flink's bounded KafkaSource: each partition is registered with the
 * offset of the first record at `--from` and a stop offset at `--to`, the planner never plans past
 * the stop offsets, and the stream is marked finished once every partition reaches its stop.
 *
 * The CLI then drives it in-process (planner + processors until finished), against whatever the
 * environment points at: the local stack, or AWS (DynamoDB, the sink tables and the Kafka cluster
 * must be reachable from where the CLI runs). The scheduled planner on AWS plans only streams in
 * its config; add the replay's stream config there (`--no-run` prints it) to run it on Lambda.
 */
import { DescribeTableCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import type { StreamConfig } from '../config/schema';
import { topicSelector } from '../config/topics';
import { MissingResourceError, PreconditionError, ValidationError } from '../errors';
import { createLocalRunner } from '../runtime/local';
import type { TimestampOffset, UnavailablePartition } from '../ports/kafka-metadata';
import type { PartitionState } from '../ports/ledger-state';
import { partitionKey } from '../ranges';
import type { OpsContext } from './context';
import { duration, isoTime, table } from './format';
import { translateDynamoError } from '../ledger/errors.dynamodb';
import { withOperatorLease } from './lease';
import { replayNoProgressMessage, replayRefusedUnavailableMessage } from './messages';
import { replayStreamConfig, replayStreamId } from './streams';
import { partitionCount, unavailableText } from './unavailable';

export type ReplayRequest = {
  source: StreamConfig;
  fromMs: number;
  toMs: number;
  /** Suffix of the replay's stream id (default: the creation time in base 36). */
  name?: string;
  /** Write into this sink table instead of the source's (exactly-once handlers). */
  sinkTable?: string;
  who: string;
  nowMs: number;
};

export type ReplayPartition = { topic: string; partition: number; start: number; stop: number };

export type ReplayPlan = {
  stream: StreamConfig;
  partitions: ReplayPartition[];
  /** Offsets in the window (records, unless compaction or transactions left gaps). */
  offsets: number;
  /** False when the replay existed already (a re-run continues it). */
  created: boolean;
};

/** Registers the replay's bounded partitions (or finds an existing replay of that name). */
export async function createReplay(ctx: OpsContext, req: ReplayRequest): Promise<ReplayPlan> {
  if (req.fromMs >= req.toMs) throw new ValidationError(`--from (${isoTime(req.fromMs)}) must be before --to (${isoTime(req.toMs)})`);
  const id = replayStreamId(req.source.id, req.name ?? req.nowMs.toString(36));
  const stream = replayStreamConfig(req.source, id, req.sinkTable);
  if (req.sinkTable !== undefined) await assertTable(ctx, req.sinkTable);

  const existing = await ctx.ledger.readPartitions(id);
  if (existing.length) {
    if (!existing.every((p) => p.stopOffset !== undefined))
      throw new ValidationError(`stream ${id} exists and is not a replay: choose another --name`);
    const partitions = existing.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      start: p.startOffset,
      stop: p.stopOffset as number,
    }));
    return { stream, partitions, offsets: partitions.reduce((s, p) => s + p.stop - p.start, 0), created: false };
  }

  const kafka = await ctx.metadata.forStream(req.source);
  const discovered = await kafka.describeTopics(topicSelector(req.source));
  if (!discovered.length) throw new ValidationError(`stream ${req.source.id} reads no existing topic: nothing to replay`);
  const level = req.source.isolationLevel;
  const [bounds, startsAt, stopsAt] = await Promise.all([
    kafka.fetchAvailableOffsets(discovered, level),
    kafka.fetchAvailableOffsetsForTimestamp(discovered, req.fromMs, level),
    kafka.fetchAvailableOffsetsForTimestamp(discovered, req.toMs, level),
  ]);
  // A replay registers its partitions once and never adds one: it is created whole or not at all.
  const unavailable = [...bounds.unavailable, ...startsAt.unavailable, ...stopsAt.unavailable];
  if (unavailable.length) throw refusedWhileUnavailable(req.source.id, unavailable);
  const at = (list: TimestampOffset[]) => new Map(list.map((o) => [partitionKey(o.topic, o.partition), o.offset]));
  const startAt = at(startsAt.offsets);
  const stopAt = at(stopsAt.offsets);
  const partitions: ReplayPartition[] = bounds.offsets.map((o) => {
    const k = partitionKey(o.topic, o.partition);
    // Records before retention's log start are gone; a --to in the future stops at today's end.
    const start = Math.max(o.earliest, startAt.get(k) ?? o.latest);
    const stop = Math.max(start, Math.min(o.latest, stopAt.get(k) ?? o.latest));
    return { topic: o.topic, partition: o.partition, start, stop };
  });
  const records = partitions.reduce((s, p) => s + p.stop - p.start, 0);

  await withOperatorLease(ctx.ledger, { stream: id, who: req.who, storeClock: ctx.storeClock }, async (lease) => {
    const registrations: PartitionState[] = partitions.map((p) => ({
      stream: id,
      topic: p.topic,
      partition: p.partition,
      status: 'active',
      startOffset: p.start,
      committed: p.start,
      nextFrom: p.start,
      firstSeenAtMs: req.nowMs,
      stopOffset: p.stop,
    }));
    const out = await ctx.ledger.applyPlan({
      ...lease,
      writes: registrations.map((partition) => ({ kind: 'register-partition' as const, partition })),
    });
    if (out.includes('fenced'))
      throw new PreconditionError(`a planner run took over ${id} while it was being created; run the command again`);
    if ((await ctx.ledger.markStreamStarted({ ...lease, nowMs: req.nowMs })) === 'fenced') {
      throw new PreconditionError(`a planner run took over ${id} while it was being created; run the command again`);
    }
    const what =
      `replay of ${req.source.id} from ${isoTime(req.fromMs)} to ${isoTime(req.toMs)}: ` +
      `${records} offsets in ${partitions.length} partition(s)${req.sinkTable ? ` into ${req.sinkTable}` : ''}`;
    await ctx.ledger.recordChange({ ...lease, change: { by: req.who, atMs: req.nowMs, what } });
  });
  return { stream, partitions, offsets: records, created: true };
}

/** The refusal of a replay some of whose partitions' offsets cannot be read now (each named once, with its reason). */
function refusedWhileUnavailable(source: string, list: UnavailablePartition[]): PreconditionError {
  const once = [...new Map(list.map((u) => [partitionKey(u.topic, u.partition), u])).values()];
  return new PreconditionError(replayRefusedUnavailableMessage(source, partitionCount(once.length), unavailableText(once)));
}

async function assertTable(ctx: OpsContext, tableName: string): Promise<void> {
  try {
    await ctx.dynamo.send(new DescribeTableCommand({ TableName: tableName }));
  } catch (err) {
    if (err instanceof ResourceNotFoundException) {
      throw new MissingResourceError(`sink table ${tableName} does not exist: create it (key pk, string) before replaying into it`, {
        cause: err,
      });
    }
    throw translateDynamoError(err, `replay: sink table ${tableName}`, tableName, 'DescribeTable');
  }
}

export type ReplayRunResult = {
  stream: string;
  finished: boolean;
  records: number;
  invocations: number;
  plannerRuns: number;
  wallMs: number;
  /** Dead letters of the replay stream not yet re-driven (its records are not in the sink). */
  deadLetters: number;
  /** Offsets of the window not yet committed (the replay can be continued with the same command). */
  unapplied: number;
};

/**
 * Drives the replay in this process until the planner reports it finished: plan, wait for the
 * processors, plan again (a backfill runs as fast as the processors go, not on a schedule).
 */
export async function runReplay(
  ctx: OpsContext,
  plan: ReplayPlan,
  opts: { log?: (line: string) => void; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ReplayRunResult> {
  const t0 = Date.now();
  const log = opts.log ?? (() => undefined);
  const runner = createLocalRunner(
    {
      ledger: ctx.ledger,
      storeClock: ctx.storeClock,
      metadataFor: (s) => ctx.metadata.forStream(s),
      createReader: (s) => ctx.createReader(s),
      handlerFor: (s) => ctx.handlerFor(s),
      log,
    },
    [plan.stream],
  );
  const stopOf = new Map(plan.partitions.map((p) => [partitionKey(p.topic, p.partition), p]));
  let idleRuns = 0;
  let finished = false;
  try {
    while (!opts.signal?.aborted) {
      const [rep] = await runner.planOnce();
      if (!rep) break;
      if (rep.finished) {
        finished = true;
        break;
      }
      if (rep.status === 'failed') throw new PreconditionError(`replay ${plan.stream.id}: planner failed: ${rep.reason}`);
      const stuck = rep.partitions.filter((p) => p.status === 'failed');
      if (stuck.length)
        throw new PreconditionError(
          `replay ${plan.stream.id} cannot finish: ${stuck.map((p) => `${p.topic}/${p.partition} ${p.note ?? 'failed'}`).join('; ')}`,
        );
      const done = rep.partitions.reduce(
        (s, p) => s + (p.committed - (stopOf.get(partitionKey(p.topic, p.partition))?.start ?? p.committed)),
        0,
      );
      log(
        `replay ${plan.stream.id}: ${done}/${plan.offsets} offsets committed, ${rep.rangesPlanned} range(s) planned, ` +
          `${runner.inFlight().length} in flight (${duration(Date.now() - t0)})`,
      );
      idleRuns = rep.rangesPlanned + rep.redispatched === 0 && runner.inFlight().length === 0 ? idleRuns + 1 : 0;
      if (idleRuns >= 5) {
        throw new PreconditionError(replayNoProgressMessage(plan.stream.id));
      }
      if (opts.timeoutMs !== undefined && Date.now() - t0 > opts.timeoutMs) break;
      await runner.idle();
      if (idleRuns > 0) await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    await runner.stop({ graceMs: 5000 });
  }
  const s = runner.stats();
  // From the ledger, not this run's counters: a continued replay also owns its earlier runs' results.
  const [parts, letters] = await Promise.all([ctx.ledger.readPartitions(plan.stream.id), ctx.ledger.listDeadLetters(plan.stream.id)]);
  const committedOf = new Map(parts.map((p) => [partitionKey(p.topic, p.partition), p.committed]));
  const unapplied = plan.partitions.reduce(
    (n, p) => n + Math.max(0, p.stop - Math.max(p.start, committedOf.get(partitionKey(p.topic, p.partition)) ?? p.start)),
    0,
  );
  const deadLetters = letters.filter((d) => d.redrivenAtMs === undefined).length;
  return {
    stream: plan.stream.id,
    finished,
    records: s.records,
    invocations: s.invocations,
    plannerRuns: s.plannerRuns,
    wallMs: Date.now() - t0,
    deadLetters,
    unapplied,
  };
}

/** The run's one-line outcome: records applied, dead letters and offsets left, each named. */
export function renderReplayRun(res: ReplayRunResult): string {
  const parts = [`${res.records} records applied by ${res.invocations} processor invocations in ${res.wallMs} ms`];
  if (res.deadLetters) parts.push(`${res.deadLetters} dead-lettered, not in the sink (see: dead-letters ${res.stream})`);
  if (res.unapplied) parts.push(`${res.unapplied} offsets left unapplied (run the same replay command again to continue)`);
  return `${res.finished ? 'finished' : 'stopped before the end'}: ${parts.join('; ')}`;
}

/** The replay's partitions and window as text. */
export function renderReplayPlan(p: ReplayPlan): string {
  return [
    `${p.created ? 'created' : 'continuing'} replay stream ${p.stream.id}: ` +
      `${p.offsets} offsets${p.stream.handler?.sinkTable ? `, sink ${p.stream.handler.sinkTable}` : ''}`,
    '',
    table(
      ['topic', 'partition', 'start', 'stop', 'offsets'],
      p.partitions.map((x) => [x.topic, x.partition, x.start, x.stop, x.stop - x.start]),
    ),
  ].join('\n');
}
