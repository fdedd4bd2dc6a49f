/**
 * Handler secrets at run time: the stream's `handler.secrets` resolved through the caching resolver
 * (in-memory secret stores here) into `ctx.secrets`, and a secret that cannot be read failing the
 * range attempt with one line, before the handler sees a record.
 */
import type { StreamConfigInput } from '../../../lib/config/schema';
import { SecretUnavailableError } from '../../../lib/errors';
import { createSecretResolver, type SecretResolver } from '../../../lib/kafka/secrets';
import type { AtLeastOnceHandler, HandlerContext } from '../../../lib/processor/handler-api';
import { resolveHandlerSecrets } from '../../../lib/processor/handler-secrets';
import { parseStreamConfig } from '../../../lib/config/schema';
import type { OpsContext } from '../../../lib/ops/context';
import { redriveDeadLetters } from '../../../lib/ops/dead-letters';
import { FIXTURE_TOPIC, processorFixture } from '../../support/processor-fixture';

const SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:api-AbC123';

/** In-memory Secrets Manager and SSM: values can be changed (rotation) or removed (access lost); reads are counted. */
function memoryStores() {
  const secrets = new Map<string, string>([[SECRET, JSON.stringify({ token: 't-1', user: 'svc' })]]);
  const parameters = new Map<string, string>([['/orders/signing-key', 'k-1']]);
  const reads: string[] = [];
  const read = (kind: string, store: Map<string, string>) => async (id: string) => {
    reads.push(`${kind}:${id}`);
    const value = store.get(id);
    if (value === undefined) throw new Error('AccessDeniedException: not authorized\n(request id 42)');
    return value;
  };
  return { secrets, parameters, reads, readSecretsManager: read('sm', secrets), readSsmParameter: read('ssm', parameters) };
}

const SECRETS = {
  API_TOKEN: { secretArn: SECRET, field: 'token' },
  SIGNING_KEY: { ssmParameter: '/orders/signing-key' },
  LOCAL_ONLY: { env: 'ORDERS_LOCAL_TOKEN' },
};

function streamWith(secrets: Record<string, unknown> | undefined) {
  return parseStreamConfig(
    {
      id: 'orders',
      kafka: { brokers: ['localhost:9092'] },
      topics: ['orders'],
      handler: { module: './h.ts', mode: 'at-least-once', ...(secrets && { secrets }) },
    },
    'test',
  );
}

describe('resolveHandlerSecrets', () => {
  it('resolves every kind of reference by name, and nothing for a stream without secrets', async () => {
    const stores = memoryStores();
    const resolve = createSecretResolver({ ...stores, env: { ORDERS_LOCAL_TOKEN: 'l-1' } });
    const secrets = await resolveHandlerSecrets(streamWith(SECRETS), resolve);
    expect(secrets).toEqual({ API_TOKEN: 't-1', SIGNING_KEY: 'k-1', LOCAL_ONLY: 'l-1' });
    expect(Object.isFrozen(secrets)).toBe(true);
    expect(await resolveHandlerSecrets(streamWith(undefined), resolve)).toEqual({});
    expect(stores.reads).toEqual([`sm:${SECRET}`, 'ssm:/orders/signing-key']);
  });

  it('reads the stores once per resolver (container) while cached, and again after expiry (rotation)', async () => {
    const stores = memoryStores();
    let nowMs = 0;
    const resolve = createSecretResolver({ ...stores, env: { ORDERS_LOCAL_TOKEN: 'l-1' }, ttlMs: 60_000, nowMs: () => nowMs });
    const stream = streamWith(SECRETS);
    await resolveHandlerSecrets(stream, resolve);
    stores.secrets.set(SECRET, JSON.stringify({ token: 't-2' }));
    expect((await resolveHandlerSecrets(stream, resolve)).API_TOKEN).toBe('t-1');
    expect(stores.reads).toHaveLength(2);
    nowMs = 60_001;
    expect((await resolveHandlerSecrets(stream, resolve)).API_TOKEN).toBe('t-2');
    expect(stores.reads).toHaveLength(4);
  });

  it.each([
    [
      'a secret the store refuses',
      { API_TOKEN: { secretArn: `${SECRET}x`, field: 'token' } },
      `stream orders: handler secret API_TOKEN (Secrets Manager secret ${SECRET}x field "token"): AccessDeniedException: not authorized`,
    ],
    [
      'a missing JSON field',
      { API_TOKEN: { secretArn: SECRET, field: 'password' } },
      `stream orders: handler secret API_TOKEN: secret ${SECRET} has no string field "password"`,
    ],
    [
      'an unset environment variable',
      { LOCAL_ONLY: { env: 'NOT_SET_ANYWHERE' } },
      'stream orders: handler secret LOCAL_ONLY: environment variable NOT_SET_ANYWHERE (a secret reference) is not set',
    ],
  ])('refuses %s in one line naming the stream, the secret and the reference', async (_what, secrets, message) => {
    const resolve = createSecretResolver({ ...memoryStores(), env: {} });
    const failure = resolveHandlerSecrets(streamWith(secrets), resolve);
    await expect(failure).rejects.toBeInstanceOf(SecretUnavailableError);
    await expect(failure).rejects.toThrow(message);
    await failure.catch((err: Error) => {
      expect(err.message).toBe(message);
      expect(err.cause).toBeInstanceOf(Error);
    });
  });
});

