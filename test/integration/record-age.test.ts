/**
 * maxRecordAgeMs on the real broker and emulator: records whose Kafka timestamps are older than the
 * limit when their range is first leased become dead letters with cause `expired` (or are skipped),
 * the rest reach the handler, and the range completes with its offsets committed.
 */
import { parseStreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { planStream } from '../../lib/planner/run';
import type { HandlerRecord } from '../../lib/processor/handler-api';
import { processRange } from '../../lib/processor/process-range';
import { createTopicsReady, uniqueName } from '../support/env';
import { processorTestBed } from '../support/processor-bed';

const { admin, producer, metadata, reader, ledger } = processorTestBed('age');

/** Produces 30 records to one partition: offsets 0-9 stamped an hour ago, 10-19 now, 20-29 two hours ago. */
async function produceAged(topic: string): Promise<void> {
  const now = Date.now();
  const stampOf = (i: number) => (i < 10 ? now - 3_600_000 : i < 20 ? now : now - 7_200_000);
  await producer.send({
    topic,
    messages: Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ i }), timestamp: String(stampOf(i)) })),
  });
}

async function runStream(over: Partial<StreamConfigInput>) {
  const id = uniqueName('age');
  const topic = `${id}-events`;
  await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
  await produceAged(topic);
  const stream = parseStreamConfig(
    {
      id,
      kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
      topics: [topic],
      handler: { module: 'noop', mode: 'at-least-once' },
      ...over,
    },
    'test',
  );
  const dispatcher = createRecordingDispatcher();
  await planStream({ ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 60_000 }, stream, {
    dryRun: false,
    nowMs: Date.now(),
  });
  const seen: HandlerRecord[] = [];
  const [range] = dispatcher.dispatched;
  const res = await processRange(
    { ledger, readerFor: async () => reader, handlerFor: () => ({ mode: 'at-least-once', handle: (rs) => void seen.push(...rs) }) },
    { stream, range: range!, deadlineAtMs: Date.now() + 60_000 },
  );
  return { id, res, seen, letters: await ledger.listDeadLetters(id), partitions: await ledger.readPartitions(id) };
}

describe('maxRecordAgeMs on the real broker', () => {
  it('dead-letters records older than the limit with cause expired and hands the handler the rest', async () => {
    const t = await runStream({ maxRecordAgeMs: 600_000 });
    expect(t.res).toMatchObject({ status: 'done', records: 10, deadLetters: 20, expired: 0 });
    expect(t.seen.map((r) => r.offset)).toEqual(Array.from({ length: 10 }, (_, i) => 10 + i));
    expect(t.letters.map((d) => d.offset).sort((a, b) => a - b)).toEqual([
      ...Array(10).keys(),
      ...Array.from({ length: 10 }, (_, i) => 20 + i),
    ]);
    expect(t.letters.every((d) => d.cause === 'expired' && d.error.startsWith('EXPIRED:') && d.valueBase64 !== null)).toBe(true);
    expect(t.partitions[0]).toMatchObject({ committed: 30 });
  });

  it('skips them when expiredRecords is skip, counting them', async () => {
    const t = await runStream({ maxRecordAgeMs: 600_000, expiredRecords: 'skip' });
    expect(t.res).toMatchObject({ status: 'done', records: 10, deadLetters: 0, expired: 20 });
    expect(t.letters).toEqual([]);
    expect(t.partitions[0]).toMatchObject({ committed: 30 });
  });
});
