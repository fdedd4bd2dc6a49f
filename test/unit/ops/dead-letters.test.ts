/** Re-driving dead letters that keep only coordinates: from Kafka while it has the record, else a clear refusal. */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { parseDeploymentConfig } from '../../../lib/config/schema';
import { runningTotals } from '../../../lib/handlers/running-totals';
import { createMemoryRangeReader } from '../../../lib/kafka/range-reader.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import type { OpsContext } from '../../../lib/ops/context';
import { redriveDeadLetters, renderDeadLetters } from '../../../lib/ops/dead-letters';
import type { DeadLetter } from '../../../lib/ports/ledger-state';

const NOW = Date.parse('2026-05-01T12:00:00Z');

function fakes() {
  const config = parseDeploymentConfig(
    {
      ledgerTable: 'ledger',
      streams: [
        {
          id: 's1',
          kafka: { brokers: ['localhost:9092'] },
          topics: ['orders'],
          handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'totals' },
          deadLetters: { keep: 'coordinates' },
        },
      ],
    },
    'test',
  );
  const ledger = createMemoryLedger();
  const reader = createMemoryRangeReader();
  reader.append(
    'orders',
    0,
    Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: JSON.stringify({ amount: i }) })),
  );
  const ctx = {
    config,
    env: {},
    dynamo: {} as DynamoDBClient,
    ledger,
    storeClock: async () => NOW,
    metadata: {
      forStream: async () => {
        throw new Error('unused');
      },
      requestCount: () => 0,
      closeAll: async () => undefined,
    },
    readerFor: async () => reader,
    createReader: async () => reader,
    handlerFor: () => runningTotals,
    close: async () => undefined,
  } as unknown as OpsContext;
  const coordinates = (offset: number): DeadLetter => ({
    stream: 's1',
    topic: 'orders',
    partition: 0,
    offset,
    timestampMs: 0,
    keyBase64: null,
    valueBase64: null,
    valueBytes: 12,
    truncated: false,
    headers: [],
    error: 'boom',
    attempts: 3,
    rangeFrom: 0,
    createdAtMs: NOW,
    kept: 'coordinates',
    expiresAtMs: NOW + 14 * 86_400_000,
  });
  ledger.store('s1').deadLetters.push(coordinates(3), coordinates(7));
  return { ctx, ledger, reader, stream: config.streams[0]! };
}

describe('dead letters that keep only coordinates', () => {
  it('are re-driven from Kafka while it retains the record, and refused clearly once it does not', async () => {
    const t = fakes();
    t.reader.truncate('orders', 0, 5); // retention removed offset 3, offset 7 is still there
    const results = await redriveDeadLetters(t.ctx, t.stream, { all: true, nowMs: () => NOW });
    expect(results).toEqual([
      {
        id: 'orders/0/3',
        outcome: 'failed',
        error: expect.stringContaining(
          'Kafka no longer has orders/0/3 and its dead letter keeps only coordinates (deadLetters.keep = "coordinates"): nothing to re-drive',
        ),
      },
      { id: 'orders/0/7', outcome: 'redriven', source: 'kafka' },
    ]);
    const [three, seven] = t.ledger.store('s1').deadLetters;
    expect(three?.redrivenAtMs).toBeUndefined();
    expect(seven?.redrivenAtMs).toBe(NOW);
    expect(t.ledger.store('s1').sinkWrites).toHaveLength(1);
  });

  it('are listed as coordinates only, with their expiry', async () => {
    const t = fakes();
    const text = renderDeadLetters('s1', t.ledger.store('s1').deadLetters);
    expect(text).toMatch(/orders\/0\/3 +2026-05-01T12:00:00.000Z +2026-05-15T12:00:00.000Z +coordinates only/);
  });

  it('are listed with the failure destinations still owed them and the last delivery error', () => {
    const t = fakes();
    const letters = t.ledger.store('s1').deadLetters;
    const owed = { stream: 's1', topic: 'orders', partition: 0, offset: 3, nextAttemptAtMs: 1, createdAtMs: 0 };
    const text = renderDeadLetters('s1', letters, [
      { ...owed, destination: 's3', attempts: 0 },
      { ...owed, destination: 'sqs', attempts: 2, lastError: 'SQS queue arn:aws:sqs:us-east-1:123456789012:q: cannot reach it' },
    ]);
    expect(text).toContain('2 delivery(ies) to failure destinations pending');
    expect(text).toContain('last delivery error: SQS queue arn:aws:sqs:us-east-1:123456789012:q: cannot reach it');
    expect(text).toMatch(/orders\/0\/3 .* s3\(0\) sqs\(2\) /);
    expect(renderDeadLetters('s1', letters)).not.toContain('delivery');
  });
});
