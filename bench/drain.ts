/**
 * One drain of a produced topic through the real local runtime (the planner on its schedule and the
 * processors in this process, as `npm start` runs them), with a fresh stream id, measured from the
 * runner's start until every partition is committed to the end offsets given. Shared by
 * bench/e2e.ts and bench/latency.ts.
 */
import { ScanCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { parseDeploymentConfig, type DeploymentConfig, type StreamConfig, type StreamConfigInput } from '../lib/config/schema';
import { kafkaLogLines } from '../lib/kafka/client';
import { createSinkTable } from '../lib/sink/table.dynamodb';
import { scanTotals } from '../lib/sink/totals.dynamodb';
import { oneTopicConfigInput } from '../lib/local/one-topic';
import { createLocalRunner, runnerDepsFrom, type LocalRunner } from '../lib/runtime/local';
import type { Ledger } from '../lib/ports/ledger';
import type { RecordsHandler } from '../lib/processor/handler-api';
import { composeAdapters, dynamoClientFromEnv, localDynamoClientOptions, type Adapters } from '../lib/runtime/compose';
import { DEFAULT_LOCAL_CONCURRENCY } from '../lib/dispatch/dispatcher.local';
import { totalsMismatches, type DrainFigures, type DrainObserver } from './stats';
import { countWriteUnits, itemSizeBytes, storedKeyJson, type WriteTally } from './write-units';

export type DrainOptions = {
  brokers: string;
  ledgerTable: string;
  topic: string;
  /**
   * Where each partition ends: the drain is over when every one is committed up to it. Undefined
   * while the end is not known yet (a latency run still producing).
   */
  endOffsets: () => number[] | undefined;
  streamId: string;
  handler: 'running-totals' | 'noop';
  /** Exactly-once: a fresh sink table to create, checked against `expected` at the end (the caller deletes it). */
  sinkTable?: string;
  /** What was produced, per account `[total, count]` (read when the drain is over). */
  expected?: () => Record<string, readonly [number, number]>;
  triggerIntervalMs: number;
  /** Give up (and fail) when the drain is not over this long after it started. */
  timeoutMs: number;
  observer?: DrainObserver;
  log(line: string): void;
};

/** Drains the topic once and returns what it measured. */
export async function drainOnce(opts: DrainOptions): Promise<DrainFigures> {
  // Sized and kept alive as `npm start` does (lib/local/session.ts).
  const dynamo = dynamoClientFromEnv(process.env, localDynamoClientOptions(DEFAULT_LOCAL_CONCURRENCY));
  const tally = countWriteUnits(dynamo);
  const config = benchConfig(opts);
  const stream = config.streams[0] as StreamConfig;
  const ctx = composeAdapters({
    config,
    env: process.env,
    dynamo,
    kafkaLog: kafkaLogLines(opts.log),
  });
  try {
    if (opts.sinkTable) await createSinkTable(dynamo, opts.sinkTable);
    tally.reset(); // table creation is set-up, not the drain's writes
    const ends = endWatch(opts.endOffsets);
    const watched = { ...ctx, ledger: observedLedger(ctx.ledger, ends) };
    const runner = createLocalRunner(runnerDepsFrom(observed(watched, opts.observer), opts.log), [stream]);
    const sampler = startSampler(runner);
    const t0 = Date.now();
    runner.start();
    let doneAtMs: number;
    try {
      const seenAtMs = await waitCommitted(ctx.ledger, runner, opts, t0);
      doneAtMs = ends.lastReachedAtMs() ?? seenAtMs;
    } finally {
      await runner.stop({ graceMs: 10_000 });
      sampler.stop();
    }
    const stats = runner.stats();
    const figures = await settleFigures(dynamo, tally, opts, {
      records: (opts.endOffsets() ?? []).reduce((s, o) => s + o, 0),
      wallMs: doneAtMs - t0,
      invocations: stats.invocations,
      plannerTicks: stats.plannerRuns,
      processorSeconds: sampler.processorSeconds(),
      peakRssMb: sampler.peakRssMb(),
    });
    if (stats.byStatus.error) opts.log(`${stats.byStatus.error} processor error(s); last: ${stats.lastError}`);
    return figures;
  } finally {
    await ctx.close().catch(() => undefined);
  }
}

/** The bench stream: the whole topic from the earliest offset, the Lambda's default timeout. */
function benchConfig(opts: DrainOptions): DeploymentConfig {
  const handler: StreamConfigInput['handler'] =
    opts.handler === 'running-totals'
      ? { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: opts.sinkTable }
      : { module: 'noop', mode: 'at-least-once' };
  const { ledgerTable, streamId, brokers, topic, triggerIntervalMs } = opts;
  return parseDeploymentConfig(oneTopicConfigInput({ ledgerTable, streamId, brokers, topic, triggerIntervalMs, handler }), 'bench');
}

/** The adapters with the observer's hooks on the handler and on the ledger's progress commits. */
function observed(ctx: Adapters, observer?: DrainObserver): Adapters {
  if (!observer) return ctx;
  return { ...ctx, ledger: observedLedger(ctx.ledger, observer), handlerFor: observedHandlerFor(ctx.handlerFor, observer) };
}

/** `handlerFor` whose handlers tell the observer every record they are given (shared with bench/latency-deployed.ts). */
export function observedHandlerFor(handlerFor: (s: StreamConfig) => RecordsHandler, observer: DrainObserver) {
  const handlers = new Map<string, RecordsHandler>();
  return (s: StreamConfig): RecordsHandler => {
    let h = handlers.get(s.id);
    if (!h) {
      const inner = handlerFor(s);
      const fold = inner.mode === 'dynamodb-exactly-once' ? inner.fold : undefined;
      h = {
        ...inner,
        handle: (records, c) => {
          observer.onRecords(records);
          return inner.handle(records, c) as never;
        },
        // Folded batches map record by record: observe them there.
        ...(fold && {
          fold: {
            ...fold,
            map: (r: Parameters<typeof fold.map>[0], c: Parameters<typeof fold.map>[1]) => {
              observer.onRecords([r]);
              return fold.map(r, c);
            },
          },
        }),
      } as RecordsHandler;
      handlers.set(s.id, h);
    }
    return h;
  };
}

/** The ledger with every progress commit that applied told to the observer. */
export function observedLedger<L extends Ledger>(ledger: L, observer: DrainObserver): L {
  return {
    ...ledger,
    async commitChunk(input) {
      const out = await ledger.commitChunk(input);
      if (out === 'applied') observer.onCommitted(input.range.partition, input.expectProgress, input.to);
      return out;
    },
    async commitChunks(inputs) {
      const out = await ledger.commitChunks(inputs);
      out.forEach((o, i) => {
        const c = inputs[i];
        if (o === 'applied' && c) observer.onCommitted(c.range.partition, c.expectProgress, c.to);
      });
      return out;
    },
    async completeRange(input) {
      const out = await ledger.completeRange(input);
      if (out === 'applied') observer.onCommitted(input.range.partition, input.expectProgress, input.range.until);
      return out;
    },
    async completeRanges(inputs) {
      const out = await ledger.completeRanges(inputs);
      out.forEach((o, i) => {
        const c = inputs[i];
        if (o === 'applied' && c) observer.onCommitted(c.range.partition, c.expectProgress, c.range.until);
      });
      return out;
    },
  };
}

/**
 * When each partition's commits reached its end offset, taken from the progress commits as they
 * return. The drain's end is the last of them: polling the ledger for it instead measured a 3.4 s
 * drain up to the poll's 200 ms late, and a finer poll takes CPU from the drain it measures.
 */
function endWatch(endOffsets: () => number[] | undefined): DrainObserver & { lastReachedAtMs(): number | undefined } {
  const reachedAtMs = new Map<number, number>();
  return {
    onRecords: () => undefined,
    onCommitted(partition, _from, to) {
      const end = endOffsets()?.[partition];
      if (end !== undefined && to >= end && !reachedAtMs.has(partition)) reachedAtMs.set(partition, Date.now());
    },
    // Undefined until every partition with records has reached its end (an empty one never commits).
    lastReachedAtMs() {
      const ends = endOffsets();
      if (!ends || ends.some((end, partition) => end > 0 && !reachedAtMs.has(partition))) return undefined;
      return reachedAtMs.size ? Math.max(...reachedAtMs.values()) : undefined;
    },
  };
}

/**
 * Polls the ledger every 200 ms until every partition is committed to its end offset and no
 * processor runs; returns when it saw that (the drain's end is `endWatch`'s, more exact).
 */
async function waitCommitted(ledger: Ledger, runner: LocalRunner, opts: DrainOptions, t0: number): Promise<number> {
  let lastLogMs = 0;
  for (;;) {
    const ends = opts.endOffsets();
    const parts = await ledger.readPartitions(opts.streamId);
    const committed = parts.reduce((s, p) => s + p.committed, 0);
    // No total while the end is not known (a latency run still producing): say so instead of `/NaN`.
    const progress = ends ? `${committed}/${ends.reduce((s, o) => s + o, 0)}` : `${committed} (still producing)`;
    const done =
      ends !== undefined &&
      parts.length === ends.length &&
      parts.every((p) => p.committed >= (ends[p.partition] ?? Infinity)) &&
      runner.inFlight().length === 0;
    if (done) return Date.now();
    const now = Date.now();
    if (now - lastLogMs >= 5000) {
      lastLogMs = now;
      opts.log(`${opts.streamId}: committed ${progress} after ${Math.round((now - t0) / 1000)} s, ${runner.inFlight().length} in flight`);
    }
    if (now - t0 > opts.timeoutMs) throw new Error(`${opts.streamId}: not drained after ${opts.timeoutMs} ms (committed ${progress})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Samples RSS and the processors in flight every 100 ms (their integral: processor-seconds). */
function startSampler(runner: LocalRunner) {
  let peakRss = process.memoryUsage().rss;
  let inFlightMs = 0;
  let last = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    inFlightMs += runner.inFlight().length * (now - last);
    last = now;
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 100);
  return {
    stop: () => clearInterval(timer),
    processorSeconds: () => inFlightMs / 1000,
    peakRssMb: () => Math.round(peakRss / (1024 * 1024)),
  };
}

/** Settles write units against the stored items and checks the sink. */
async function settleFigures(
  dynamo: DynamoDBClient,
  tally: WriteTally,
  opts: DrainOptions,
  base: Omit<
    DrainFigures,
    'sinkWrites' | 'sinkWriteUnits' | 'sinkIdealWriteUnits' | 'sinkReadUnits' | 'ledgerWrites' | 'ledgerWriteUnits' | 'exact'
  >,
): Promise<DrainFigures> {
  const tables = tally.tables();
  const ledgerSizes = await storedSizes(dynamo, opts.ledgerTable);
  let sinkWriteUnits = 0;
  let sinkIdealWriteUnits = 0;
  let exact: boolean | undefined;
  if (opts.sinkTable) {
    const sinkSizes = await storedSizes(dynamo, opts.sinkTable);
    sinkWriteUnits = tally.settle(opts.sinkTable, (k) => sinkSizes.get(k));
    sinkIdealWriteUnits = tally.settle(opts.sinkTable, (k) => sinkSizes.get(k), 'ideal');
    const mismatches = totalsMismatches(opts.expected?.() ?? {}, await scanTotals(dynamo, opts.sinkTable));
    exact = mismatches.length === 0;
    if (!exact)
      opts.log(`sink differs from what was produced on ${mismatches.length} account(s), e.g. ${mismatches.slice(0, 3).join('; ')}`);
  }
  return {
    ...base,
    sinkWrites: opts.sinkTable ? (tables[opts.sinkTable]?.writes ?? 0) : 0,
    sinkWriteUnits,
    sinkIdealWriteUnits,
    sinkReadUnits: opts.sinkTable ? tally.readUnits(opts.sinkTable) : 0,
    ledgerWrites: tables[opts.ledgerTable]?.writes ?? 0,
    ledgerWriteUnits: tally.settle(opts.ledgerTable, (k) => ledgerSizes.get(k)),
    ...(exact === undefined ? {} : { exact }),
  };
}

/** Every item's size in `table`, by its key as the tally spells it. */
export async function storedSizes(dynamo: DynamoDBClient, table: string): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await dynamo.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) sizes.set(storedKeyJson(item), itemSizeBytes(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return sizes;
}
