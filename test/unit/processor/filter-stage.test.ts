/**
 * The filters stage in the processor (in-memory ledger and reader): only matching records reach the
 * handler, filtered ones count in `filtered` and are committed, and the range completes, on the
 * chunk committer (at-least-once and exactly-once) and the folding committer alike.
 */
import { parseStreamConfig, type StreamConfigInput } from '../../../lib/config/schema';
import { runningTotals } from '../../../lib/handlers/running-totals';
import type { HandlerRecord, RecordsHandler } from '../../../lib/processor/handler-api';
import { recordStagesFor } from '../../../lib/processor/record-stages';
import { processorFixture } from '../../support/processor-fixture';

/** 12 records: amounts 0..11 for accounts acct-0..2; odd offsets are refunds, every fourth is plain text. */
const RECORDS = Array.from({ length: 12 }, (_, i) => ({
  key: `acct-${i % 3}`,
  value: i % 4 === 3 ? `plain text ${i}` : JSON.stringify({ amount: i, type: i % 2 === 0 ? 'order' : 'refund' }),
  headers: i === 5 ? [{ key: 'priority', value: Buffer.from('high') }] : [],
}));
/** Orders, or anything with a high-priority header (offset 5): offsets 0, 2, 4, 5, 6, 8, 10. */
const FILTERS: StreamConfigInput['filters'] = [{ value: { type: ['order'] } }, { headers: { priority: ['high'] } }];
const KEPT = [0, 2, 4, 5, 6, 8, 10];

function recorder(): { handler: RecordsHandler; seen: number[] } {
  const seen: number[] = [];
  return {
    seen,
    handler: { mode: 'at-least-once', handle: (records: HandlerRecord[]) => void seen.push(...records.map((r) => r.offset)) },
  };
}

describe('filters stage', () => {
  it('is the last stage', async () => {
    const stream = parseStreamConfig(
      { id: 's', kafka: { brokers: ['localhost:9092'] }, topics: ['t'], maxRecordAgeMs: 60_000, filters: FILTERS },
      'test',
    );
    expect((await recordStagesFor(stream, { firstLeasedAtMs: 0 })).map((s) => s.name)).toEqual(['maxRecordAgeMs', 'filters']);
    const unfiltered = parseStreamConfig({ id: 's', kafka: { brokers: ['localhost:9092'] }, topics: ['t'], filters: [] }, 'test');
    expect(await recordStagesFor(unfiltered, { firstLeasedAtMs: 0 })).toEqual([]);
  });

  it('at-least-once: hands the handler exactly the matching records, counts the rest, completes the range', async () => {
    const r = recorder();
    const t = await processorFixture({
      records: RECORDS,
      handler: r.handler,
      stream: { filters: FILTERS, handler: { module: 'noop', mode: 'at-least-once' } },
    });
    const res = await t.run();
    expect(res).toMatchObject({
      status: 'done',
      records: KEPT.length,
      filtered: RECORDS.length - KEPT.length,
      progress: 12,
      deadLetters: 0,
    });
    expect(r.seen).toEqual(KEPT);
    expect(t.rangeItem()).toMatchObject({ status: 'done', progress: 12 });
  });

  it('commits a chunk whose records were all filtered out, so the range still completes', async () => {
    const r = recorder();
    const t = await processorFixture({
      records: RECORDS,
      handler: r.handler,
      stream: { filters: [{ value: { type: ['nothing-is-this'] } }], handler: { module: 'noop', mode: 'at-least-once' } },
    });
    expect(await t.run()).toMatchObject({ status: 'done', records: 0, filtered: 12, progress: 12 });
    expect(r.seen).toEqual([]);
  });

  it('exactly-once folded: folds only the matching records (a plain-text record never reaches map and is never dead-lettered)', async () => {
    const t = await processorFixture({ records: RECORDS, handler: runningTotals, stream: { filters: [{ value: { type: ['order'] } }] } });
    const res = await t.run();
    expect(res).toMatchObject({ status: 'done', filtered: 6, deadLetters: 0, progress: 12 });
    const totals: Record<string, number> = {};
    for (const w of t.ledger.store('s').sinkWrites) {
      if ('update' in w) totals[String(w.update.key.pk)] = (totals[String(w.update.key.pk)] ?? 0) + Number(w.update.values?.[':total']);
    }
    // Orders: offsets 0, 2, 4, 6, 8, 10 -> acct-0: 0+6, acct-1: 4+10, acct-2: 2+8.
    expect(totals).toEqual({ 'acct-0': 6, 'acct-1': 14, 'acct-2': 10 });
    expect(t.rangeItem()).toMatchObject({ status: 'done', progress: 12 });
  });

  it('without the filter the same range dead-letters the plain-text records (the filter is what keeps them out)', async () => {
    const t = await processorFixture({ records: RECORDS, handler: runningTotals, stream: {} });
    expect(await t.run()).toMatchObject({ status: 'done', filtered: 0, deadLetters: 3 });
  });

  it('exactly-once chunk by chunk: the same records reach handle', async () => {
    const seen: number[] = [];
    const chunked: RecordsHandler = {
      mode: 'dynamodb-exactly-once',
      handle: (records, ctx) => {
        seen.push(...records.map((x) => x.offset));
        return runningTotals.handle(records, ctx);
      },
    };
    const t = await processorFixture({ records: RECORDS, handler: chunked, stream: { filters: FILTERS } });
    expect(await t.run()).toMatchObject({ status: 'done', filtered: 5, deadLetters: 0, progress: 12 });
    expect(seen).toEqual(KEPT);
  });
});
