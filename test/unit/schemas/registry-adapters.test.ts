/**
 * The registry adapters over fakes of their clients: the Confluent HTTP answers (schema, references,
 * not found, auth, retries) and Glue's GetSchemaVersion answers, each sorted into found, not found
 * or a registry failure naming the settings to check. Both run against real servers in
 * test/integration/schema-decoding.test.ts.
 */
import { SchemaRegistryError } from '../../../lib/errors';
import { createConfluentSchemaRegistry } from '../../../lib/schemas/registry.confluent';
import { createGlueSchemaRegistry, type GlueSender } from '../../../lib/schemas/registry.glue';

type Route = (path: string, init: RequestInit) => Response | Promise<Response>;

/** A fetch answering by path, recording every request. */
function fakeFetch(route: Route) {
  const requests: Array<{ url: string; auth?: string }> = [];
  const f = (async (url: string | URL, init: RequestInit = {}) => {
    const u = new URL(String(url));
    requests.push({ url: String(url), auth: (init.headers as Record<string, string>).Authorization });
    return route(u.pathname, init);
  }) as typeof fetch;
  return { fetch: f, requests };
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const noSleep = async () => undefined;

describe('Confluent registry adapter', () => {
  it('returns the schema an id names, with its format and its references in dependency order', async () => {
    const { fetch, requests } = fakeFetch((path) => {
      if (path === '/ccompat/schemas/ids/42')
        return json(200, {
          schemaType: 'PROTOBUF',
          schema: 'main',
          references: [
            { name: 'a.proto', subject: 'a', version: 1 },
            { name: 'b.proto', subject: 'b', version: 2 },
          ],
        });
      if (path === '/ccompat/subjects/a/versions/1')
        return json(200, { schemaType: 'PROTOBUF', schema: 'A', references: [{ name: 'b.proto', subject: 'b', version: 2 }] });
      if (path === '/ccompat/subjects/b/versions/2') return json(200, { schemaType: 'PROTOBUF', schema: 'B' });
      return json(404, { error_code: 40403, message: 'nope' });
    });
    const registry = createConfluentSchemaRegistry({ url: 'http://sr:8081/ccompat/' }, { fetch });
    expect(await registry.lookup('42')).toEqual({
      kind: 'found',
      schema: {
        id: '42',
        format: 'protobuf',
        definition: 'main',
        references: [
          { name: 'b.proto', definition: 'B' },
          { name: 'a.proto', definition: 'A' },
        ],
      },
    });
    expect(requests.map((r) => r.url)).toEqual([
      'http://sr:8081/ccompat/schemas/ids/42',
      'http://sr:8081/ccompat/subjects/a/versions/1',
      'http://sr:8081/ccompat/subjects/b/versions/2',
    ]);
    expect(registry.description).toBe('confluent registry http://sr:8081/ccompat');
  });

  it('takes a missing schemaType as Avro, and JSON as JSON Schema', async () => {
    const { fetch } = fakeFetch((path) => json(200, path.endsWith('/1') ? { schema: '"string"' } : { schemaType: 'JSON', schema: '{}' }));
    const registry = createConfluentSchemaRegistry({ url: 'http://sr' }, { fetch });
    expect(await registry.lookup('1')).toMatchObject({ kind: 'found', schema: { format: 'avro' } });
    expect(await registry.lookup('2')).toMatchObject({ kind: 'found', schema: { format: 'json-schema' } });
  });

  it("answers not-found for the registry's own 'schema not found', and for a missing reference", async () => {
    const { fetch } = fakeFetch((path) =>
      path === '/schemas/ids/5'
        ? json(200, { schema: '{}', schemaType: 'JSON', references: [{ name: 'x', subject: 's', version: 3 }] })
        : json(404, { error_code: 40403, message: 'Schema 9 not found' }),
    );
    const registry = createConfluentSchemaRegistry({ url: 'http://sr' }, { fetch });
    expect(await registry.lookup('9')).toEqual({ kind: 'not-found', reason: 'unknown schema id 9 (40403 Schema 9 not found)' });
    expect(await registry.lookup('5')).toEqual({
      kind: 'not-found',
      reason: 'schema id 5: its reference x (subject s version 3) is not in the registry',
    });
  });

  it('fails (naming the url setting) on a 404 that is not a registry answer: a wrong url must not dead-letter every record', async () => {
    const { fetch } = fakeFetch(() => new Response('<html>Not Found</html>', { status: 404 }));
    const registry = createConfluentSchemaRegistry({ url: 'http://sr/wrong' }, { fetch });
    const err = await registry.lookup('1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(err).toMatchObject({
      message: 'confluent registry http://sr/wrong: GET /schemas/ids/1: answered 404 <html>Not Found</html>',
      settings: ['confluent.url'],
    });
  });

  it('sends basic auth, re-reads a refused password once past its cache, then fails naming username and password', async () => {
    const passwords = ['old', 'new'];
    const asked: boolean[] = [];
    const { fetch, requests } = fakeFetch((_path, init) =>
      (init.headers as Record<string, string>).Authorization === `Basic ${Buffer.from('app:new').toString('base64')}`
        ? json(200, { schema: '"int"' })
        : json(401, { error_code: 40101, message: 'Unauthorized' }),
    );
    const password = async ({ fresh }: { fresh: boolean }) => {
      asked.push(fresh);
      return passwords.shift() ?? 'wrong';
    };
    const registry = createConfluentSchemaRegistry({ url: 'http://sr', username: 'app' }, { fetch, password });
    expect(await registry.lookup('1')).toMatchObject({ kind: 'found' });
    expect(asked).toEqual([false, true]);
    expect(requests).toHaveLength(2);
    const err = await registry.lookup('2').catch((e: unknown) => e);
    expect(err).toMatchObject({
      message: 'confluent registry http://sr: GET /schemas/ids/2: 401: credentials refused',
      settings: ['confluent.username', 'confluent.password'],
    });
  });

  it('retries 5xx, 429 and network errors twice, then fails naming the url', async () => {
    let calls = 0;
    const flaky = fakeFetch(() => (++calls < 3 ? json(503, { message: 'busy' }) : json(200, { schema: '"int"' })));
    expect(await createConfluentSchemaRegistry({ url: 'http://sr' }, { fetch: flaky.fetch, sleep: noSleep }).lookup('1')).toMatchObject({
      kind: 'found',
    });
    expect(calls).toBe(3);
    const down = (async () => {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    }) as typeof fetch;
    const err = await createConfluentSchemaRegistry({ url: 'http://sr:1' }, { fetch: down, sleep: noSleep })
      .lookup('1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaRegistryError);
    expect(err).toMatchObject({
      message: 'confluent registry http://sr:1: GET /schemas/ids/1: no answer (fetch failed: ECONNREFUSED)',
      settings: ['confluent.url'],
    });
  });
});

describe('Glue registry adapter', () => {
  const ID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
  const settings = { registryName: 'orders', region: 'eu-west-1' };
  const client = (answer: (input: { SchemaVersionId?: string }) => unknown): GlueSender & { inputs: unknown[] } => {
    const inputs: unknown[] = [];
    return {
      inputs,
      async getSchemaVersion(input) {
        inputs.push(input);
        const out = answer(input);
        if (out instanceof Error) throw out;
        return out as never;
      },
    };
  };
  const awsError = (name: string, message: string) => Object.assign(new Error(message), { name });

  it('returns the schema version with its format, schema name and version number', async () => {
    const glue = client(() => ({
      SchemaDefinition: 'syntax = "proto3";',
      DataFormat: 'PROTOBUF',
      SchemaArn: 'arn:aws:glue:eu-west-1:123456789012:schema/orders/order-value',
      VersionNumber: 3,
    }));
    expect(await createGlueSchemaRegistry(glue, settings).lookup(ID)).toEqual({
      kind: 'found',
      schema: { id: ID, format: 'protobuf', definition: 'syntax = "proto3";', references: [], name: 'order-value', version: 3 },
    });
    expect(glue.inputs).toEqual([{ SchemaVersionId: ID }]);
  });

  it('answers not-found for an unknown version id, and for a version of another registry', async () => {
    const missing = client(() => awsError('EntityNotFoundException', 'Schema version is not found.'));
    expect(await createGlueSchemaRegistry(missing, settings).lookup(ID)).toEqual({
      kind: 'not-found',
      reason: `unknown schema version id ${ID} (EntityNotFoundException: Schema version is not found.)`,
    });
    const elsewhere = client(() => ({
      SchemaDefinition: '{}',
      DataFormat: 'JSON',
      SchemaArn: 'arn:aws:glue:eu-west-1:1:schema/billing/x',
    }));
    expect(await createGlueSchemaRegistry(elsewhere, settings).lookup(ID)).toEqual({
      kind: 'not-found',
      reason: `schema version id ${ID} is in registry billing, not orders`,
    });
  });

  it('fails on access denied (naming registryName) and on throttling or a network error (naming region)', async () => {
    const denied = await createGlueSchemaRegistry(
      client(() => awsError('AccessDeniedException', 'not authorized')),
      settings,
    )
      .lookup(ID)
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(SchemaRegistryError);
    expect(denied).toMatchObject({
      message: `glue registry orders (eu-west-1): GetSchemaVersion ${ID}: access denied: the processor's role needs glue:GetSchemaVersion (on Resource "*": Glue does not scope a lookup by version id) (AccessDeniedException: not authorized)`,
      settings: ['glue.registryName'],
    });
    const throttled = await createGlueSchemaRegistry(
      client(() => awsError('ThrottlingException', 'Rate exceeded')),
      settings,
    )
      .lookup(ID)
      .catch((e: unknown) => e);
    expect(throttled).toMatchObject({
      settings: ['glue.region'],
      message: expect.stringContaining('the registry did not answer (ThrottlingException: Rate exceeded)'),
    });
  });
});
