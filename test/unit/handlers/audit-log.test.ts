/**
 * The audit-log handler's failed puts: DynamoDB's trouble (throttled, 5xx, unreachable) and a missing
 * table leave as the project's errors, so the committer fails the range for a later retry; an error
 * the record caused leaves as the SDK's own, so the record is retried and then dead-lettered.
 */
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  DynamoDBServiceException,
  InternalServerError,
  ProvisionedThroughputExceededException,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { AppError, ConfigurationError, MissingResourceError, StoreError, ThrottledError } from '../../../lib/errors';
import { createAuditLog } from '../../../lib/handlers/audit-log';
import type { HandlerContext, HandlerRecord } from '../../../lib/processor/handler-api';
import { FIXTURE_TOPIC as T, processorFixture } from '../../support/processor-fixture';
import { scriptedDynamo, type ScriptedRequest } from '../../support/scripted-dynamo';

const throttled = () => new ProvisionedThroughputExceededException({ message: 'slow down', $metadata: { attempts: 10 } });
const serverError = () => new InternalServerError({ message: 'boom', $metadata: { attempts: 3 } });
const missingTable = () => new ResourceNotFoundException({ message: 'Requested resource not found', $metadata: {} });
// Unmodelled, as the SDK builds it from the response: DynamoDB's ValidationException has no class.
const tooLarge = () =>
  new DynamoDBServiceException({
    name: 'ValidationException',
    $fault: 'client',
    message: 'Item size has exceeded the maximum allowed size',
    $metadata: { httpStatusCode: 400 },
  });
const frontEnd503 = () =>
  new DynamoDBServiceException({ name: '503', $fault: 'client', message: 'Service Unavailable', $metadata: { httpStatusCode: 503 } });
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED', address: '127.0.0.1', port: 9 });

const record = (offset: number): HandlerRecord => ({
  topic: T,
  partition: 0,
  offset,
  timestampMs: 1_000,
  timestampType: 'CreateTime',
  key: null,
  value: Buffer.from(`v${offset}`),
  headers: [],
  idempotencyKey: `${T}/0/${offset}`,
});

/** The partition key of a scripted put. */
const pkOf = (req: ScriptedRequest) => (req.input.Item as { pk: { S: string } }).pk.S;

