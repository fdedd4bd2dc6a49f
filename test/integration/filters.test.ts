/**
 * Stream filters on the real broker and emulator: JSON, plain-text, keyed, keyless, header-carrying
 * records and a tombstone are produced to a real topic, planned by the planner and processed by
 * processRange through the real range reader and DynamoDB ledger. Exactly the matching records reach
 * the handler, the rest count in `filtered`, the range completes and the partition's committed
 * offset reaches the end; the folded exactly-once handler sums only the matching records.
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Message } from 'kafkajs';
import { parseStreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { runningTotals } from '../../lib/handlers/running-totals';
import { planStream } from '../../lib/planner/run';
import type { HandlerRecord, RecordsHandler } from '../../lib/processor/handler-api';
import { processRange, type ProcessResult } from '../../lib/processor/process-range';
import { createSinkTable, createTopicsReady, uniqueName } from '../support/env';
import { processorTestBed } from '../support/processor-bed';

const { ddb, admin, producer, metadata, reader, ledger } = processorTestBed('filters');

/** One produced record and what the test expects of it. */
type Sent = { message: Message; order?: { account: string; amount: number }; kept: boolean };

/**
 * 60 records of every kind, each with whether FILTERS keeps it (decided here from what was sent,
 * not by the matcher): orders of 10 or more, anything marked high priority, any record keyed vip-*,
 * and plain-text greetings.
 */
function records(): Sent[] {
  const out: Sent[] = [];
  for (let i = 0; i < 60; i++) {
    const account = `acct-${i % 4}`;
    const headers = i % 9 === 4 ? { priority: 'high' } : i % 9 === 5 ? { priority: 'low' } : undefined;
    const highPriority = headers?.priority === 'high';
    switch (i % 6) {
      case 0:
      case 1: {
        const amount = i;
        out.push({
          message: { key: account, value: JSON.stringify({ type: 'order', amount }), headers },
          order: { account, amount },
          kept: amount >= 10 || highPriority,
        });
        break;
      }
      case 2:
        out.push({ message: { key: account, value: JSON.stringify({ type: 'refund', amount: i }), headers }, kept: highPriority });
        break;
      case 3:
        // A vip key is kept whatever its value; a greeting whatever its key.
        out.push({
          message: i % 12 === 3 ? { key: 'vip-1', value: `note ${i}`, headers } : { key: account, value: `hello ${i}`, headers },
          kept: true,
        });
        break;
      case 4:
        out.push({ message: { key: null, value: `goodbye ${i}`, headers }, kept: highPriority });
        break;
      default:
        out.push({ message: { key: account, value: i === 5 ? null : Buffer.from([0xff, 0xfe, i]), headers }, kept: highPriority });
    }
  }
  return out;
}

const FILTERS: StreamConfigInput['filters'] = [
  { value: { type: ['order'], amount: [{ numeric: ['>=', 10] }] } },
  { headers: { priority: ['high'] } },
  { key: [{ prefix: 'vip-' }] },
  { value: [{ prefix: 'hello' }] },
];

async function setup(filters: StreamConfigInput['filters'], handler: RecordsHandler, sinkTable?: string) {
  const id = uniqueName('f');
  const topic = `${id}-events`;
  await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
  const stream = parseStreamConfig(
    {
      id,
      kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
      topics: [topic],
      handler: sinkTable
        ? { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable }
        : { module: 'noop', mode: 'at-least-once' },
      filters,
    },
    'test',
  );
  const dispatcher = createRecordingDispatcher();
  /** Plans the topic once and processes every dispatched range (chunks of 7 records). */
  const run = async (): Promise<ProcessResult[]> => {
    await planStream({ ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 60_000 }, stream, {
      dryRun: false,
      nowMs: Date.now(),
    });
    const results: ProcessResult[] = [];
    for (const range of dispatcher.dispatched) {
      results.push(
        await processRange(
          { ledger, readerFor: async () => reader, handlerFor: () => handler, maxChunkRecords: 7 },
          { stream, range, deadlineAtMs: Date.now() + 120_000 },
        ),
      );
    }
    return results;
  };
  return { id, topic, run };
}

const sum = (results: ProcessResult[], field: 'records' | 'filtered' | 'deadLetters') => results.reduce((n, r) => n + r[field], 0);

describe('stream filters on the real broker and emulator', () => {
  it('at-least-once: exactly the records matching a pattern reach the handler; the range completes past the others', async () => {
    const seen: HandlerRecord[] = [];
    const t = await setup(FILTERS, { mode: 'at-least-once', handle: (batch) => void seen.push(...batch) });
    const sent = records();
    await producer.send({ topic: t.topic, messages: sent.map((s) => s.message) });
    const results = await t.run();

    const kept = sent.flatMap((s, offset) => (s.kept ? [offset] : []));
    expect(kept.length).toBeGreaterThan(10);
    expect(kept.length).toBeLessThan(sent.length - 10);
    expect(seen.map((r) => r.offset)).toEqual(kept);
    expect(results.map((r) => r.status)).toEqual(['done']);
    expect(sum(results, 'records')).toBe(kept.length);
    expect(sum(results, 'filtered')).toBe(sent.length - kept.length);
    expect(sum(results, 'deadLetters')).toBe(0);
    const [partition] = await ledger.readPartitions(t.id);
    expect(partition?.committed).toBe(sent.length);
    // The handler got the records themselves, raw bytes and headers as written.
    const vip = seen.find((r) => r.key?.toString() === 'vip-1');
    expect(vip?.value?.toString()).toMatch(/^note \d+$/);
    expect(seen.filter((r) => r.headers.some((h) => h.key === 'priority')).every((r) => r.headers[0]?.value?.toString() === 'high')).toBe(
      true,
    );
  });

  it('exactly-once folded: the sink holds the totals of the matching orders only, nothing dead-lettered', async () => {
    const table = await createSinkTable(ddb, 'filters');
    const t = await setup([{ value: { type: ['order'], amount: [{ numeric: ['>=', 10] }] } }], runningTotals, table);
    const sent = records();
    await producer.send({ topic: t.topic, messages: sent.map((s) => s.message) });
    const results = await t.run();

    const expected: Record<string, { total: number; count: number }> = {};
    for (const s of sent) {
      if (!s.order || s.order.amount < 10) continue;
      const e = (expected[s.order.account] ??= { total: 0, count: 0 });
      e.total += s.order.amount;
      e.count += 1;
    }
    const matching = Object.values(expected).reduce((n, e) => n + e.count, 0);
    const items = ((await ddb.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []).map((i) => unmarshall(i));
    expect(Object.fromEntries(items.map((i) => [i.pk as string, { total: i.total as number, count: i.count as number }]))).toEqual(
      expected,
    );
    expect(results.map((r) => r.status)).toEqual(['done']);
    expect(sum(results, 'filtered')).toBe(sent.length - matching);
    expect(sum(results, 'deadLetters')).toBe(0);
    expect((await ledger.readPartitions(t.id))[0]?.committed).toBe(sent.length);
    // Run again: the range is done, nothing is applied twice.
    expect((await t.run()).every((r) => r.status === 'already-done' || r.records === 0)).toBe(true);
  });
});
