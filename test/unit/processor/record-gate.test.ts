/** The stages before the handler: verdict order, and what each committer does with pass, skip and reject. */
import fc from 'fast-check';
import { runningTotals } from '../../../lib/handlers/running-totals';
import type { OpsContext } from '../../../lib/ops/context';
import { redriveDeadLetters } from '../../../lib/ops/dead-letters';
import { createExpiryStage } from '../../../lib/processor/expiry-stage';
import type { HandlerRecord, RecordsHandler } from '../../../lib/processor/handler-api';
import { judgeChunk, type GateVerdict, type RecordStage } from '../../../lib/processor/record-gate';
import { FIXTURE_TOPIC as T, processorFixture } from '../../support/processor-fixture';

const amountOf = (r: HandlerRecord) => (JSON.parse(String(r.value)) as { amount: number }).amount;

/** Rejects amounts divisible by 5, skips (filters) those divisible by 3, passes the rest. */
const byAmount: RecordStage = {
  name: 'by-amount',
  judge(record) {
    const amount = amountOf(record);
    if (amount % 5 === 0) return { kind: 'reject', cause: 'undecodable', error: `amount ${amount} is a multiple of 5` };
    if (amount % 3 === 0) return { kind: 'skip', reason: 'filtered' };
    return { kind: 'pass', record: { ...record, decoded: { value: { amount } } } };
  },
};
const passes = (amount: number) => amount % 5 !== 0 && amount % 3 !== 0;

function recordAt(offset: number, timestampMs = 1_000): HandlerRecord {
  return {
    topic: T,
    partition: 0,
    offset,
    timestampMs,
    timestampType: 'CreateTime',
    key: null,
    value: Buffer.from(JSON.stringify({ amount: offset })),
    headers: [],
    idempotencyKey: `${T}/0/${offset}`,
  };
}

describe('judgeChunk', () => {
  it('runs the stages in order, each on what the ones before it passed', async () => {
    const seen: number[][] = [];
    const spy: RecordStage = {
      name: 'spy',
      prepare: async (records) => void seen.push(records.map((r) => r.offset)),
      judge: (record) => ({ kind: 'pass', record }),
    };
    const verdicts = await judgeChunk(
      [byAmount, spy],
      [0, 1, 2, 3, 4, 5].map((o) => recordAt(o)),
    );
    expect(verdicts.map((v) => v.kind)).toEqual(['reject', 'pass', 'pass', 'skip', 'pass', 'reject']);
    expect(seen).toEqual([[1, 2, 4]]);
  });

  it('never calls a later stage when nothing passed, and passes everything through no stages', async () => {
    const never: RecordStage = { name: 'never', prepare: async () => fail('prepared'), judge: () => fail('judged') };
    const verdicts = await judgeChunk([byAmount, never], [recordAt(0), recordAt(3)]);
    expect(verdicts.map((v) => v.kind)).toEqual(['reject', 'skip']);
    const none = await judgeChunk([], [recordAt(7)]);
    expect(none).toEqual([{ kind: 'pass', record: recordAt(7) }]);
  });
});

describe('maxRecordAgeMs', () => {
  const reference = 100_000;
  it.each([
    // timestamp, action, verdict
    [100_000 - 60_000, 'dead-letter', 'pass'], // exactly the limit: not older than it
    [100_000 - 60_001, 'dead-letter', 'reject'],
    [100_000 - 60_001, 'skip', 'skip'],
    [100_500, 'skip', 'pass'], // written after the lease (clock skew): young
  ] as const)('a record stamped %d with %s is a %s', (timestampMs, expiredRecords, kind) => {
    const stage = createExpiryStage({ maxRecordAgeMs: 60_000, expiredRecords }, reference);
    const verdict = stage.judge(recordAt(0, timestampMs));
    expect(verdict.kind).toBe(kind);
    if (verdict.kind === 'reject') {
      expect(verdict).toMatchObject({ cause: 'expired', error: expect.stringContaining('older than maxRecordAgeMs (60000)') });
    }
    if (verdict.kind === 'skip') expect(verdict.reason).toBe('expired');
  });

  it('decides by the reference alone: the same record, the same verdict (property)', () => {
    fc.assert(
      fc.property(fc.nat(10_000_000), fc.nat(10_000_000), fc.integer({ min: 1, max: 5_000_000 }), (ts, ref, maxAge) => {
        const stage = createExpiryStage({ maxRecordAgeMs: maxAge, expiredRecords: 'skip' }, ref);
        const verdict: GateVerdict = stage.judge(recordAt(0, ts));
        expect(verdict.kind === 'pass').toBe(ref - ts <= maxAge);
      }),
    );
  });
});

/** A handler that remembers what it saw, per mode. */
function recording(mode: 'at-least-once' | 'dynamodb-exactly-once') {
  const seen: HandlerRecord[] = [];
  const handler: RecordsHandler =
    mode === 'at-least-once'
      ? { mode, handle: (records) => void seen.push(...records) }
      : { mode, handle: (records, ctx) => (seen.push(...records), runningTotals.handle(records, ctx)) };
  return { seen, handler };
}

