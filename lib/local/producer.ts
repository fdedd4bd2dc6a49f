/**
 * The demo's event source: card payments keyed by account, at a steady rate, with what was
 * acknowledged tallied per key so the run can check the sink exactly. Amounts are whole cents, so
 * totals are exact integers in JavaScript and in DynamoDB alike.
 */
import { randomUUID } from 'node:crypto';
import { Partitioners, type Admin, type Kafka, type Producer } from 'kafkajs';
import { TimeoutError } from '../errors';
import type { KeyTotals } from '../sink/totals.dynamodb';

export type DemoProducer = {
  /** Produces `ratePerSec` events per second until `stop` (sent in batches every 100 ms). */
  start(): void;
  /** Stops producing; resolves once the last batch was acknowledged (or failed). */
  stop(): Promise<void>;
  /**
   * Grows the topic to `total` partitions and switches to a fresh producer: kafkajs 2.2.4's producer
   * silently drops messages for partitions missing from its cached metadata.
   */
  addPartitions(total: number): Promise<void>;
  /** Events acknowledged by the broker. */
  produced(): number;
  /** Acknowledged amounts and counts per account. */
  expected(): KeyTotals;
  /** The last send error, if any (the run reports it; nothing is silently lost). */
  lastError(): string | undefined;
  close(): Promise<void>;
};

const MERCHANTS = ['grocer', 'fuel', 'pharmacy', 'bookshop', 'cafe', 'rail', 'cinema', 'hardware', 'bakery', 'airline'];

/** Creates the producer for `topic`; `accounts` keys with a skewed (Zipf-like) popularity. */
export function createDemoProducer(
  kafka: Kafka,
  admin: Admin,
  opts: { topic: string; ratePerSec: number; accounts: number; random?: () => number },
): DemoProducer {
  const random = opts.random ?? Math.random;
  const keys = Array.from({ length: opts.accounts }, (_, i) => `acct-${String(i + 1).padStart(4, '0')}`);
  // A few accounts are busy, most are quiet: weight 1 / rank^0.8.
  const weights = keys.map((_, i) => 1 / (i + 1) ** 0.8);
  const totalWeight = weights.reduce((a, b) => a + b, 0);
  const pickKey = (): string => {
    let x = random() * totalWeight;
    for (let i = 0; i < keys.length; i++) {
      x -= weights[i] as number;
      if (x <= 0) return keys[i] as string;
    }
    return keys[keys.length - 1] as string;
  };
  const expected: KeyTotals = {};
  let produced = 0;
  let error: string | undefined;
  let producer: Producer | undefined;
  let loop: Promise<void> | undefined;
  let stopping = false;
  let pausing: Promise<void> | undefined;
  /** The batch being sent now (a partition change waits for it before replacing the producer). */
  let inSend: Promise<void> = Promise.resolve();

  const newProducer = async (): Promise<Producer> => {
    // Idempotent: a retried batch is written once, so "acknowledged" means "in the log exactly once".
    const p = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await p.connect();
    return p;
  };

  const send = async (n: number): Promise<void> => {
    const events = Array.from({ length: n }, () => {
      const key = pickKey();
      const amount = 100 + Math.floor(random() * 49_900);
      return {
        key,
        amount,
        value: JSON.stringify({
          eventId: randomUUID(),
          type: 'card-payment',
          account: key,
          amount,
          currency: 'EUR',
          merchant: MERCHANTS[Math.floor(random() * MERCHANTS.length)],
          at: new Date().toISOString(),
        }),
      };
    });
    producer ??= await newProducer();
    await producer.send({
      topic: opts.topic,
      acks: -1,
      messages: events.map((e) => ({ key: e.key, value: e.value, headers: { source: 'demo', schema: 'card-payment.v1' } })),
    });
    // Tallied only once acknowledged: these are the events the sink must end up with.
    for (const e of events) {
      const t = (expected[e.key] ??= { total: 0, count: 0 });
      t.total += e.amount;
      t.count += 1;
    }
    produced += events.length;
  };

  return {
    start() {
      if (loop) return;
      const t0 = Date.now();
      loop = (async () => {
        while (!stopping) {
          if (pausing) await pausing;
          const due = Math.floor(((Date.now() - t0) / 1000) * opts.ratePerSec) - produced;
          if (due > 0) {
            try {
              inSend = send(Math.min(due, 5000));
              await inSend;
            } catch (err) {
              // Not tallied: the batch may or may not be in the log, which the final count check shows.
              error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
              await new Promise((r) => setTimeout(r, 500));
            }
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
    },
    async stop() {
      stopping = true;
      await loop;
    },
    async addPartitions(total) {
      let resume!: () => void;
      pausing = new Promise<void>((r) => (resume = r));
      try {
        await inSend.catch(() => undefined);
        await admin.createPartitions({ topicPartitions: [{ topic: opts.topic, count: total }] });
        const deadline = Date.now() + 30_000;
        for (;;) {
          const md = await admin.fetchTopicMetadata({ topics: [opts.topic] }).catch(() => undefined);
          const parts = md?.topics[0]?.partitions ?? [];
          if (parts.length === total && parts.every((p) => p.leader >= 0)) break;
          if (Date.now() > deadline)
            throw new TimeoutError(`topic ${opts.topic} did not show ${total} partitions with leaders within 30 s`);
          await new Promise((r) => setTimeout(r, 100));
        }
        const old = producer;
        producer = await newProducer();
        await old?.disconnect();
      } finally {
        pausing = undefined;
        resume();
      }
    },
    produced: () => produced,
    expected: () => structuredClone(expected),
    lastError: () => error,
    async close() {
      stopping = true;
      await loop;
      await producer?.disconnect();
      producer = undefined;
    },
  };
}
