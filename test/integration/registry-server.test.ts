/**
 * The local Confluent-compatible schema registry (Apicurio Registry's /apis/ccompat/v7, started on
 * demand by test/support/registry.ts) through Confluent's REST API: the `@kafkajs/confluent-schema-registry`
 * client registers Avro, Protobuf and JSON schemas (POST /subjects/<s>/versions), fetches them by id
 * (GET /schemas/ids/<id>) and round-trips records in Confluent's wire format; a compatible second Avro
 * version evolves the subject, an incompatible one is refused; and a guarded registry asks for HTTP
 * basic credentials.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { uniqueName } from '../support/env';
import { REGISTRY_START_TIMEOUT_MS, testRegistry, type TestRegistry } from '../support/registry';

const avroV1 = { type: 'record', name: 'Payment', namespace: 'test.registry', fields: [{ name: 'id', type: 'string' }] } as const;
// A field with a default: BACKWARD compatible (a v2 reader reads v1 records).
const avroV2 = {
  type: 'record',
  name: 'Payment',
  namespace: 'test.registry',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'cents', type: 'long', default: 0 },
  ],
} as const;
// A new field without a default: a v3 reader cannot read v2 records.
const avroV3 = {
  type: 'record',
  name: 'Payment',
  namespace: 'test.registry',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'cents', type: 'long', default: 0 },
    { name: 'currency', type: 'string' },
  ],
} as const;
const proto = 'syntax = "proto3";\npackage test.registry;\n\nmessage Payment {\n  string id = 1;\n  int64 cents = 2;\n}\n';
const jsonSchema = JSON.stringify({
  $schema: 'http://json-schema.org/draft-07/schema#',
  type: 'object',
  properties: { id: { type: 'string' }, cents: { type: 'integer' } },
  required: ['id'],
});

/** GET <registry>/schemas/ids/<id> as Confluent's API answers it. */
async function schemaById(registry: TestRegistry, id: number): Promise<{ schema: string; schemaType?: string }> {
  const res = await fetch(`${registry.url}/schemas/ids/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as { schema: string; schemaType?: string };
}

describe('Confluent-compatible schema registry server', () => {
  let registry: TestRegistry;
  let client: SchemaRegistry;
  beforeAll(async () => {
    registry = await testRegistry('open');
    client = new SchemaRegistry({ host: registry.url });
  }, REGISTRY_START_TIMEOUT_MS);

  it('registers an Avro schema, serves it by id and round-trips a record in the wire format', async () => {
    const subject = uniqueName('payments-avro');
    const { id } = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroV1) }, { subject });
    expect(Number.isInteger(id) && id > 0).toBe(true);
    expect(JSON.parse((await schemaById(registry, id)).schema)).toEqual(avroV1);

    const encoded = await client.encode(id, { id: 'p-1' });
    // Confluent's framing: magic byte 0, then the schema id as a 4-byte big-endian integer.
    expect(encoded[0]).toBe(0);
    expect(encoded.readInt32BE(1)).toBe(id);
    expect(await new SchemaRegistry({ host: registry.url }).decode(encoded)).toEqual({ id: 'p-1' });

    // The same schema under another subject keeps its id, as Confluent's registry does.
    const again = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroV1) }, { subject: uniqueName('copy') });
    expect(again.id).toBe(id);
  });

  it('registers a Protobuf schema and round-trips a message', async () => {
    const subject = uniqueName('payments-proto');
    const { id } = await client.register({ type: SchemaType.PROTOBUF, schema: proto }, { subject });
    const served = await schemaById(registry, id);
    expect(served.schemaType).toBe('PROTOBUF');
    expect(served.schema).toContain('message Payment');

    const encoded = await client.encode(id, { id: 'p-2', cents: 250 });
    expect(encoded.readInt32BE(1)).toBe(id);
    const decoded = (await new SchemaRegistry({ host: registry.url }).decode(encoded)) as { id: string; cents: unknown };
    expect({ id: decoded.id, cents: Number(decoded.cents) }).toEqual({ id: 'p-2', cents: 250 });
  });

  it('registers a JSON Schema and round-trips a document', async () => {
    const subject = uniqueName('payments-json');
    const { id } = await client.register({ type: SchemaType.JSON, schema: jsonSchema }, { subject });
    const served = await schemaById(registry, id);
    expect(served.schemaType).toBe('JSON');
    expect(JSON.parse(served.schema)).toEqual(JSON.parse(jsonSchema));

    const encoded = await client.encode(id, { id: 'p-3', cents: 7 });
    expect(await new SchemaRegistry({ host: registry.url }).decode(encoded)).toEqual({ id: 'p-3', cents: 7 });
  });

  it('evolves an Avro subject with a compatible version and refuses an incompatible one', async () => {
    const subject = uniqueName('payments-evolving');
    const v1 = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroV1) }, { subject });
    const oldRecord = await client.encode(v1.id, { id: 'p-4' });
    const v2 = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroV2) }, { subject });
    expect(v2.id).not.toBe(v1.id);
    expect(await client.getLatestSchemaId(subject)).toBe(v2.id);
    expect(await client.getRegistryId(subject, 1)).toBe(v1.id);

    const versions = await fetch(`${registry.url}/subjects/${subject}/versions`);
    expect(await versions.json()).toEqual([1, 2]);

    // A v1 record read with the v2 schema gets the new field's default.
    const reader = await client.getSchema(v2.id);
    expect(await client.decode(oldRecord, { [SchemaType.AVRO]: { readerSchema: reader } })).toEqual({ id: 'p-4', cents: 0 });
    expect(await client.decode(await client.encode(v2.id, { id: 'p-5', cents: 9 }))).toEqual({ id: 'p-5', cents: 9 });

    // The registry's compatibility check (BACKWARD by default), not the client, refuses v3.
    const refused = await fetch(`${registry.url}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema: JSON.stringify(avroV3) }),
    });
    expect(refused.status).toBe(409);
    expect(await client.getLatestSchemaId(subject)).toBe(v2.id);
  });

  describe('with HTTP basic authentication', () => {
    let guarded: TestRegistry;
    beforeAll(async () => {
      guarded = await testRegistry('basic-auth');
    }, REGISTRY_START_TIMEOUT_MS);

    it('refuses requests without the credentials and serves those with them', async () => {
      const user = guarded.basicAuth;
      expect(user).toBeDefined();
      const anonymous = await fetch(`${guarded.url}/subjects`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^basic/i);
      const wrong = new SchemaRegistry({ host: guarded.url, auth: { username: user?.username ?? '', password: 'wrong' } });
      await expect(
        wrong.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroV1) }, { subject: uniqueName('denied') }),
      ).rejects.toThrow(/401|Unauthorized/i);

      const authed = new SchemaRegistry({ host: guarded.url, auth: { username: user?.username ?? '', password: user?.password ?? '' } });
      const { id } = await authed.register({ type: SchemaType.AVRO, schema: JSON.stringify(avroV1) }, { subject: uniqueName('allowed') });
      expect(await authed.decode(await authed.encode(id, { id: 'p-6' }))).toEqual({ id: 'p-6' });
    });
  });
});
