/**
 * The fault proxy (Toxiproxy, infra/local/toxiproxy.ts) between the DynamoDB ledger and the emulator:
 * latency with jitter reaches the ledger's requests; a reset fails a request in one line, without
 * waiting out a timeout, and the next request after the fault is gone succeeds; an answer that
 * outlives the client's timeout after the write landed is resent by the SDK, and the ledger counts
 * the resend as the same claim (a tick of the tick chain), not as a duplicate. A proxy made before
 * its service forwards to it, on the same address, once retargeted. Each test asserts
 * that its fault fired (the delay measured, the error seen, the SDK's attempts counted).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient, CreateQueueCommand } from '@aws-sdk/client-sqs';
import { SILENT_CONNECTION_MS } from '../../lib/connection-limits';
import { createSqsDestination } from '../../lib/destinations/destination.sqs';
import type { FailureDelivery } from '../../lib/ports/failure-destination';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { destinationClientConfig } from '../../lib/runtime/destinations';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { freePort } from '../../infra/local/process';
import { startFaultProxies, type FaultProxies, type FaultProxy } from '../support/fault-proxy';
import { testDynamo, uniqueName } from '../support/env';

jest.setTimeout(120_000);

const ddb = testDynamo();
const tableName = uniqueName('fault-proxy-ledger');
let proxies: FaultProxies;
let proxy: FaultProxy;
let client: DynamoDBClient;
/** Requests the proxied client sent, each attempt counted (the SDK's resends included). */
let attempts = 0;

beforeAll(async () => {
  await ensureLedgerTable(ddb, tableName);
  proxies = await startFaultProxies();
  proxy = await proxies.proxy(new URL(process.env.DYNAMODB_ENDPOINT!).host);
  // A short request timeout, so a delayed answer times out and the SDK resends (its standard retries).
  // This SDK's handler only warns when `requestTimeout` passes unless `throwOnRequestTimeout` is set.
  client = new DynamoDBClient({
    endpoint: proxy.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 3,
    requestHandler: { requestTimeout: 1000, throwOnRequestTimeout: true, connectionTimeout: 1000 },
  });
  client.middlewareStack.add(
    (next) => async (args) => {
      attempts++;
      return next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'countAttempts' },
  );
}, 120_000);
afterEach(async () => {
  await proxy?.clear();
});
afterAll(async () => {
  client?.destroy();
  await proxies?.stop();
  ddb.destroy();
});

const ledger = () => createDynamoLedger({ client, tableName });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function readMs(stream: string): Promise<number> {
  const t0 = Date.now();
  await ledger().readMeta(stream);
  return Date.now() - t0;
}

