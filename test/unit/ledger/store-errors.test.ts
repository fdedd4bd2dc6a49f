/**
 * DynamoDB failures leave the adapters as the project's errors, as Kafka's leave as `KafkaError`s:
 * one line naming the service, the operation and the table, the SDK's error as `cause` (its `name`
 * and `$fault` still there for whoever inspects them). A lost condition is not translated: it is the
 * caller's value. The SDK's own retries run before (a middleware here fails before them).
 */
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  InternalServerError,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-dynamodb';
import { AppError, StoreError, ThrottledError } from '../../../lib/errors';
import { createDynamoStoreClock } from '../../../lib/ledger/clock.dynamodb';
import { isConditionOutcome, translatingClient } from '../../../lib/ledger/errors.dynamodb';
import { createDynamoLedger } from '../../../lib/ledger/ledger.dynamodb';
import { createDynamoLedgerMigration } from '../../../lib/ledger/migrate.dynamodb';
import { isTransient } from '../../../lib/ledger/retry.dynamodb';
import { ensureLedgerTable } from '../../../lib/ledger/table';
import { ensureSinkTable } from '../../../lib/sink/table.dynamodb';

/** A client (nothing leaves the process) whose every request fails with `fail()`. */
function failing(fail: () => Error) {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
  });
  client.middlewareStack.add(
    () => async () => {
      throw fail();
    },
    { step: 'initialize', name: 'fail' },
  );
  return client;
}

const serverError = () => new InternalServerError({ message: 'boom', $metadata: { attempts: 3 } });
const throttled = () => new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: { attempts: 10 } });
const denied = () => Object.assign(new Error('User is not authorized\nsecond line'), { name: 'AccessDeniedException', $fault: 'client' });

describe('DynamoDB errors at the adapter edge', () => {
  let client: DynamoDBClient | undefined;
  afterEach(() => client?.destroy());

  it('a ledger read: StoreError naming the ledger operation, DynamoDB, the request and the table; the SDK error as cause', async () => {
    client = failing(serverError);
    const err = await createDynamoLedger({ client, tableName: 'ledger' })
      .readMeta('s1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect(err).toBeInstanceOf(AppError);
    expect((err as StoreError).code).toBe('STORE');
    expect((err as Error).message).toBe('read meta of s1: DynamoDB Get on table ledger failed (3 attempts): InternalServerError: boom');
    expect((err as Error).cause).toBeInstanceOf(InternalServerError);
    // The ledger's own write retries still tell DynamoDB's 5xx by the cause.
    expect(isTransient(err)).toBe(true);
  });

  it("throttling that outlasted the SDK's retries: ThrottledError naming the table", async () => {
    client = failing(throttled);
    const err = await createDynamoLedger({ client, tableName: 'ledger' })
      .readPartitions('s1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err as Error).message).toMatch(
      /^read partitions of s1: DynamoDB Query on table ledger throttled after the SDK's retries \(10 attempts\) \(ProvisionedThroughputExceededException\)$/,
    );
    expect(((err as Error).cause as Error).name).toBe('ProvisionedThroughputExceededException');
  });

  it('a lost condition passes unchanged (the caller reads it as a value); anything else is translated, in one line', async () => {
    client = failing(() => new ConditionalCheckFailedException({ message: 'failed', $metadata: {} }));
    const sender = translatingClient(client, 'ledger', 'probe');
    const lost = await sender.send(new GetItemCommand({ TableName: 'ledger', Key: {} })).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(ConditionalCheckFailedException);
    expect(isConditionOutcome(lost)).toBe(true);
    client.destroy();
    client = failing(denied);
    const other = await translatingClient(client, 'ledger', 'probe')
      .send(new GetItemCommand({ TableName: 'ledger', Key: {} }))
      .catch((e: unknown) => e);
    expect((other as Error).message).toBe('probe: DynamoDB GetItem on table ledger failed: AccessDeniedException: User is not authorized');
    // The caller's client is not changed: it still throws the SDK's own error.
    await expect(client.send(new GetItemCommand({ TableName: 'ledger', Key: {} }))).rejects.toMatchObject({
      name: 'AccessDeniedException',
    });
  });

  it("the store clock's probe, the sink and ledger table checks and a layout migration fail the same way", async () => {
    client = failing(serverError);
    const clock = createDynamoStoreClock({ client, tableName: 'ledger' });
    await expect(clock()).rejects.toThrow(
      "read the store's clock: DynamoDB GetItem on table ledger failed (3 attempts): InternalServerError: boom",
    );
    await expect(clock()).rejects.toBeInstanceOf(StoreError);
    await expect(ensureSinkTable(client, 'totals', { partitionKey: { name: 'pk', type: 'S' } })).rejects.toThrow(
      'sink table totals: DynamoDB DescribeTable on table totals failed (3 attempts): InternalServerError: boom',
    );
    await expect(ensureLedgerTable(client, 'ledger')).rejects.toThrow(
      'ledger table ledger: DynamoDB DescribeTable on table ledger failed (3 attempts): InternalServerError: boom',
    );
    const migration = createDynamoLedgerMigration({ client, tableName: 'ledger' }).migrate('s1', Date.now());
    await expect(migration).rejects.toBeInstanceOf(StoreError);
    await expect(createDynamoLedgerMigration({ client, tableName: 'ledger' }).migrate('s1', Date.now())).rejects.toThrow(
      /^migrate the ledger layout: DynamoDB Query on table ledger failed \(3 attempts\): InternalServerError: boom$/,
    );
  });
});
