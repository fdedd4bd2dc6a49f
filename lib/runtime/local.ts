/**
 * The local runtime: the planner on a short schedule and the processors in this process (the
 * in-process dispatcher standing in for Lambda's async invoke). The planner and processor code are
 * the Lambdas' own, so the ledger sees exactly what it sees on AWS.
 */
import type { FailureDestinations } from '../ports/failure-destination';
import { randomUUID } from 'node:crypto';
import type { StreamConfig } from '../config/schema';
import { createInProcessDispatcher, DEFAULT_LOCAL_CONCURRENCY } from '../dispatch/dispatcher.local';
import type { KafkaMetadata } from '../ports/kafka-metadata';
import type { Ledger, StoreClock } from '../ports/ledger';
import type { RangeReader } from '../ports/range-reader';
import { emptyReport, planStream, type StreamPlanReport } from '../planner/run';
import type { RecordsHandler } from '../processor/handler-api';
import { processRanges, type ProcessorDeps, type ProcessResult } from '../processor/process-range';
import { recordStagesFor } from '../processor/record-stages';
import { commitGroupOffset } from './group-offsets';
import { rangesOfPayload, type RangePayload, type RangesPayload } from '../ranges';
import type { Adapters } from './compose';

export type RunnerDeps = {
  ledger: Ledger;
  /** The store's clock for planner and range leases (default: this process's clock). */
  storeClock?: StoreClock;
  metadataFor(stream: StreamConfig): Promise<KafkaMetadata>;
  /**
   * A new range reader for the stream's cluster. The runner keeps a pool and gives each running
   * processor its own reader, as each Lambda container has its own: kafkajs 2.2.4 opens two
   * sockets (and leaks one) when two requests connect the same fresh connection at once. A reader
   * goes back to the pool after its invocation (a warm container) and is closed once it has been
   * idle for `readerIdleMs` (a container reclaimed), so the pool never exceeds `maxConcurrency`.
   */
  createReader(stream: StreamConfig): Promise<RangeReader>;
  /** Processors running at once, the local reserved concurrency (default `DEFAULT_LOCAL_CONCURRENCY`); the rest queue. */
  maxConcurrency?: number;
  /** How long a pooled reader may stay idle before it is closed (default 10 s). */
  readerIdleMs?: number;
  handlerFor(stream: StreamConfig): RecordsHandler;
  /** The handler's `ctx.secrets` (default: the processor's, from the stream's `handler.secrets`). */
  secretsFor?: (stream: StreamConfig) => Promise<Readonly<Record<string, string>>>;
  /** The stream's failure destinations (`onFailure`; default: none, deliveries stay pending in the ledger). */
  destinationsFor?: (stream: StreamConfig) => Promise<FailureDestinations>;
  /** Commits a finished range's end to the stream's consumer group (default: none), as the Lambda runtime does. */
  commitGroupOffset?: (stream: StreamConfig, group: string, at: { topic: string; partition: number; offset: number }) => Promise<void>;
  /** Planner lease per run (default 30 s: a local run takes well under a second). */
  plannerLeaseMs?: number;
  /** Records per handler call (default: the processor's 500). */
  maxChunkRecords?: number;
  /** The stages before the handler (default: the processor's, with the process's schema registries). */
  stagesFor?: ProcessorDeps['stagesFor'];
  log?: (line: string) => void;
};

/** The runner's deps from the shared adapters (`composeAdapters`), logging to `log`. */
export function runnerDepsFrom(
  adapters: Pick<Adapters, 'ledger' | 'storeClock' | 'metadata' | 'createReader' | 'handlerFor'> &
    Partial<Pick<Adapters, 'groupCommitterFor' | 'dropGroupCommitter' | 'destinationsFor' | 'registries'>>,
  log?: (line: string) => void,
): RunnerDeps {
  const { groupCommitterFor, dropGroupCommitter, registries } = adapters;
  return {
    ledger: adapters.ledger,
    storeClock: adapters.storeClock,
    metadataFor: (s) => adapters.metadata.forStream(s),
    createReader: (s) => adapters.createReader(s),
    handlerFor: (s) => adapters.handlerFor(s),
    destinationsFor: adapters.destinationsFor,
    ...(groupCommitterFor && dropGroupCommitter
      ? {
          commitGroupOffset: (s: StreamConfig, group: string, at: { topic: string; partition: number; offset: number }) =>
            commitGroupOffset({ groupCommitterFor, dropGroupCommitter }, s, group, at),
        }
      : {}),
    ...(registries && { stagesFor: (s: StreamConfig, at: { firstLeasedAtMs: number }) => recordStagesFor(s, { ...at, registries }) }),
    log,
  };
}

