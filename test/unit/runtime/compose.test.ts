/**
 * The composition root's caches, without a broker: nothing connects until a read, so these only
 * check what is shared and what is not (one reader per cluster connection, one handler per stream
 * id, a fresh reader on `createReader`) and that `close` releases the DynamoDB client.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { parseDeploymentConfig } from '../../../lib/config/schema';
import { HANDLERS } from '../../../lib/handlers';
import { composeAdapters } from '../../../lib/runtime/compose';

const config = parseDeploymentConfig(
  {
    ledgerTable: 'ledger',
    streams: ['a', 'b', 'c'].map((id) => ({
      id,
      kafka: { brokers: [id === 'c' ? '127.0.0.1:1' : '127.0.0.1:2'] },
      topics: ['orders'],
      handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: `totals-${id}` },
    })),
  },
  'test',
);
const [a, b, c] = config.streams as [(typeof config.streams)[0], (typeof config.streams)[0], (typeof config.streams)[0]];

describe('composeAdapters', () => {
  it('shares one range reader per cluster connection and makes a new one on createReader', async () => {
    const adapters = composeAdapters({ config, env: {}, dynamo: new DynamoDBClient({ region: 'us-east-1' }) });
    try {
      const ra = await adapters.readerFor(a);
      expect(await adapters.readerFor(b)).toBe(ra);
      expect(await adapters.readerFor(c)).not.toBe(ra);
      const own = await adapters.createReader(a);
      expect(own).not.toBe(ra);
      await own.close();
    } finally {
      await adapters.close();
    }
  });

  it('keeps one handler per stream id, even for a copy of the stream with another sink', async () => {
    const adapters = composeAdapters({ config, env: {}, dynamo: new DynamoDBClient({ region: 'us-east-1' }) });
    try {
      const factory = jest.spyOn(HANDLERS, 'running-totals');
      const h = adapters.handlerFor(a);
      expect(adapters.handlerFor({ ...a, handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'other' } })).toBe(
        h,
      );
      expect(factory).toHaveBeenCalledTimes(1);
      adapters.handlerFor(b);
      expect(factory).toHaveBeenCalledTimes(2);
      factory.mockRestore();
    } finally {
      await adapters.close();
    }
  });

  it('destroys the DynamoDB client on close, and only on close (closeConnections keeps it)', async () => {
    const dynamo = new DynamoDBClient({ region: 'us-east-1' });
    const destroy = jest.spyOn(dynamo, 'destroy');
    const adapters = composeAdapters({ config, env: {}, dynamo });
    await adapters.readerFor(a);
    await adapters.closeConnections();
    expect(destroy).not.toHaveBeenCalled();
    await adapters.close();
    expect(destroy).toHaveBeenCalledTimes(1);
  });
});
