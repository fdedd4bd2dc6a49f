/** The processor on the in-memory ledger and reader: exactly-once application, leases, resume, faults. */
import type { StreamConfigInput } from '../../../lib/config/schema';
import { runningTotals } from '../../../lib/handlers/running-totals';
import { StoreError } from '../../../lib/errors';
import type { SinkWrite } from '../../../lib/ports/sink-write';
import { redriveDeadLetters } from '../../../lib/ops/dead-letters';
import type { OpsContext } from '../../../lib/ops/context';
import type { HandlerRecord, RecordsHandler } from '../../../lib/processor/handler-api';
import { processRange, type ProcessorDeps } from '../../../lib/processor/process-range';
import { FIXTURE_TOPIC as T, processorFixture } from '../../support/processor-fixture';

/** running-totals committed chunk by chunk (the plain `handle` contract, without its fold). */
const chunkedTotals: RecordsHandler = { mode: 'dynamodb-exactly-once', handle: (records, ctx) => runningTotals.handle(records, ctx) };

async function setup(opts: { stream?: Partial<StreamConfigInput>; records?: number; handler?: RecordsHandler; until?: number } = {}) {
  const n = opts.records ?? 10;
  const t = await processorFixture({
    records: Array.from({ length: n }, (_, i) => ({ key: `acct-${i % 3}`, value: JSON.stringify({ amount: i }) })),
    stream: opts.stream,
    handler: opts.handler,
    until: opts.until,
  });
  const { ledger } = t;
  /** Total per key as the sink would hold it after applying every committed ADD. */
  const totals = () => {
    const out: Record<string, number> = {};
    for (const w of ledger.store('s').sinkWrites) {
      if (!('update' in w)) continue;
      const key = String(w.update.key.pk);
      out[key] = (out[key] ?? 0) + Number(w.update.values?.[':total']);
    }
    return out;
  };
  const expected = (count: number) => {
    const out: Record<string, number> = {};
    for (let i = 0; i < count; i++) out[`acct-${i % 3}`] = (out[`acct-${i % 3}`] ?? 0) + i;
    return out;
  };
  return { ...t, totals, expected };
}