export type RunnerStats = {
  plannerRuns: number;
  /** Processor invocations started (one per dispatched range, re-dispatches included). */
  invocations: number;
  byStatus: Partial<Record<ProcessResult['status'] | 'error', number>>;
  /** Records delivered to handlers and committed. */
  records: number;
  /** Range readers open now (pooled or in use), each holding its Kafka connections. */
  readersOpen: number;
  /** Dispatched ranges waiting for a free processor slot now. */
  queued: number;
  /** The longest planner run so far, in ms. */
  maxPlannerRunMs: number;
  deadLetters: number;
  /** Records the filters skipped, and records skipped as older than maxRecordAgeMs. */
  filtered: number;
  expired: number;
  lastError?: string;
  /** The latest planner report per stream. */
  reports: Map<string, StreamPlanReport>;
};

export type LocalRunner = {
  /** One planner run over every stream (dispatching into this process). */
  planOnce(): Promise<StreamPlanReport[]>;
  /** Runs the planner every `triggerIntervalMs` (the smallest of the streams') until `stop`. */
  start(): void;
  /**
   * Stops planning, lets running processors finish for up to `graceMs`, then aborts them: they stop
   * at a chunk boundary (each chunk commits atomically, so nothing is lost or applied twice).
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
  /** Aborts running processors now (a second Ctrl-C). */
  abort(): void;
  /** Resolves once every processor started or queued so far has finished. */
  idle(): Promise<void>;
  /** Ranges dispatched into this process and not finished: running, then queued. */
  inFlight(): RangePayload[];
  stats(): RunnerStats;
};

