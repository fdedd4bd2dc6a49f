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
  ListTablesCommand,
  ProvisionedThroughputExceededException,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { AppError, MissingResourceError, StoreError, ThrottledError } from '../../../lib/errors';
import { createDynamoStoreClock } from '../../../lib/ledger/clock.dynamodb';
import { isConditionOutcome, translatingClient, translatingSend } from '../../../lib/ledger/errors.dynamodb';
import { createDynamoLedger } from '../../../lib/ledger/ledger.dynamodb';
import { createDynamoLedgerMigration } from '../../../lib/ledger/migrate.dynamodb';
import { isTransient } from '../../../lib/ledger/retry.dynamodb';
import { ensureLedgerTable } from '../../../lib/ledger/table';
import { ensureSinkTable } from '../../../lib/sink/table.dynamodb';
import { scriptedDynamo } from '../../support/scripted-dynamo';

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

  it("one wrapper: each request, on the SDK's client or the document client, names the caller's what, its operation and the table", async () => {
    client = failing(serverError);
    const send = translatingSend({ client, doc: DynamoDBDocumentClient.from(client) }, 'ledger');
    const viaDoc = await send('read meta of s1', ({ doc }) => doc.send(new GetCommand({ TableName: 'ledger', Key: { pk: 'x' } }))).catch(
      (e: unknown) => e,
    );
    expect(viaDoc).toBeInstanceOf(StoreError);
    expect((viaDoc as Error).message).toBe('read meta of s1: DynamoDB Get on table ledger failed (3 attempts): InternalServerError: boom');
    expect((viaDoc as Error).cause).toBeInstanceOf(InternalServerError);
    const viaClient = await send('read items of s1', ({ client: c }) => c.send(new GetItemCommand({ TableName: 'ledger', Key: {} }))).catch(
      (e: unknown) => e,
    );
    expect((viaClient as Error).message).toBe(
      'read items of s1: DynamoDB GetItem on table ledger failed (3 attempts): InternalServerError: boom',
    );
    // Requests in flight at once keep their own names.
    const both = await Promise.all(
      ['a', 'b'].map((what) =>
        send(what, ({ client: c }) => c.send(new GetItemCommand({ TableName: 'ledger', Key: {} }))).catch((e: Error) => e),
      ),
    );
    expect(both.map((e) => (e as Error).message.split(':')[0])).toEqual(['a', 'b']);
  });

  it('a lost condition reaches the ledger as the SDK error it reads as a value', async () => {
    const lost = new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    client = scriptedDynamo(() => lost);
    const send = translatingSend({ client, doc: DynamoDBDocumentClient.from(client) }, 'ledger');
    await expect(send('x', ({ doc }) => doc.send(new GetCommand({ TableName: 'ledger', Key: { pk: 'x' } })))).rejects.toBe(lost);
    const ledger = createDynamoLedger({ client, tableName: 'ledger' });
    const ref = { topic: 't', partition: 0, offset: 5 };
    await expect(ledger.completeDelivery({ stream: 's1', ref, destination: 'sqs' })).resolves.toBe('condition-failed');
  });

  it('a request on no table names the endpoint it went to', async () => {
    client = failing(serverError);
    const err = await translatingClient(client, { endpoint: 'http://127.0.0.1:9' }, 'list tables')
      .send(new ListTablesCommand({}))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as Error).message).toBe(
      'list tables: DynamoDB ListTables at http://127.0.0.1:9 failed (3 attempts): InternalServerError: boom',
    );
    client.destroy();
    client = failing(() => new ResourceNotFoundException({ message: 'Requested resource not found', $metadata: {} }));
    const missing = await translatingClient(client, 'totals', 'read totals')
      .send(new GetItemCommand({ TableName: 'totals', Key: {} }))
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(MissingResourceError);
    expect((missing as Error).message).toBe('read totals: DynamoDB table totals does not exist');
  });
});
