/**
 * DynamoDB never reached: the SDK's own errors (no region, a refused endpoint) become one line
 * naming the setting to fix. The region case uses the real SDK client (it fails before any I/O).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfigurationError, StoreError } from '../../../lib/errors';
import { createDynamoLedger } from '../../../lib/ledger/ledger.dynamodb';
import { translateDynamoError } from '../../../lib/ledger/errors.dynamodb';

describe('DynamoDB set-up errors', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('names AWS_REGION (and DYNAMODB_ENDPOINT) when the SDK has no region', async () => {
    delete process.env.AWS_REGION;
    delete process.env.AWS_DEFAULT_REGION;
    delete process.env.AWS_PROFILE;
    process.env.AWS_CONFIG_FILE = '/nonexistent/aws-config';
    process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/aws-credentials';
    const client = new DynamoDBClient({ credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
    try {
      const ledger = createDynamoLedger({ client, tableName: 'ledger' });
      const err = await ledger.readMeta('payments').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigurationError);
      expect((err as Error).message).toBe(
        'read meta of payments: DynamoDB has no AWS region: set AWS_REGION (or DYNAMODB_ENDPOINT for the local stack)',
      );
    } finally {
      client.destroy();
    }
  });

  it('names the address, the socket error and DYNAMODB_ENDPOINT when nothing answers', () => {
    const sdk = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
      address: '127.0.0.1',
      port: 1,
      $metadata: { attempts: 4 },
    });
    const e = translateDynamoError(sdk, 'read meta of payments', 'ledger');
    expect(e).toBeInstanceOf(StoreError);
    expect(e.message).toBe(
      'read meta of payments: cannot reach DynamoDB at 127.0.0.1:1 (ECONNREFUSED) [DYNAMODB_ENDPOINT, else the AWS_REGION endpoint]',
    );
    const dns = Object.assign(new Error('getaddrinfo ENOTFOUND dynamodb.nowhere'), { code: 'ENOTFOUND', hostname: 'dynamodb.nowhere' });
    // The SDK's retry layer wraps a socket error from another realm into a message-only Error.
    const wrapped = new Error('AWS SDK error wrapper for Error: connect ECONNREFUSED 127.0.0.1:1');
    expect(translateDynamoError(wrapped, 'x', 'ledger').message).toBe(
      'x: cannot reach DynamoDB at 127.0.0.1:1 (ECONNREFUSED) [DYNAMODB_ENDPOINT, else the AWS_REGION endpoint]',
    );
    expect(translateDynamoError(dns, 'x', 'ledger').message).toBe(
      'x: cannot reach DynamoDB at dynamodb.nowhere (ENOTFOUND) [DYNAMODB_ENDPOINT, else the AWS_REGION endpoint]',
    );
  });
});