describe('the fault proxy between the ledger and DynamoDB', () => {
  it('delays every answer by the latency and jitter it is given', async () => {
    const stream = uniqueName('s');
    const before = median(await Promise.all([1, 2, 3].map(() => readMs(stream))));
    await proxy.latency(400, 100);
    const during = median([await readMs(stream), await readMs(stream), await readMs(stream)]);
    await proxy.clear();
    const after = await readMs(stream);
    expect(during - before).toBeGreaterThanOrEqual(250);
    expect(after).toBeLessThan(during);
  });

  it('fails a request whose connection is reset in one line naming DynamoDB, soon, and the next one after the fault succeeds', async () => {
    const stream = uniqueName('s');
    await proxy.reset();
    const t0 = Date.now();
    const failed = await ledger()
      .readMeta(stream)
      .then(
        () => undefined,
        (err: unknown) => err as Error,
      );
    const failedAfterMs = Date.now() - t0;
    expect(failed?.name).toBe('StoreError');
    expect(failed?.message).toMatch(/DynamoDB/);
    expect(failed?.message.split('\n')).toHaveLength(1);
    // The SDK's attempts end on the resets, not on a timeout.
    expect(failedAfterMs).toBeLessThan(5000);
    await proxy.clear();
    const t1 = Date.now();
    await expect(ledger().readMeta(stream)).resolves.toBeUndefined();
    expect(Date.now() - t1).toBeLessThan(2000);
  });

  it('counts a claim whose answer outlived the timeout after it landed as that claim when the SDK resends it', async () => {
    const stream = uniqueName('s');
    const l = ledger();
    await proxy.latency(1500);
    const sentBefore = attempts;
    // The first attempt's answer comes after the client's 1 s timeout; the fault ends before the SDK's resend.
    const clearing = new Promise<void>((r) => setTimeout(() => void proxy.clear().then(r), 1200));
    const outcome = await l.claimChainTick({ stream, seq: 1, nowMs: 1000, claimedBy: 'inv-a' });
    await clearing;
    expect(attempts - sentBefore).toBeGreaterThanOrEqual(2);
    expect(outcome).toBe('applied');
    expect((await l.readMeta(stream))?.tickChain).toEqual({ seq: 1, lastTickAtMs: 1000, claimedBy: 'inv-a' });
    // Another claimant of the same tick still claims nothing.
    expect(await l.claimChainTick({ stream, seq: 1, nowMs: 1100, claimedBy: 'inv-b' })).toBe('condition-failed');
  });

  it('forwards to a new upstream on the same address once retargeted, its earlier requests refused', async () => {
    // A proxy made before its service exists (the network chaos's broker advertises the proxy's address).
    const early = await proxies.proxy(`127.0.0.1:${await freePort()}`);
    const earlyClient = new DynamoDBClient({
      endpoint: early.url,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const stream = uniqueName('s');
    const before = await createDynamoLedger({ client: earlyClient, tableName })
      .readMeta(stream)
      .then(
        () => undefined,
        (err: unknown) => err as Error,
      );
    expect(before?.name).toBe('StoreError');
    await early.retarget(new URL(process.env.DYNAMODB_ENDPOINT!).host);
    await expect(createDynamoLedger({ client: earlyClient, tableName }).readMeta(stream)).resolves.toBeUndefined();
    expect(early.url).toBe(`http://${early.address}`);
    earlyClient.destroy();
  });

  it("gives up on a failure destination whose answers stopped (a black hole) after the client's silence limit, not never", async () => {
    // The emulator serves SQS too: the destination's client goes through the proxy, the queue is made directly.
    const direct = new SQSClient({
      endpoint: process.env.DYNAMODB_ENDPOINT!,
      region: 'us-east-1',
      credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
    });
    const queueUrl = (await direct.send(new CreateQueueCommand({ QueueName: uniqueName('fp-dlq') }))).QueueUrl!;
    direct.destroy();
    const queueArn = `arn:aws:sqs:us-east-1:123456789012:${queueUrl.split('/').pop()}`;
    const sqs = new SQSClient(destinationClientConfig({ AWS_ENDPOINT_URL_SQS: proxy.url, AWS_REGION: 'us-east-1' }, 'SQS'));
    const destination = createSqsDestination(sqs, queueArn);
    await proxy.blackHole();
    const t0 = Date.now();
    const failed = await destination.deliver(FAILURE).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    const ms = Date.now() - t0;
    sqs.destroy();
    // Two attempts, each ended by 3 s of silence (SILENT_CONNECTION_MS): the limit fired, and the delivery did not wait forever.
    expect(failed?.name).toBe('DeliveryError');
    expect(ms).toBeGreaterThanOrEqual(2 * SILENT_CONNECTION_MS - 100);
    expect(ms).toBeLessThan(10_000);
  }, 60_000);
});

/** One dead letter as a destination receives it (its body need not be a real failure record here). */
const FAILURE: FailureDelivery = {
  idempotencyKey: 't/0/1',
  stream: 's',
  body: '{}',
  key: null,
  objectKey: 's/t/000000/00000000000000000001.json',
  groupId: 's/t/0',
  deduplicationId: 'd',
};
