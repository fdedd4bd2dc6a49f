/**
 * One planned range for processor unit tests: a stream, the in-memory ledger and reader holding the
 * given records of partition 0, the range [0, until) registered and planned, and processRange's
 * deps. Tests pass what they vary as options; everything else has the default below.
 */
import { parseStreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { runningTotals } from '../../lib/handlers/running-totals';
import { createMemoryRangeReader, type MemoryRangeReader } from '../../lib/kafka/range-reader.memory';
import { createMemoryLedger } from '../../lib/ledger/ledger.memory';
import type { LedgerLimits } from '../../lib/ports/commit-limits';
import type { RecordsHandler } from '../../lib/processor/handler-api';
import { processRange, type ProcessorDeps } from '../../lib/processor/process-range';

/** The topic of the fixture's stream; its one partition is 0. */
export const FIXTURE_TOPIC = 'payments';
/** The fixture's stream id. */
export const FIXTURE_STREAM = 's';

export type ProcessorFixtureOptions = {
  /** The records of partition 0, from offset 0. */
  records: Parameters<MemoryRangeReader['append']>[2];
  /** Settings over the default exactly-once running-totals stream (sink table `totals`). */
  stream?: Partial<StreamConfigInput>;
  /** Limits the memory ledger publishes (default DynamoDB's). */
  limits?: LedgerLimits;
  /** The handler processRange is given (default running-totals). */
  handler?: RecordsHandler;
  /** End of the planned range (default: the number of records). */
  until?: number;
  /** processRange deps over the defaults (chunks of 4, no sleeping, the fixture's clock). */
  deps?: Partial<ProcessorDeps>;
};

/** The memory ledger the fixture builds (with its `store` view). */
export type FixtureLedger = ReturnType<typeof createMemoryLedger>;

/** Builds the stream, ledger, reader and planned range; `run` processes it, `advance` moves the clock (from 10,000 ms). */
export async function processorFixture(opts: ProcessorFixtureOptions) {
  const stream = parseStreamConfig(
    {
      id: FIXTURE_STREAM,
      kafka: { brokers: ['localhost:9092'] },
      topics: [FIXTURE_TOPIC],
      handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'totals' },
      ...opts.stream,
    },
    'test',
  );
  const ledger: FixtureLedger = createMemoryLedger({ limits: opts.limits });
  const reader = createMemoryRangeReader();
  reader.append(FIXTURE_TOPIC, 0, opts.records);
  const until = opts.until ?? opts.records.length;
  await planRange(ledger, until);
  let now = 10_000;
  const deps: ProcessorDeps = {
    ledger,
    readerFor: async () => reader,
    handlerFor: () => opts.handler ?? runningTotals,
    clock: () => now,
    sleep: async () => undefined,
    maxChunkRecords: 4,
    ...opts.deps,
  };
  const range = { stream: FIXTURE_STREAM, topic: FIXTURE_TOPIC, partition: 0, from: 0, until };
  /** Processes the range once with `extra` over the deps; the deadline defaults to 600 s from now. */
  const run = (extra: Partial<ProcessorDeps> = {}, deadlineAtMs = now + 600_000, signal?: AbortSignal) =>
    processRange({ ...deps, ...extra }, { stream, range, deadlineAtMs, ...(signal && { signal }) });
  /** The ledger's item of the planned range. */
  const rangeItem = () => ledger.store(FIXTURE_STREAM).ranges.get(`${FIXTURE_TOPIC}/0/0`)!;
  return { stream, ledger, reader, deps, range, run, rangeItem, advance: (ms: number) => (now += ms), now: () => now };
}

/** Registers partition 0 and plans [0, until) under the stream's first planner lease. */
async function planRange(ledger: FixtureLedger, until: number): Promise<void> {
  const lease = await ledger.acquirePlannerLease({ stream: FIXTURE_STREAM, ownerToken: 'p', nowMs: 0, leaseMs: 1 });
  if (!lease.acquired) throw new Error('lease');
  const tp = { stream: FIXTURE_STREAM, topic: FIXTURE_TOPIC, partition: 0 };
  await ledger.applyPlan({
    stream: FIXTURE_STREAM,
    epoch: lease.epoch,
    ownerToken: 'p',
    writes: [
      {
        kind: 'register-partition',
        partition: { ...tp, status: 'active', startOffset: 0, committed: 0, nextFrom: 0, firstSeenAtMs: 0 },
      },
      {
        kind: 'plan-range',
        range: { ...tp, from: 0, until, status: 'planned', epoch: lease.epoch, plannedAtMs: 0, dispatches: 1, attempts: 0, progress: 0 },
      },
    ],
  });
}
