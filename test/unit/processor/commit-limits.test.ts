/** The processor keeps every commit within the limits the ledger publishes (here smaller than DynamoDB's). */
import { parseStreamConfig } from '../../../lib/config/schema';
import { DYNAMODB_LIMITS } from '../../../lib/ledger/codec.dynamodb';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { createMemoryRangeReader } from '../../../lib/kafka/range-reader.memory';
import type { LedgerLimits, SinkWrite } from '../../../lib/ports/ledger';
import type { RecordsHandler } from '../../../lib/processor/handler-api';
import { processRange } from '../../../lib/processor/process-range';

const T = 'payments';
const small: LedgerLimits = {
  ...DYNAMODB_LIMITS,
  maxSinkWrites: 3,
  deadLetter: { maxValueBytes: 4, maxKeyBytes: 2, maxHeaderBytes: 8, maxErrorChars: 30 },
};

/** `writesPer(offset)` puts for each record, into a ledger publishing `small`. */
async function run(records: number, writesPer: (offset: number) => number) {
  const stream = parseStreamConfig(
    {
      id: 's',
      kafka: { brokers: ['localhost:9092'] },
      topics: [T],
      handler: { module: 'm', mode: 'dynamodb-exactly-once', sinkTable: 'sink' },
      maxAttempts: 2,
    },
    'test',
  );
  const ledger = createMemoryLedger({ limits: small });
  const reader = createMemoryRangeReader();
  reader.append(
    T,
    0,
    Array.from({ length: records }, (_, i) => ({ key: `key-${i}`, value: `value-${i}` })),
  );
  const lease = await ledger.acquirePlannerLease({ stream: 's', ownerToken: 'p', nowMs: 0, leaseMs: 1 });
  if (!lease.acquired) throw new Error('lease');
  await ledger.applyPlan({
    stream: 's',
    epoch: lease.epoch,
    ownerToken: 'p',
    writes: [
      {
        kind: 'register-partition',
        partition: { stream: 's', topic: T, partition: 0, status: 'active', startOffset: 0, committed: 0, nextFrom: 0, firstSeenAtMs: 0 },
      },
      {
        kind: 'plan-range',
        range: {
          stream: 's',
          topic: T,
          partition: 0,
          from: 0,
          until: records,
          status: 'planned',
          epoch: lease.epoch,
          plannedAtMs: 0,
          dispatches: 1,
          attempts: 0,
          progress: 0,
        },
        partitionUpdate: { lastPlannedAtMs: 0 },
      },
    ],
  });
  const handler: RecordsHandler = {
    mode: 'dynamodb-exactly-once',
    handle: (batch) =>
      batch.flatMap((r): SinkWrite[] =>
        Array.from({ length: writesPer(r.offset) }, (_, i) => ({ put: { item: { pk: `${r.offset}#${i}` } } })),
      ),
  };
  const commits: number[] = [];
  const counting = {
    ...ledger,
    commitChunk: (input: Parameters<typeof ledger.commitChunk>[0]) => (
      commits.push(input.sinkWrites?.length ?? 0),
      ledger.commitChunk(input)
    ),
  };
  const res = await processRange(
    {
      ledger: counting,
      readerFor: async () => reader,
      handlerFor: () => handler,
      clock: () => 10_000,
      sleep: async () => undefined,
      maxChunkRecords: 8,
    },
    { stream, range: { stream: 's', topic: T, partition: 0, from: 0, until: records }, deadlineAtMs: 600_000 },
  );
  return { res, commits, ledger };
}

describe('commit limits', () => {
  it('splits a chunk until each commit holds at most the published number of sink writes', async () => {
    const { res, commits, ledger } = await run(8, () => 1);
    expect(res).toMatchObject({ status: 'done', records: 8, deadLetters: 0 });
    expect(Math.max(...commits)).toBeLessThanOrEqual(small.maxSinkWrites);
    expect(ledger.store('s').sinkWrites).toHaveLength(8);
  });

  it('dead-letters a record whose own writes exceed the limits, sized by the published dead-letter limits', async () => {
    const { res, ledger } = await run(4, (offset) => (offset === 2 ? 4 : 1));
    expect(res).toMatchObject({ status: 'done', records: 3, deadLetters: 1 });
    const [letter] = ledger.store('s').deadLetters;
    expect(letter).toMatchObject({ offset: 2, truncated: true, valueBytes: 7 });
    expect(Buffer.from(letter?.valueBase64 ?? '', 'base64').toString()).toBe('valu');
    expect(Buffer.from(letter?.keyBase64 ?? '', 'base64').toString()).toBe('ke');
    expect(letter?.error).toHaveLength(small.deadLetter.maxErrorChars);
  });
});