describe('processRange', () => {
  it('applies every record of the range once and completes it', async () => {
    const t = await setup();
    const res = await t.run();
    expect(res).toMatchObject({ status: 'done', records: 10, chunks: 3, progress: 10, remaining: 0 });
    expect(t.totals()).toEqual(t.expected(10));
    expect(t.ledger.store('s').sinkWrites.every((w) => 'update' in w && w.update.table === 'totals')).toBe(true);
    expect(await t.ledger.readPartition('s', T, 0)).toMatchObject({ committed: 10, lastRange: { records: 10 } });
    expect(t.ledger.store('s').ranges.get(`${T}/0/0`)).toMatchObject({ status: 'done', records: 10 });
  });

  it('returns the summary of a range that is already done, and applies nothing again', async () => {
    const t = await setup();
    await t.run();
    const writes = t.ledger.store('s').sinkWrites.length;
    const again = await t.run();
    expect(again).toMatchObject({ status: 'already-done', records: 10, progress: 10 });
    expect(t.ledger.store('s').sinkWrites).toHaveLength(writes);
  });

  it('gives exactly one application when the same range is invoked twice at once', async () => {
    const t = await setup({ records: 40 });
    const [a, b] = await Promise.all([t.run({ leaseToken: 'A' }), t.run({ leaseToken: 'B' })]);
    expect([a.status, b.status].sort()).toEqual(['done', 'held-elsewhere']);
    expect(t.totals()).toEqual(t.expected(40));
  });

  it('resumes after a crash between the handler and the commit, applying each record once', async () => {
    const t = await setup({ records: 12, handler: chunkedTotals });
    let handled = 0;
    const crash = {
      afterStep: (step: string) => {
        if (step === 'handled' && ++handled === 2) throw new Error('killed between handler and commit');
      },
    };
    await expect(t.run(crash)).rejects.toThrow('killed between handler and commit');
    expect(t.ledger.store('s').ranges.get(`${T}/0/0`)).toMatchObject({ progress: 4, status: 'failed' });
    t.advance(1000);
    const res = await t.run();
    expect(res).toMatchObject({ status: 'done', records: 8 });
    expect(t.totals()).toEqual(t.expected(12));
  });

  it('gives back the attempt of a failure after committed progress, so a range that keeps moving is never exhausted', async () => {
    const t = await setup({ records: 20, handler: chunkedTotals, stream: { maxAttempts: 1 } });
    // Every attempt commits two chunks and fails at the second's end: three attempts, one allowed.
    for (let i = 1; i <= 2; i++) {
      let commits = 0;
      const failing = {
        afterStep: (step: string) => {
          if (step === 'committed' && ++commits === 2)
            throw new StoreError('DynamoDB TransactWriteItems failed (2 attempts): InternalServerError');
        },
      };
      // A one-range invocation fails (Lambda retries it); the range records the failure.
      await expect(t.run(failing)).rejects.toThrow(StoreError);
      expect(t.rangeItem()).toMatchObject({ status: 'failed', progress: 8 * i, attempts: 0 });
      t.advance(1000);
    }
    expect(await t.run()).toMatchObject({ status: 'done' });
    expect(t.totals()).toEqual(t.expected(20));
  });

  it('counts a failure without progress as an attempt: the limit then refuses the range', async () => {
    const t = await setup({ records: 12, handler: chunkedTotals, stream: { maxAttempts: 1 } });
    const failing = {
      afterStep: (step: string) => {
        if (step === 'leased') throw new StoreError('DynamoDB TransactWriteItems failed (2 attempts): InternalServerError');
      },
    };
    await expect(t.run(failing)).rejects.toThrow(StoreError);
    expect(t.rangeItem()).toMatchObject({ status: 'failed', progress: 0, attempts: 1 });
    t.advance(1000);
    expect(await t.run()).toMatchObject({ status: 'exhausted' });
  });

  it('resumes after a hard kill (lease kept until expiry) from the last committed chunk', async () => {
    const t = await setup({ records: 12, handler: chunkedTotals });
    let commits = 0;
    // A hard kill: the process dies after its second commit and never records anything.
    const killed = t.run({
      leaseToken: 'dead',
      afterStep: (step) => {
        if (step === 'committed' && ++commits === 2) return new Promise<never>(() => undefined);
      },
    });
    void killed;
    await new Promise((r) => setImmediate(r));
    expect((await t.run({ leaseToken: 'early' })).status).toBe('held-elsewhere');
    t.advance(t.stream.processor.leaseMs + 1);
    const res = await t.run({ leaseToken: 'late' });
    expect(res).toMatchObject({ status: 'done', records: 4 });
    expect(t.totals()).toEqual(t.expected(12));
  });

  it('judges the lease on the store clock: a processor whose own clock runs ahead by more than leaseMs does not take a held lease', async () => {
    const t = await setup({ records: 12 });
    const leaseMs = t.stream.processor.leaseMs;
    // The holder (store time = its clock) stops at its first chunk, keeping the lease.
    const holder = t.run({
      leaseToken: 'holder',
      storeClock: async () => t.now(),
      afterStep: (step) => {
        if (step === 'handled') return new Promise<never>(() => undefined);
      },
    });
    void holder;
    await new Promise((r) => setImmediate(r));
    const handed: number[] = [];
    const counting: RecordsHandler = {
      mode: 'at-least-once',
      handle: async (records) => void handed.push(...records.map((r) => r.offset)),
    };
    const ahead = () => t.now() + 2 * leaseMs;
    const res = await t.run({ leaseToken: 'skewed', clock: ahead, storeClock: async () => t.now(), handlerFor: () => counting });
    expect(res.status).toBe('held-elsewhere');
    expect(handed).toEqual([]);
    const range = t.ledger.store('s').ranges.get(`${T}/0/0`)!;
    expect(range).toMatchObject({ leaseToken: 'holder', attempts: 1 });
    // By its own clock the lease had expired: only the store clock kept it out.
    expect(range.leaseExpiresAtMs!).toBeLessThan(ahead());
  });

  it('stops before the deadline, releases the range with its progress, and a later invocation finishes', async () => {
    const t = await setup({ records: 12, handler: chunkedTotals });
    let chunks = 0;
    const slow = {
      afterStep: (step: string) => {
        if (step === 'committed' && ++chunks >= 1) t.advance(3000);
      },
    };
    const first = await t.run(slow, t.now() + 5000);
    expect(first.status).toBe('partial');
    expect(first.progress).toBeGreaterThan(0);
    expect(first.remaining).toBe(12 - first.progress);
    const r = t.ledger.store('s').ranges.get(`${T}/0/0`)!;
    expect(r).toMatchObject({ status: 'planned', progress: first.progress, attempts: 0 });
    expect(r.dispatchedAtMs).toBeUndefined();
    const second = await t.run();
    expect(second).toMatchObject({ status: 'done', records: 12 - first.progress });
    expect(t.totals()).toEqual(t.expected(12));
  });

  it("hands the handler the invocation's signal: aborted with it, the range stops after that chunk and a later invocation finishes", async () => {
    const invocation = new AbortController();
    const seen: boolean[] = [];
    let signal: AbortSignal | undefined;
    const aborting: RecordsHandler = {
      mode: 'dynamodb-exactly-once',
      handle: (records, ctx) => {
        signal = ctx.signal;
        seen.push(ctx.signal.aborted);
        invocation.abort();
        return runningTotals.handle(records, ctx);
      },
    };
    const t = await setup({ records: 12, handler: aborting });
    const first = await t.run({}, undefined, invocation.signal);
    expect(seen).toEqual([false]);
    expect(signal?.aborted).toBe(true);
    expect(first).toMatchObject({ status: 'partial', progress: 4 });
    const second = await t.run({ handlerFor: () => chunkedTotals });
    expect(second).toMatchObject({ status: 'done', records: 8 });
    expect(t.totals()).toEqual(t.expected(12));
  });

  it('hands the handler a signal that never aborts when the invocation has none', async () => {
    let signal: AbortSignal | undefined;
    const t = await setup({
      records: 4,
      handler: { mode: 'dynamodb-exactly-once', handle: (r, ctx) => ((signal = ctx.signal), runningTotals.handle(r, ctx)) },
    });
    expect(await t.run()).toMatchObject({ status: 'done' });
    expect(signal?.aborted).toBe(false);
  });

  it('commits at-least-once progress on an interval of records, and redelivers only what followed the last commit', async () => {
    const handed: number[] = [];
    const counting: RecordsHandler = {
      mode: 'at-least-once',
      handle: async (records) => void handed.push(...records.map((r) => r.offset)),
    };
    const t = await setup({ records: 40, handler: counting, stream: { processor: { commitEveryRecords: 10, commitEveryMs: 3_600_000 } } });
    const commits: Array<{ from: number; to: number }> = [];
    const crash = {
      afterStep: (step: string, d: { from: number; to: number }) => {
        if (step === 'committed') commits.push(d);
        if (step === 'handled' && d.from === 28) throw new Error('killed after 28 handled');
      },
    };
    await expect(t.run(crash)).rejects.toThrow('killed after 28');
    // Chunks of 4: commits once 10 records were handled since the last one (at 12 and 24), not after every chunk.
    expect(commits).toEqual([
      { from: 0, to: 12 },
      { from: 12, to: 24 },
    ]);
    expect(t.ledger.store('s').ranges.get(`${T}/0/0`)).toMatchObject({ progress: 24, status: 'failed' });
    t.advance(1000);
    const res = await t.run({
      afterStep: (step: string, d: { from: number; to: number }) => void (step === 'committed' && commits.push(d)),
    });
    expect(res).toMatchObject({ status: 'done', progress: 40 });
    // 24..27 were handed twice (handled, not committed, before the kill); everything was handed at least once.
    expect(new Set(handed).size).toBe(40);
    expect(handed.filter((o) => o >= 24 && o < 28)).toHaveLength(8);
    expect(handed).toHaveLength(44);
    // The commit to the range's end is the completion's own (one write: progress 36 -> 40 and done).
    expect(commits.slice(2)).toEqual([{ from: 24, to: 36 }]);
    expect(t.ledger.store('s').ranges.get(`${T}/0/0`)).toMatchObject({ progress: 40, status: 'done' });
  });

  it('commits at-least-once progress once the time interval passed, whatever the record count', async () => {
    const counting: RecordsHandler = { mode: 'at-least-once', handle: async () => undefined };
    const t = await setup({
      records: 16,
      handler: counting,
      stream: { processor: { commitEveryRecords: 1_000_000, commitEveryMs: 5000 } },
    });
    const commits: number[] = [];
    await t.run({
      afterStep: (step: string, d: { from: number; to: number }) => {
        if (step === 'handled') t.advance(2000);
        if (step === 'committed') commits.push(d.to);
      },
    });
    // Chunks of 4 at 2 s each: due after the third chunk (6 s); the end is the completion's.
    expect(commits).toEqual([12]);
  });

  it('dead-letters a poison record after the attempt limit and continues the range', async () => {
    const t = await setup({ records: 6, stream: { maxAttempts: 3 } });
    t.reader.append(T, 0, [{ key: 'acct-x', value: 'not json' }]);
    t.reader.append(T, 0, [{ key: 'acct-0', value: JSON.stringify({ amount: 100 }) }]);
    const t2 = await setupWith(t, 8);
    const res = await t2.run();
    expect(res).toMatchObject({ status: 'done', records: 7, deadLetters: 1 });
    const [dl] = t.ledger.store('s').deadLetters;
    expect(dl).toMatchObject({ offset: 6, attempts: 3, valueBase64: Buffer.from('not json').toString('base64') });
    expect(dl?.error).toMatch(/handler rejected payments\/0\/6 3 times: Error: record payments\/0\/6: value is not JSON/);
    expect(t.totals()).toEqual({ ...t.expected(6), 'acct-0': t.expected(6)['acct-0']! + 100 });
  });

  it('gives dead letters the stream retention, and keeps only coordinates when asked to', async () => {
    const full = await setup({ records: 2 });
    full.reader.append(T, 0, [{ key: 'alice', value: 'card 4111-1111' }]);
    expect(await (await setupWith(full, 3)).run()).toMatchObject({ status: 'done', deadLetters: 1 });
    const [kept] = full.ledger.store('s').deadLetters;
    expect(kept).toMatchObject({
      kept: 'record',
      keyBase64: Buffer.from('alice').toString('base64'),
      expiresAtMs: kept!.createdAtMs + 14 * 86_400_000,
    });

    const bare = await setup({ records: 2, stream: { deadLetters: { keep: 'coordinates', retentionDays: 3 } } });
    bare.reader.append(T, 0, [{ key: 'alice', value: 'card 4111-1111' }]);
    expect(await (await setupWith(bare, 3)).run()).toMatchObject({ status: 'done', deadLetters: 1 });
    const [dl] = bare.ledger.store('s').deadLetters;
    expect(dl).toMatchObject({
      topic: T,
      partition: 0,
      offset: 2,
      kept: 'coordinates',
      keyBase64: null,
      valueBase64: null,
      headers: {},
      valueBytes: 14,
    });
    expect(dl!.expiresAtMs).toBe(dl!.createdAtMs + 3 * 86_400_000);
    expect(dl!.error).toMatch(/handler rejected payments\/0\/2/);
    expect(JSON.stringify(dl)).not.toMatch(/alice|4111|YWxpY2U/);
  });

  it('parks the range on a poison record when the policy is stop-partition', async () => {
    const t = await setup({ records: 2, stream: { poisonPolicy: 'stop-partition', maxAttempts: 2 } });
    t.reader.append(T, 0, [{ key: 'k', value: '{' }]);
    const res = await (await setupWith(t, 3)).run();
    expect(res.status).toBe('parked');
    expect(res.reason).toMatch(/POISON_RECORD: handler rejected payments\/0\/2 2 times/);
    expect(t.ledger.store('s').ranges.get(`${T}/0/0`)).toMatchObject({ status: 'parked', progress: 2 });
    expect(t.totals()).toEqual(t.expected(2));
  });

  it('splits a chunk whose writes do not fit one transaction', async () => {
    const perRecord: RecordsHandler = {
      mode: 'dynamodb-exactly-once',
      handle: (records) =>
        records.flatMap((r): SinkWrite[] => Array.from({ length: 30 }, (_, i) => ({ put: { item: { pk: `${r.idempotencyKey}#${i}` } } }))),
    };
    const t = await setup({ records: 8, handler: perRecord });
    const res = await t.run();
    expect(res).toMatchObject({ status: 'done', records: 8 });
    expect(t.ledger.store('s').sinkWrites).toHaveLength(240);
  });

  it('records retention losses mid-range per failOnDataLoss', async () => {
    const strict = await setup({ records: 10 });
    strict.reader.truncate(T, 0, 6);
    const parked = await strict.run();
    expect(parked).toMatchObject({ status: 'parked', dataLoss: { from: 0, until: 6 } });
    expect(parked.reason).toMatch(/DATA_LOSS: offsets \[0, 6\)/);

    const lenient = await setup({ records: 10, stream: { failOnDataLoss: false } });
    lenient.reader.truncate(T, 0, 6);
    const res = await lenient.run();
    expect(res).toMatchObject({ status: 'done', records: 4, dataLoss: { from: 0, until: 6 } });
    expect(lenient.ledger.store('s').losses).toEqual([expect.objectContaining({ from: 0, until: 6 })]);
  });

  it('parks the range when the partition was deleted, and fails it on infrastructure errors', async () => {
    const gone = await setup();
    gone.reader.deletePartition(T, 0);
    const res = await gone.run();
    expect(res.status).toBe('parked');
    expect(res.reason).toMatch(/^PARTITION_DELETED/);

    const flaky = await setup();
    flaky.reader.failNext(1, new StoreError('DynamoDB unavailable'));
    await expect(flaky.run()).rejects.toThrow('DynamoDB unavailable');
    expect(flaky.ledger.store('s').ranges.get(`${T}/0/0`)).toMatchObject({
      status: 'failed',
      lastError: expect.stringMatching(/DynamoDB unavailable/),
    });
  });

  it('refuses a range the ledger does not know', async () => {
    const t = await setup();
    const res = await processRange(t.deps, { stream: t.stream, range: { ...t.range, from: 5 }, deadlineAtMs: Infinity });
    expect(res.status).toBe('unknown-range');
  });
});