describe('the audit-log handler', () => {
  const clients: DynamoDBClient[] = [];
  afterEach(() => clients.splice(0).forEach((c) => c.destroy()));
  const auditLogAnswering = (answer: (req: ScriptedRequest) => unknown) => {
    const client = scriptedDynamo(answer);
    clients.push(client);
    return createAuditLog({ tableName: 'audit', client });
  };
  /** What handling one record throws (undefined: nothing). */
  const handleOne = async (answer: (req: ScriptedRequest) => unknown): Promise<unknown> => {
    try {
      await auditLogAnswering(answer).handle([record(0)], {} as HandlerContext);
      return undefined;
    } catch (err) {
      return err;
    }
  };

  it('puts each record once under its idempotency key and counts a redelivery it finds there', async () => {
    const puts: ScriptedRequest[] = [];
    const h = auditLogAnswering((req) => {
      puts.push(req);
      return pkOf(req) === `${T}/0/1`
        ? new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} })
        : {};
    });
    await h.handle([record(0), record(1)], {} as HandlerContext);
    expect(h.duplicates()).toBe(1);
    expect(puts.map((p) => p.operation)).toEqual(['PutItem', 'PutItem']);
    expect(puts[0]?.input).toMatchObject({
      TableName: 'audit',
      Item: { pk: { S: `${T}/0/0` } },
      ConditionExpression: 'attribute_not_exists(pk)',
    });
  });

  it("a throttle that outlasted the SDK's retries: ThrottledError (an AppError) naming the operation and the table", async () => {
    const err = await handleOne(throttled);
    expect(err).toBeInstanceOf(ThrottledError);
    expect(err).toBeInstanceOf(AppError);
    expect((err as Error).message).toBe(
      "audit-log handler: DynamoDB PutItem on table audit throttled after the SDK's retries (10 attempts) " +
        '(ProvisionedThroughputExceededException)',
    );
    expect((err as Error).cause).toBeInstanceOf(ProvisionedThroughputExceededException);
  });

  it("DynamoDB's 5xx, modelled or not, and an endpoint never reached: StoreError (no region: ConfigurationError)", async () => {
    const server = await handleOne(serverError);
    expect(server).toBeInstanceOf(StoreError);
    expect((server as Error).message).toBe(
      'audit-log handler: DynamoDB PutItem on table audit failed (3 attempts): InternalServerError: boom',
    );
    const unavailable = await handleOne(frontEnd503);
    expect(unavailable).toBeInstanceOf(StoreError);
    expect((unavailable as Error).message).toBe('audit-log handler: DynamoDB PutItem on table audit failed: 503: Service Unavailable');
    const unreachable = await handleOne(refused);
    expect(unreachable).toBeInstanceOf(StoreError);
    expect((unreachable as Error).message).toMatch(/^audit-log handler: cannot reach DynamoDB at 127\.0\.0\.1:9 \(ECONNREFUSED\)/);
    // No region: never reached either, and the same for every record.
    const noRegion = await handleOne(() => new Error('Region is missing'));
    expect(noRegion).toBeInstanceOf(ConfigurationError);
  });

  it("a missing table is the deployment's fault: MissingResourceError, one line naming the table", async () => {
    const err = await handleOne(missingTable);
    expect(err).toBeInstanceOf(MissingResourceError);
    expect((err as Error).message).toBe('audit-log handler: DynamoDB table audit does not exist');
  });

  it("an error the record caused (ValidationException) is thrown as the SDK's own", async () => {
    const rejected = tooLarge();
    const err = await handleOne(() => rejected);
    expect(err).toBe(rejected);
    expect(err).not.toBeInstanceOf(AppError);
  });
});

describe('the audit-log handler under the committer', () => {
  /** Six records through the real committer (chunks of 4, the memory ledger); the put of offset 2 always fails with `fail()`. */
  async function runFailingAt2(fail: () => Error) {
    const client = scriptedDynamo((req) => (pkOf(req) === `${T}/0/2` ? fail() : {}));
    const t = await processorFixture({
      records: Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })),
      stream: { handler: { module: 'audit-log', mode: 'at-least-once' }, maxAttempts: 3 },
      handler: createAuditLog({ tableName: 'audit', client }),
    });
    const outcome = await t.run().then(
      (res) => ({ res, err: undefined }),
      (err: unknown) => ({ res: undefined, err }),
    );
    client.destroy();
    return { t, ...outcome };
  }

  it('a throttle fails the range, to be retried later: no dead letter', async () => {
    const { t, res, err } = await runFailingAt2(throttled);
    expect(res).toBeUndefined();
    expect(err).toBeInstanceOf(ThrottledError);
    expect(t.ledger.store('s').deadLetters).toEqual([]);
    expect(t.rangeItem()).toMatchObject({
      status: 'failed',
      progress: 2,
      lastError: expect.stringMatching(/^ThrottledError: audit-log handler/),
    });
  });

  it('a missing table fails the range too, with its one line', async () => {
    const { t, err } = await runFailingAt2(missingTable);
    expect(err).toBeInstanceOf(MissingResourceError);
    expect(t.ledger.store('s').deadLetters).toEqual([]);
    expect(t.rangeItem()).toMatchObject({
      status: 'failed',
      lastError: 'MissingResourceError: audit-log handler: DynamoDB table audit does not exist',
    });
  });

  it('a ValidationException dead-letters the record after its attempts, and the range goes on', async () => {
    const { t, res } = await runFailingAt2(tooLarge);
    expect(res).toMatchObject({ status: 'done', records: 5, deadLetters: 1 });
    const [dl] = t.ledger.store('s').deadLetters;
    expect(dl).toMatchObject({ offset: 2, attempts: 3 });
    expect(dl?.error).toBe(`handler rejected ${T}/0/2 3 times: ValidationException: Item size has exceeded the maximum allowed size`);
  });
});
