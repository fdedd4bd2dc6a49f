/** The handler test kit over a real topic: the processor's range reader on the broker, the in-memory ledger and sink. */
import { runningTotals } from '../../lib/handlers/running-totals';
import { runHandlerOnTopic } from '../../lib/testing';
import { createTopicsReady, testKafka, uniqueName } from '../support/env';

const kafka = testKafka('testing-kit');

describe('runHandlerOnTopic', () => {
  it('runs a handler over every record the topic holds, key by key, committing each partition to its end', async () => {
    const topic = uniqueName('kit-topic');
    const admin = kafka.admin();
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await Promise.all([admin.connect(), producer.connect()]);
    try {
      await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
      const messages = Array.from({ length: 30 }, (_, i) => ({ key: `acct-${i % 3}`, value: JSON.stringify({ amount: i }) }));
      await producer.send({ topic, messages });
      const res = await runHandlerOnTopic(runningTotals, topic, { maxChunkRecords: 4 });
      const expected: Record<string, { total: number; count: number }> = {};
      messages.forEach((m, i) => {
        const e = (expected[m.key] ??= { total: 0, count: 0 });
        e.total += i;
        e.count += 1;
      });
      expect(Object.fromEntries(res.sinkItems.map((i) => [i.pk, { total: i.total, count: i.count }]))).toEqual(expected);
      expect(res.progress.reduce((n, p) => n + p.committed, 0)).toBe(30);
      expect(res.progress.every((p) => p.committed === p.latest)).toBe(true);
      expect(res.deadLetters).toEqual([]);
    } finally {
      await Promise.all([admin.disconnect(), producer.disconnect()]);
    }
  });
});