/** Creates a runner for `streams`; nothing runs until `planOnce` or `start`. */
export function createLocalRunner(deps: RunnerDeps, streams: StreamConfig[]): LocalRunner {
  const byId = new Map(streams.map((s) => [s.id, s]));
  const log = deps.log ?? (() => undefined);
  const abort = new AbortController();
  const running = new Map<string, RangePayload>();
  const stats: RunnerStats = {
    plannerRuns: 0,
    invocations: 0,
    byStatus: {},
    records: 0,
    readersOpen: 0,
    queued: 0,
    maxPlannerRunMs: 0,
    deadLetters: 0,
    filtered: 0,
    expired: 0,
    reports: new Map(),
  };
  const count = (k: keyof RunnerStats['byStatus']) => {
    stats.byStatus[k] = (stats.byStatus[k] ?? 0) + 1;
  };

  const readers = createReaderPool(deps.createReader, deps.readerIdleMs ?? 10_000, (n) => {
    stats.readersOpen = n;
  });

  const invoke = async (payload: RangePayload | RangesPayload): Promise<void> => {
    const stream = byId.get(payload.stream);
    if (!stream) throw new Error(`no stream ${payload.stream} in this runner`);
    const ranges = rangesOfPayload(payload);
    const ids = ranges.map((range) => `${range.stream}/${range.topic}/${range.partition}/${range.from}/${randomUUID()}`);
    ranges.forEach((range, i) => running.set(ids[i] as string, range));
    stats.invocations++;
    let lease: { reader: RangeReader; release(): void } | undefined;
    try {
      const results = await processRanges(
        {
          ledger: deps.ledger,
          readerFor: async (s) => (lease ??= await readers.take(s)).reader,
          createReader: deps.createReader,
          handOver: async (successor) => {
            const ranges = rangesOfPayload(successor);
            const results = await dispatcher.dispatch(ranges, { invocations: [ranges.map((_, i) => i)] });
            return results.every((r) => r.ok);
          },
          handlerFor: deps.handlerFor,
          secretsFor: deps.secretsFor,
          storeClock: deps.storeClock,
          maxChunkRecords: deps.maxChunkRecords,
          destinationsFor: deps.destinationsFor,
          stagesFor: deps.stagesFor,
          commitGroupOffset:
            deps.commitGroupOffset && ((g, topic, partition, offset) => deps.commitGroupOffset!(stream, g, { topic, partition, offset })),
        },
        // The same deadline rule as the Lambda: the safety share of the configured timeout.
        {
          stream,
          ranges,
          deadlineAtMs: Date.now() + stream.processor.timeoutMs * stream.processor.safetyFactor,
          signal: abort.signal,
          single: !('ranges' in payload),
        },
      );
      for (const res of results) {
        count(res.status);
        stats.records += res.records;
        stats.deadLetters += res.deadLetters;
        stats.filtered += res.filtered;
        stats.expired += res.expired;
        const r = res.range;
        if (res.status === 'parked') log(`range ${r.topic}/${r.partition} [${r.from}, ${r.until}) parked: ${res.reason}`);
        if (res.status === 'failed') log(`processor error on ${r.topic}/${r.partition} [${r.from}, ${r.until}): ${res.reason}`);
      }
    } finally {
      lease?.release();
      for (const id of ids) running.delete(id);
    }
  };
  const dispatcher = createInProcessDispatcher(
    invoke,
    (payload, err) => {
      count('error');
      // An aborted processor (shutdown) recorded its range as failed; the next planner run retries it.
      if (abort.signal.aborted) return;
      const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      const where =
        'ranges' in payload
          ? `${payload.ranges.length} ranges`
          : `${payload.topic}/${payload.partition} [${payload.from}, ${payload.until})`;
      stats.lastError = `${where}: ${why}`;
      log(`processor error on ${stats.lastError}`);
    },
    { maxConcurrency: deps.maxConcurrency },
  );

  // A warning (a listed topic missing, a pattern matching nothing) is logged when it appears, not
  // on every planner run while it lasts: with a 1 s schedule that would be a line a second.
  const warned = new Map<string, Set<string>>();
  const logNewWarnings = (r: StreamPlanReport): void => {
    const before = warned.get(r.stream);
    for (const w of r.warnings) if (!before?.has(w)) log(`${r.stream}: ${w}`);
    warned.set(r.stream, new Set(r.warnings));
  };

  // A failing stream is said once per reason, and again when it plans again: a planner every second
  // against a dead cluster must not print the same line every second.
  const logFailureChange = (r: StreamPlanReport, before: StreamPlanReport | undefined) => {
    if (r.status === 'failed' && (before?.status !== 'failed' || before.reason !== r.reason))
      log(`planner run for ${r.stream} failed: ${r.reason}`);
    if (r.status !== 'failed' && before?.status === 'failed') log(`planner run for ${r.stream} ${r.status} again`);
  };
  const planOnce = async (): Promise<StreamPlanReport[]> => {
    const reports = await Promise.all(
      streams.map((s) =>
        (deps.storeClock ? deps.storeClock() : Promise.resolve(Date.now()))
          .then((nowMs) =>
            planStream(
              {
                ledger: deps.ledger,
                metadataFor: deps.metadataFor,
                destinationsFor: deps.destinationsFor,
                dispatcher,
                plannerLeaseMs: deps.plannerLeaseMs ?? 30_000,
                // The processor slots, shared by the streams as a Lambda's reserved concurrency is:
                // no more ranges are planned than can run.
                processorConcurrency: { limit: deps.maxConcurrency ?? DEFAULT_LOCAL_CONCURRENCY, streams: streams.length },
              },
              s,
              { dryRun: false, nowMs },
            ),
          )
          .catch((err: unknown): StreamPlanReport => {
            const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
            return { ...(stats.reports.get(s.id) ?? failedReport(s.id)), status: 'failed', reason };
          }),
      ),
    );
    stats.plannerRuns++;
    for (const r of reports) {
      stats.maxPlannerRunMs = Math.max(stats.maxPlannerRunMs, r.durationMs);
      logFailureChange(r, stats.reports.get(r.stream));
      stats.reports.set(r.stream, r);
      if (r.status === 'failed') stats.lastError = `planner ${r.stream}: ${r.reason}`;
      logNewWarnings(r);
      if (r.registered) log(`${r.stream}: registered ${r.registered} new partition(s)`);
      for (const l of r.dataLoss) log(`${r.stream}: DATA LOSS ${l.topic}/${l.partition} [${l.from}, ${l.until})`);
    }
    return reports;
  };

  /** Stops running processors at a chunk boundary; queued ranges stay recorded as sent (a later planner run sends them again). */
  const abortAll = (): void => {
    abort.abort();
    dispatcher.dropQueued();
  };

  let loop: Promise<void> | undefined;
  let stopping = false;
  let wake: (() => void) | undefined;
  const intervalMs = Math.min(...streams.map((s) => s.triggerIntervalMs));

  return {
    planOnce,
    start() {
      if (loop) return;
      loop = (async () => {
        while (!stopping) {
          const t0 = Date.now();
          await planOnce();
          const wait = intervalMs - (Date.now() - t0);
          if (wait > 0 && !stopping) {
            await new Promise<void>((r) => {
              const timer = setTimeout(r, wait);
              wake = () => {
                clearTimeout(timer);
                r();
              };
            });
          }
        }
      })();
    },
    async stop(opts = {}) {
      stopping = true;
      wake?.();
      await loop;
      const grace = new Promise<'timeout'>((r) => {
        const timer = setTimeout(() => r('timeout'), opts.graceMs ?? 10_000);
        timer.unref();
      });
      if ((await Promise.race([dispatcher.idle().then(() => 'idle' as const), grace])) === 'timeout') abortAll();
      await dispatcher.idle();
      await readers.closeAll();
    },
    abort: abortAll,
    idle: () => dispatcher.idle(),
    inFlight: () => [...running.values(), ...dispatcher.queued()],
    stats: () => ({ ...stats, queued: dispatcher.queued().length }),
  };
}

