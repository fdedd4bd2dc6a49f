/** The built-in no-op handler: registered as `noop`, at-least-once, and it writes nothing. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { parseDeploymentConfig, type StreamConfig } from '../../../lib/config/schema';
import { resolveHandler } from '../../../lib/handlers';

const streamWith = (handler: Record<string, unknown>): StreamConfig =>
  parseDeploymentConfig(
    { ledgerTable: 'ledger', streams: [{ id: 's', kafka: { brokers: ['127.0.0.1:1'] }, topics: ['t'], handler }] },
    'test',
  ).streams[0] as StreamConfig;

describe('the noop handler', () => {
  const dynamo = new DynamoDBClient({ region: 'us-east-1' });
  afterAll(() => dynamo.destroy());

  it('resolves as an at-least-once handler that returns nothing', async () => {
    const h = resolveHandler(streamWith({ module: 'noop', mode: 'at-least-once' }), { dynamo, env: {} });
    expect(h.mode).toBe('at-least-once');
    const record = {
      topic: 't',
      partition: 0,
      offset: 0,
      timestampMs: 0,
      timestampType: 'CreateTime' as const,
      key: null,
      value: null,
      headers: [],
      idempotencyKey: 't/0/0',
    };
    await expect(
      Promise.resolve(h.handle([record as never], { stream: 's', signal: new AbortController().signal, secrets: {} })),
    ).resolves.toBeUndefined();
  });

  it('is refused for an exactly-once stream, naming both modes', () => {
    expect(() =>
      resolveHandler(streamWith({ module: 'noop', mode: 'dynamodb-exactly-once', sinkTable: 'sink' }), { dynamo, env: {} }),
    ).toThrow('stream s: handler "noop" is at-least-once, but handler.mode says dynamodb-exactly-once');
  });
});
