/**
 * The local stack's own DynamoDB requests fail through the project's error edge: one line naming
 * DynamoDB, the operation and the endpoint (a request on no table), the SDK's error as cause. A
 * loopback HTTP server plays a failing emulator (nothing leaves the machine).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InternalServerError } from '@aws-sdk/client-dynamodb';
import { StoreError } from '../../../../lib/errors';
import { dynamoReady } from '../../../../infra/local/dynamodb';
import { listTables } from '../../../../infra/local/prune';
import { scriptedDynamo } from '../../../support/scripted-dynamo';

describe("the local stack's DynamoDB requests", () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  it("the emulator's probe: a StoreError naming ListTables and the endpoint", async () => {
    server = createServer((req, res) => {
      req.resume();
      res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': 'InternalServerError' });
      res.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'boom' }));
    });
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const err = await dynamoReady(endpoint).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as Error).message).toBe(
      `probe the DynamoDB emulator: DynamoDB ListTables at ${endpoint} failed: InternalServerError: boom`,
    );
    expect(((err as Error).cause as Error).name).toBe('InternalServerError');
  });

  it("local:prune's listing: every page, or one line naming ListTables and the endpoint", async () => {
    const pages = scriptedDynamo(({ input }) =>
      input.ExclusiveStartTableName ? { TableNames: ['c'] } : { TableNames: ['a', 'b'], LastEvaluatedTableName: 'b' },
    );
    await expect(listTables(pages, 'http://127.0.0.1:9')).resolves.toEqual(['a', 'b', 'c']);
    const failing = scriptedDynamo(() => new InternalServerError({ message: 'boom', $metadata: { attempts: 3 } }));
    const err = await listTables(failing, 'http://127.0.0.1:9').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect((err as Error).message).toBe(
      "list the local stack's tables: DynamoDB ListTables at http://127.0.0.1:9 failed (3 attempts): InternalServerError: boom",
    );
  });
});
