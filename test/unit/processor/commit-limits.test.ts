/** The processor keeps every commit within the limits the ledger publishes (here smaller than DynamoDB's). */
import { DYNAMODB_LIMITS } from '../../../lib/ledger/limits.dynamodb';
import type { LedgerLimits } from '../../../lib/ports/commit-limits';
import type { SinkWrite } from '../../../lib/ports/sink-write';
import type { RecordsHandler } from '../../../lib/processor/handler-api';
import { processorFixture } from '../../support/processor-fixture';

const small: LedgerLimits = {
  ...DYNAMODB_LIMITS,
  maxSinkWrites: 3,
  deadLetter: { maxValueBytes: 4, maxKeyBytes: 2, maxHeaderBytes: 8, maxErrorChars: 30 },
};

/** `writesPer(offset)` puts for each record, into a ledger publishing `small`. */
async function run(records: number, writesPer: (offset: number) => number) {
  const handler: RecordsHandler = {
    mode: 'dynamodb-exactly-once',
    handle: (batch) =>
      batch.flatMap((r): SinkWrite[] =>
        Array.from({ length: writesPer(r.offset) }, (_, i) => ({ put: { item: { pk: `${r.offset}#${i}` } } })),
      ),
  };
  const t = await processorFixture({
    records: Array.from({ length: records }, (_, i) => ({ key: `key-${i}`, value: `value-${i}` })),
    stream: { handler: { module: 'm', mode: 'dynamodb-exactly-once', sinkTable: 'sink' }, maxAttempts: 2 },
    limits: small,
    handler,
    deps: { clock: () => 10_000, maxChunkRecords: 8 },
  });
  const { ledger } = t;
  const commits: number[] = [];
  const counting = {
    ...ledger,
    commitChunk: (input: Parameters<typeof ledger.commitChunk>[0]) => (
      commits.push(input.sinkWrites?.length ?? 0),
      ledger.commitChunk(input)
    ),
  };
  const res = await t.run({ ledger: counting }, 600_000);
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
