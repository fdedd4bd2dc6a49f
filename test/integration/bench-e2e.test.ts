/**
 * bench:e2e's moving parts on the real broker and emulator, small: the keyed Java producer's
 * per-account totals agree with what Kafka holds, and one drain per handler through the local
 * runtime reaches the end, checks the sink and counts the writes it sent.
 */
import { drainOnce } from '../../bench/drain';
import { createBenchTopic, endOffsetsOf } from '../../bench/stack';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { removeResources } from '../../lib/local/tool-cleanup';
import { javaConsume, javaProduceAccounts, type ProducedAccounts } from '../support/java';
import { testDynamo, testKafka, uniqueName } from '../support/env';

jest.setTimeout(180_000);

describe('bench:e2e parts', () => {
  const admin = testKafka('bench-e2e-test').admin();
  const dynamo = testDynamo();
  const topic = uniqueName('bench-e2e');
  const ledgerTable = uniqueName('bench-ledger');
  // What the tests create; the sink tables are added as the drains name them (a drain leaves its sink to its caller).
  const created = { topics: [topic], tables: [ledgerTable], groups: [] as string[] };
  const brokers = process.env.KAFKA_BROKERS as string;
  let produced: ProducedAccounts;
  let ends: number[];

  beforeAll(async () => {
    await admin.connect();
    await Promise.all([createBenchTopic(admin, topic, 3), ensureLedgerTable(dynamo, ledgerTable)]);
    produced = await javaProduceAccounts(brokers, { topic, records: 3000, accounts: 150, sizeBytes: 512, seed: 7 });
    ends = await endOffsetsOf(admin, topic);
  });

  afterAll(async () => {
    await removeResources(created, { admin, dynamo });
    await admin.disconnect();
    dynamo.destroy();
  });

  it('produces keyed 512 B records whose per-account totals are the ones printed', async () => {
    expect(produced.sent).toBe(3000);
    expect(ends.reduce((s, o) => s + o, 0)).toBe(3000);
    const records = await javaConsume(
      brokers,
      ends.map((until, partition) => ({ topic, partition, from: 0, until })),
    );
    const totals: Record<string, [number, number]> = {};
    for (const r of records) {
      const value = Buffer.from(r.valueBase64 as string, 'base64');
      const doc = JSON.parse(value.toString('utf8')) as { account: string; amount: number; pad: string };
      expect(value.length).toBe(512);
      expect(Buffer.from(r.keyBase64 as string, 'base64').toString('utf8')).toBe(doc.account);
      const t = (totals[doc.account] ??= [0, 0]);
      t[0] += doc.amount;
      t[1] += 1;
    }
    expect(totals).toEqual(produced.totals);
  });

  const sinkTable = (): string => {
    const name = uniqueName('bench-totals');
    created.tables.push(name);
    return name;
  };
  const drain = (handler: 'running-totals' | 'noop') =>
    drainOnce({
      brokers,
      ledgerTable,
      topic,
      endOffsets: () => ends,
      streamId: uniqueName(handler === 'noop' ? 'bench-alo' : 'bench-eo'),
      handler,
      ...(handler === 'running-totals' ? { sinkTable: sinkTable(), expected: () => produced.totals } : {}),
      triggerIntervalMs: 1000,
      timeoutMs: 120_000,
      log: () => undefined,
    });

  it('drains exactly-once into totals equal to the produced ones, counting the transactional sink writes', async () => {
    const d = await drain('running-totals');
    expect(d).toMatchObject({ records: 3000, exact: true });
    // Three partitions' ranges of 1,000 records each: small, they may share one invocation.
    expect(d.invocations).toBeGreaterThanOrEqual(1);
    expect(d.plannerTicks).toBeGreaterThanOrEqual(1);
    // Every account is written at least once; each write costs at least one unit.
    expect(d.sinkWrites).toBeGreaterThanOrEqual(150);
    expect(d.sinkWriteUnits).toBeGreaterThanOrEqual(d.sinkWrites);
    expect(d.ledgerWrites).toBeGreaterThan(0);
  });

  it('drains with the no-op handler, writing only to the ledger', async () => {
    const d = await drain('noop');
    expect(d).toMatchObject({ records: 3000, sinkWrites: 0, sinkWriteUnits: 0 });
    expect(d.exact).toBeUndefined();
    expect(d.ledgerWrites).toBeGreaterThan(0);
    expect(d.ledgerWriteUnits).toBeGreaterThanOrEqual(d.ledgerWrites);
  });
});