describe('committers with stages', () => {
  const N = 23;
  const records = Array.from({ length: N }, (_, i) => ({ key: `acct-${i % 3}`, value: JSON.stringify({ amount: i }) }));
  const expectedOffsets = records.map((_, i) => i).filter(passes);
  const rejected = records.map((_, i) => i).filter((i) => i % 5 === 0);
  const filtered = records.map((_, i) => i).filter((i) => i % 5 !== 0 && i % 3 === 0);

  it.each(['at-least-once', 'dynamodb-exactly-once'] as const)(
    '%s: the handler sees exactly the passing records, with what the stage added; rejects become dead letters; the range completes',
    async (mode) => {
      const { seen, handler } = recording(mode);
      const t = await processorFixture({ records, handler, deps: { stagesFor: async () => [byAmount] } });
      const res = await t.run();
      expect(res).toMatchObject({ status: 'done', progress: N, records: expectedOffsets.length, filtered: filtered.length });
      expect(res.deadLetters).toBe(rejected.length);
      expect(seen.map((r) => r.offset)).toEqual(expectedOffsets);
      expect(seen.every((r) => (r.decoded?.value as { amount: number }).amount === r.offset)).toBe(true);
      const letters = await t.ledger.listDeadLetters('s');
      expect(letters.map((d) => d.offset).sort((a, b) => a - b)).toEqual(rejected);
      expect(letters.every((d) => d.cause === 'undecodable' && d.attempts === 0 && /multiple of 5/.test(d.error))).toBe(true);
      expect(t.ledger.store('s').partitions.get(`${T}/0`)).toMatchObject({ committed: N });
    },
  );

  it('folded exactly-once: totals hold only passing records, and a crash mid-batch replays to the same totals', async () => {
    const expectTotals: Record<string, number> = {};
    for (const i of expectedOffsets) expectTotals[`acct-${i % 3}`] = (expectTotals[`acct-${i % 3}`] ?? 0) + i;
    const totalsOf = (t: Awaited<ReturnType<typeof processorFixture>>) => {
      const out: Record<string, number> = {};
      for (const w of t.ledger.store('s').sinkWrites) {
        if ('update' in w) out[String(w.update.key.pk)] = (out[String(w.update.key.pk)] ?? 0) + Number(w.update.values?.[':total']);
      }
      return out;
    };
    const t = await processorFixture({ records, deps: { stagesFor: async () => [byAmount], fold: { atomicMaxWrites: 0 } } });
    let crashed = 0;
    await expect(
      t.run({
        afterStep: (step) => {
          if (step === 'sink-written' && crashed++ === 1) throw new Error('killed after a marked write');
        },
      }),
    ).rejects.toThrow('killed after a marked write');
    expect(crashed).toBe(2);
    t.advance(2_000_000);
    const res = await t.run();
    expect(res.status).toBe('done');
    expect(totalsOf(t)).toEqual(expectTotals);
    expect((await t.ledger.listDeadLetters('s')).map((d) => d.offset).sort((a, b) => a - b)).toEqual(rejected);
  });

  it('stops the partition on an undecodable record under poisonPolicy stop-partition', async () => {
    const t = await processorFixture({ records, stream: { poisonPolicy: 'stop-partition' }, deps: { stagesFor: async () => [byAmount] } });
    const res = await t.run();
    expect(res).toMatchObject({ status: 'parked', progress: 0, reason: expect.stringContaining('multiple of 5') });
    expect(await t.ledger.listDeadLetters('s')).toEqual([]);
  });

  it('maxRecordAgeMs from the config: records older than the limit at the first lease are dead-lettered with cause expired', async () => {
    // The fixture's clock starts at 10,000 ms; records stamped 1,000 + offset except the young ones.
    const aged = records.map((r, i) => ({ ...r, timestampMs: i < 10 ? 1_000 : 9_500 }));
    const t = await processorFixture({ records: aged, stream: { maxRecordAgeMs: 5_000 } });
    const res = await t.run();
    expect(res).toMatchObject({ status: 'done', records: N - 10, deadLetters: 10, expired: 0 });
    const letters = await t.ledger.listDeadLetters('s');
    expect(letters.every((d) => d.cause === 'expired' && d.offset < 10)).toBe(true);

    // A re-drive hands the expired records to the handler: an operator chose them, they are not aged again.
    const ctx = { ledger: t.ledger, readerFor: async () => t.reader, handlerFor: () => runningTotals } as unknown as OpsContext;
    const redriven = await redriveDeadLetters(ctx, t.stream, { all: true, nowMs: () => 50_000 });
    expect(redriven.map((r) => r.outcome)).toEqual(Array(10).fill('redriven'));

    const skipping = await processorFixture({ records: aged, stream: { maxRecordAgeMs: 5_000, expiredRecords: 'skip' } });
    expect(await skipping.run()).toMatchObject({ status: 'done', records: N - 10, deadLetters: 0, expired: 10 });
  });
});