type ReaderPool = {
  /** A pooled reader of the stream's cluster (or a new one), and how to give it back. */
  take(stream: StreamConfig): Promise<{ reader: RangeReader; release(): void }>;
  closeAll(): Promise<void>;
};

/**
 * Readers kept per cluster connection like warm Lambda containers: one per running processor,
 * reused by the next invocation, closed after `idleMs` unused. `onSize` hears the number open.
 */
function createReaderPool(create: (s: StreamConfig) => Promise<RangeReader>, idleMs: number, onSize: (n: number) => void): ReaderPool {
  const idle = new Map<string, Array<{ reader: RangeReader; timer: NodeJS.Timeout }>>();
  const open = new Set<RangeReader>();
  const closeIdle = (free: Array<{ reader: RangeReader; timer: NodeJS.Timeout }>, reader: RangeReader): void => {
    const i = free.findIndex((e) => e.reader === reader);
    if (i >= 0) free.splice(i, 1);
    open.delete(reader);
    onSize(open.size);
    reader.close().catch(() => undefined);
  };
  return {
    async take(stream) {
      const key = JSON.stringify(stream.kafka);
      const free = idle.get(key) ?? [];
      idle.set(key, free);
      const warm = free.pop();
      if (warm) clearTimeout(warm.timer);
      const reader = warm?.reader ?? (await create(stream));
      open.add(reader);
      onSize(open.size);
      return {
        reader,
        release: () => {
          const timer = setTimeout(() => closeIdle(free, reader), idleMs);
          timer.unref();
          free.push({ reader, timer });
        },
      };
    },
    async closeAll() {
      for (const free of idle.values()) for (const e of free) clearTimeout(e.timer);
      idle.clear();
      const all = [...open];
      open.clear();
      onSize(0);
      await Promise.allSettled(all.map((r) => r.close()));
    },
  };
}

/** The report of a planner run that failed before it produced one. */
function failedReport(stream: string): StreamPlanReport {
  return { ...emptyReport(stream, false), status: 'failed' };
}