/** The same ledger and reader, with a range planned over the first `until` offsets instead. */
async function setupWith(t: Awaited<ReturnType<typeof setup>>, until: number) {
  const r = t.ledger.store('s').ranges.get(`${T}/0/0`)!;
  r.until = until;
  t.ledger.store('s').partitions.get(`${T}/0`)!.nextFrom = until;
  return {
    ...t,
    range: { ...t.range, until },
    run: (extra: Partial<ProcessorDeps> = {}) =>
      processRange({ ...t.deps, ...extra }, { stream: t.stream, range: { ...t.range, until }, deadlineAtMs: t.now() + 600_000 }),
  };
}

describe('dead letters keep headers exactly', () => {
  const hostile = [
    { key: 'constructor', value: Buffer.from('c') },
    { key: '__proto__', value: Buffer.from('p') },
    { key: 'a', value: Buffer.from('a1') },
    { key: 'b', value: null },
    { key: 'a', value: Buffer.from('a2') },
    { key: 'd', value: Buffer.from('d1') },
    { key: 'd', value: null },
    { key: '', value: Buffer.alloc(0) },
    { key: 'bin', value: Buffer.from([0xff, 0x00]) },
  ];

  it('stores headers in order with nulls and the timestamp type, and a re-drive from the stored copy hands the handler the same record', async () => {
    const t = await setup({ records: 2, stream: { maxAttempts: 1 } });
    t.reader.append(T, 0, [{ key: 'acct-x', value: 'not json', headers: hostile, timestampType: 'LogAppendTime' }]);
    expect(await (await setupWith(t, 3)).run()).toMatchObject({ status: 'done', deadLetters: 1 });
    const [dl] = t.ledger.store('s').deadLetters;
    expect(dl).toMatchObject({ offset: 2, timestampType: 'LogAppendTime', truncated: false, headersDropped: undefined });
    expect(dl!.headers).toEqual(hostile.map((h) => ({ key: h.key, valueBase64: h.value === null ? null : h.value.toString('base64') })));

    // Retention removed it from Kafka: the re-drive uses the stored copy, which must be the same record.
    t.reader.deletePartition(T, 0);
    const seen: HandlerRecord[] = [];
    const handler: RecordsHandler = { mode: 'at-least-once', handle: (records) => void seen.push(...records) };
    const ctx = { ledger: t.ledger, readerFor: async () => t.reader, handlerFor: () => handler } as unknown as OpsContext;
    expect(await redriveDeadLetters(ctx, t.stream, { all: true, nowMs: () => 50_000 })).toEqual([
      { id: `${T}/0/2`, outcome: 'redriven', source: 'stored' },
    ]);
    expect(seen).toEqual([
      {
        topic: T,
        partition: 0,
        offset: 2,
        timestampMs: 1_002,
        timestampType: 'LogAppendTime',
        key: Buffer.from('acct-x'),
        value: Buffer.from('not json'),
        headers: hostile,
        idempotencyKey: `${T}/0/2`,
      },
    ]);
  });

  it('cuts whole headers in write order when they exceed the item budget, and records how many it dropped', async () => {
    const t = await setup({ records: 1, stream: { maxAttempts: 1 } });
    const headers = [
      { key: 'first', value: Buffer.from('kept') },
      { key: 'big', value: Buffer.alloc(60 * 1024, 1) },
      { key: 'small-after-big', value: Buffer.from('x') },
      { key: 'last', value: null },
    ];
    t.reader.append(T, 0, [{ key: 'acct-x', value: 'not json', headers }]);
    expect(await (await setupWith(t, 2)).run()).toMatchObject({ status: 'done', deadLetters: 1 });
    const [dl] = t.ledger.store('s').deadLetters;
    expect(dl).toMatchObject({
      truncated: true,
      headersDropped: 3,
      headers: [{ key: 'first', valueBase64: Buffer.from('kept').toString('base64') }],
    });
    // A truncated copy is never re-driven as if it were the record.
    t.reader.deletePartition(T, 0);
    const ctx = { ledger: t.ledger, readerFor: async () => t.reader, handlerFor: () => runningTotals } as unknown as OpsContext;
    expect(await redriveDeadLetters(ctx, t.stream, { all: true, nowMs: () => 50_000 })).toEqual([
      expect.objectContaining({ outcome: 'failed', error: expect.stringMatching(/stored copy is truncated/) }),
    ]);
  });
});