describe('the processor', () => {
  const records = Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: `v${i}` }));
  const stream: Partial<StreamConfigInput> = {
    handler: { module: './h.ts', mode: 'at-least-once', secrets: { API_TOKEN: { secretArn: SECRET, field: 'token' } } },
  };

  /** An at-least-once handler that records the secrets each call saw. */
  function recording() {
    const seen: Array<HandlerContext['secrets']> = [];
    const handler: AtLeastOnceHandler = { mode: 'at-least-once', handle: (_records, ctx) => void seen.push(ctx.secrets) };
    return { seen, handler };
  }

  const secretsFrom = (resolve: SecretResolver) => (s: Parameters<typeof resolveHandlerSecrets>[0]) => resolveHandlerSecrets(s, resolve);

  it("gives the handler the stream's secrets as ctx.secrets, read once for the invocations of one container", async () => {
    const stores = memoryStores();
    const { seen, handler } = recording();
    const t = await processorFixture({ records, stream, handler, until: 3 });
    const deps = { secretsFor: secretsFrom(createSecretResolver({ ...stores, env: {} })) };
    expect(await t.run(deps)).toMatchObject({ status: 'done', records: 3 });
    expect(await t.run(deps)).toMatchObject({ status: 'already-done' });
    expect(seen.length).toBeGreaterThan(0);
    for (const secrets of seen) expect(secrets).toEqual({ API_TOKEN: 't-1' });
    expect(stores.reads).toEqual([`sm:${SECRET}`]);
  });

  it('fails the attempt when a secret cannot be read: recorded on the range, no record handled, nothing committed', async () => {
    const stores = memoryStores();
    stores.secrets.delete(SECRET);
    const { seen, handler } = recording();
    const t = await processorFixture({ records, stream, handler });
    const deps = { secretsFor: secretsFrom(createSecretResolver({ ...stores, env: {} })) };
    const before = t.ledger.store('s').partitions.get(`${FIXTURE_TOPIC}/0`);

    await expect(t.run(deps)).rejects.toThrow(
      `stream s: handler secret API_TOKEN (Secrets Manager secret ${SECRET} field "token"): AccessDeniedException`,
    );
    expect(seen).toEqual([]);
    expect(t.rangeItem()).toMatchObject({ status: 'failed', progress: 0, attempts: 1 });
    expect(t.rangeItem().lastError).toMatch(
      /^SecretUnavailableError: stream s: handler secret API_TOKEN .*: AccessDeniedException: not authorized$/,
    );
    expect(t.ledger.store('s').partitions.get(`${FIXTURE_TOPIC}/0`)).toEqual(before);

    // Access restored: the next attempt (after the failed lease) reads it and processes the range.
    stores.secrets.set(SECRET, JSON.stringify({ token: 't-9' }));
    t.advance(1000);
    expect(await t.run(deps)).toMatchObject({ status: 'done', records: 6 });
    expect(seen.every((s) => s.API_TOKEN === 't-9')).toBe(true);
  });
});

describe('a dead-letter re-drive', () => {
  const VARIABLE = 'HANDLER_SECRETS_TEST_TOKEN';
  afterEach(() => delete process.env[VARIABLE]);

  it('gives the handler the same secrets, and handles nothing when one cannot be read', async () => {
    const stream: Partial<StreamConfigInput> = {
      maxAttempts: 1,
      handler: { module: './h.ts', mode: 'at-least-once', secrets: { TOKEN: { env: VARIABLE } } },
    };
    let failing = true;
    const seen: Array<HandlerContext['secrets']> = [];
    const handler: AtLeastOnceHandler = {
      mode: 'at-least-once',
      handle: (_records, ctx) => {
        seen.push(ctx.secrets);
        if (failing) throw new Error('rejected');
      },
    };
    const t = await processorFixture({
      records: [{ key: 'k', value: 'v' }],
      stream,
      handler,
      deps: { secretsFor: async () => ({ TOKEN: 'x' }) },
    });
    expect(await t.run()).toMatchObject({ status: 'done', deadLetters: 1 });
    failing = false;
    seen.length = 0;
    const ctx = { ledger: t.ledger, readerFor: async () => t.reader, handlerFor: () => handler } as unknown as OpsContext;

    // Re-driven by the CLI, the secrets come from the process-wide resolver (here: the environment).
    await expect(redriveDeadLetters(ctx, t.stream, { all: true, nowMs: () => 50_000 })).rejects.toThrow(
      `stream s: handler secret TOKEN: environment variable ${VARIABLE} (a secret reference) is not set`,
    );
    expect(seen).toEqual([]);
    process.env[VARIABLE] = 'from-env';
    expect(await redriveDeadLetters(ctx, t.stream, { all: true, nowMs: () => 50_000 })).toEqual([
      expect.objectContaining({ outcome: 'redriven' }),
    ]);
    expect(seen).toEqual([{ TOKEN: 'from-env' }]);
  });
});
