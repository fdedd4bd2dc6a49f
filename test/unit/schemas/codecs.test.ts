/** Each schema language's decoding, for both registries' framing of Protobuf, and each way a payload or schema can fail. */
import * as avro from 'avsc';
import fc from 'fast-check';
import * as protobuf from 'protobufjs';
import { UndecodableError } from '../../../lib/errors';
import type { RegistrySchema } from '../../../lib/ports/schema-registry';
import { compileSchema } from '../../../lib/schemas/codecs';
import { glueMessageOrder, mapEntryName } from '../../../lib/schemas/protobuf';
import { confluentMessageIndexes, glueMessageIndex } from '../../../lib/schemas/wire';

const schema = (over: Partial<RegistrySchema> & Pick<RegistrySchema, 'format' | 'definition'>): RegistrySchema => ({
  id: '7',
  references: [],
  ...over,
});

const ORDER_V1 = {
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'amount', type: 'long' },
  ],
};
const ORDER_V2 = {
  ...ORDER_V1,
  fields: [...ORDER_V1.fields, { name: 'note', type: ['null', 'string'], default: null }],
};

describe('Avro', () => {
  const v1 = compileSchema(schema({ format: 'avro', definition: JSON.stringify(ORDER_V1) }), 'confluent');

  it('decodes a payload with the schema it was written with, and names that schema', () => {
    const payload = avro.Type.forSchema(ORDER_V1 as avro.Schema).toBuffer({ id: 'o-1', amount: 250 });
    expect(v1.decode(payload)).toEqual({ value: { id: 'o-1', amount: 250 } });
    expect(v1.ref).toEqual({ registry: 'confluent', id: '7', format: 'avro' });
  });

  it('decodes every value of a schema as avsc wrote it (round trip)', () => {
    const type = avro.Type.forSchema(ORDER_V2 as avro.Schema);
    const compiled = compileSchema(schema({ format: 'avro', definition: JSON.stringify(ORDER_V2) }), 'glue');
    fc.assert(
      fc.property(
        fc.string(),
        fc.integer({ min: -(2 ** 52), max: 2 ** 52 }) /* avsc's own long writer is exact to 2^52 */,
        fc.option(fc.string(), { nil: null }),
        (id, amount, note) => {
          expect(compiled.decode(type.toBuffer({ id, amount, note })).value).toEqual({ id, amount, note });
        },
      ),
    );
  });

  it('gives longs beyond 2^53 as bigints instead of refusing the record', () => {
    const payload = Buffer.concat([
      avro.Type.forSchema('string').toBuffer('o-2'),
      Buffer.from([0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
    ]);
    expect(v1.decode(payload).value).toEqual({ id: 'o-2', amount: 2n ** 63n - 1n });
  });

  it('refuses a truncated payload and one with trailing bytes (written with another schema)', () => {
    const payload = avro.Type.forSchema(ORDER_V2 as avro.Schema).toBuffer({ id: 'o-3', amount: 1, note: 'gift' });
    expect(() => v1.decode(payload)).toThrow('not Avro of its schema (trailing data)');
    expect(() => v1.decode(payload.subarray(0, 3))).toThrow(/not Avro of its schema \(truncated buffer\)/);
  });

  it('resolves named types from the schemas it references', () => {
    const money = { type: 'record', name: 'Money', namespace: 'shop', fields: [{ name: 'cents', type: 'long' }] };
    const payment = { type: 'record', name: 'Payment', namespace: 'shop', fields: [{ name: 'total', type: 'shop.Money' }] };
    const compiled = compileSchema(
      schema({
        format: 'avro',
        definition: JSON.stringify(payment),
        references: [{ name: 'shop.Money', definition: JSON.stringify(money) }],
      }),
      'confluent',
    );
    const registry = {};
    avro.Type.forSchema(money as avro.Schema, { registry });
    const payload = avro.Type.forSchema(payment as avro.Schema, { registry }).toBuffer({ total: { cents: 99 } });
    expect(compiled.decode(payload).value).toEqual({ total: { cents: 99 } });
  });

  it('makes a schema that does not parse an undecodable answer, not a crash', () => {
    expect(() => compileSchema(schema({ format: 'avro', definition: '{"type":"record","name":"X"}' }), 'confluent')).toThrow(
      /^its avro schema cannot be read \(/,
    );
    expect(() => compileSchema(schema({ format: 'avro', definition: 'not json' }), 'glue')).toThrow(UndecodableError);
  });
});

describe('JSON Schema', () => {
  const ORDER = { type: 'object', properties: { id: { type: 'string' }, amount: { type: 'number' } }, required: ['id', 'amount'] };
  const compiled = compileSchema(schema({ format: 'json-schema', definition: JSON.stringify(ORDER) }), 'confluent');

  it('decodes JSON that validates', () => {
    expect(compiled.decode(Buffer.from('{"id":"o-1","amount":2.5}'))).toEqual({ value: { id: 'o-1', amount: 2.5 } });
  });

  it('refuses JSON its schema does not validate, with the validator reason', () => {
    expect(() => compiled.decode(Buffer.from('{"id":"o-1","amount":"lots"}'))).toThrow(
      'does not validate against its JSON Schema: value/amount must be number',
    );
    expect(() => compiled.decode(Buffer.from('{"id":"o-1"}'))).toThrow(/value must have required property 'amount'/);
  });

  it('refuses bytes that are not JSON or not UTF-8', () => {
    expect(() => compiled.decode(Buffer.from('{"id":'))).toThrow(/^not JSON \(/);
    expect(() => compiled.decode(Buffer.from([0x7b, 0xff, 0x7d]))).toThrow('not UTF-8 text');
  });

  it('follows the draft its $schema names (2020-12, 2019-09, draft-07, draft-06, draft-04)', () => {
    const forDraft = (meta: string, extra: object) =>
      compileSchema(schema({ format: 'json-schema', definition: JSON.stringify({ $schema: meta, ...extra }) }), 'glue');
    const tuple2020 = forDraft('https://json-schema.org/draft/2020-12/schema', {
      type: 'array',
      prefixItems: [{ type: 'string' }],
      items: false,
    });
    expect(tuple2020.decode(Buffer.from('["a"]')).value).toEqual(['a']);
    expect(() => tuple2020.decode(Buffer.from('["a", 1]'))).toThrow(UndecodableError);
    const dependent2019 = forDraft('https://json-schema.org/draft/2019-09/schema', { dependentRequired: { a: ['b'] } });
    expect(() => dependent2019.decode(Buffer.from('{"a":1}'))).toThrow(/must have property b when property a is present/);
    expect(forDraft('http://json-schema.org/draft-07/schema#', { const: 3 }).decode(Buffer.from('3')).value).toBe(3);
    expect(() => forDraft('http://json-schema.org/draft-06/schema#', { const: 3 }).decode(Buffer.from('4'))).toThrow(UndecodableError);
    const draft4 = forDraft('http://json-schema.org/draft-04/schema#', { id: 'x', type: 'integer', maximum: 5 });
    expect(draft4.decode(Buffer.from('5')).value).toBe(5);
    expect(() => draft4.decode(Buffer.from('6'))).toThrow(/value must be <= 5/);
  });

  it('resolves $refs to the schemas it references, and ignores unknown keywords and formats', () => {
    const money = { $id: 'money.json', type: 'object', properties: { cents: { type: 'integer' } }, required: ['cents'] };
    const payment = {
      type: 'object',
      javaType: 'shop.Payment',
      properties: { total: { $ref: 'money.json' }, at: { type: 'string', format: 'date-time' } },
    };
    const compiled = compileSchema(
      schema({
        format: 'json-schema',
        definition: JSON.stringify(payment),
        references: [{ name: 'money.json', definition: JSON.stringify(money) }],
      }),
      'confluent',
    );
    expect(compiled.decode(Buffer.from('{"total":{"cents":3},"at":"soon"}')).value).toEqual({ total: { cents: 3 }, at: 'soon' });
    expect(() => compiled.decode(Buffer.from('{"total":{}}'))).toThrow(/value\/total must have required property 'cents'/);
  });
});

const SHOP_PROTO = `
syntax = "proto3";
package shop.v1;
import "google/protobuf/timestamp.proto";

message Order {
  string id = 1;
  int64 cents = 2;
  map<string, string> tags = 3;
  google.protobuf.Timestamp at = 4;
  Status status = 5;
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  repeated Line lines = 6;
}
message Refund { string order_id = 1; bytes proof = 2; }
`;

/** The shop.proto types, parsed by protobufjs as a producer would have them. */
function shopTypes() {
  const root = protobuf.parse(SHOP_PROTO, { keepCase: true }).root;
  root.addJSON(protobuf.common.get('google/protobuf/timestamp.proto')!.nested!);
  return {
    Order: root.lookupType('shop.v1.Order'),
    Line: root.lookupType('shop.v1.Order.Line'),
    Refund: root.lookupType('shop.v1.Refund'),
  };
}

describe('Protobuf, Confluent framing (message index paths)', () => {
  const compiled = compileSchema(schema({ format: 'protobuf', definition: SHOP_PROTO }), 'confluent');
  const t = shopTypes();
  const framed = (path: number[], type: protobuf.Type, value: object) =>
    Buffer.concat([confluentMessageIndexes(path), type.encode(type.fromObject(value)).finish()]);

  it('decodes the first message ([0]) with well-known types, maps, enums and 64-bit integers as strings', () => {
    const order = {
      id: 'o-1',
      cents: '9007199254740993',
      tags: { gift: 'yes' },
      at: { seconds: 5, nanos: 0 },
      status: 'PAID',
      lines: [{ sku: 'a', qty: 2 }],
    };
    expect(compiled.decode(framed([0], t.Order, order))).toEqual({
      value: { ...order, at: { seconds: '5', nanos: 0 } },
      message: 'shop.v1.Order',
    });
  });

  it('finds later and nested messages by their path, unset fields at their defaults', () => {
    expect(compiled.decode(framed([1], t.Refund, { order_id: 'o-1', proof: Buffer.from('ok') }))).toEqual({
      value: { order_id: 'o-1', proof: Buffer.from('ok') },
      message: 'shop.v1.Refund',
    });
    expect(compiled.decode(framed([0, 0], t.Line, { sku: 'b' }))).toEqual({ value: { sku: 'b', qty: 0 }, message: 'shop.v1.Order.Line' });
  });

  it('refuses a path naming no message, and bytes that are not the message', () => {
    expect(() => compiled.decode(framed([2], t.Refund, {}))).toThrow('message indexes [2] name no message type of the schema');
    expect(() => compiled.decode(framed([0, 1], t.Line, {}))).toThrow(/message indexes \[0, 1\] name no message type/);
    expect(() => compiled.decode(Buffer.from([0, 0x0a, 0x05, 0x61]))).toThrow(/^not a Protobuf shop\.v1\.Order \(/);
  });

  it('decodes any order as protobufjs encoded it (round trip)', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        fc.dictionary(fc.string(), fc.string()),
        (id, cents, tags) => {
          const decoded = compiled.decode(framed([0], t.Order, { id, cents: cents.toString(), tags })).value as Record<string, unknown>;
          expect({ id: decoded.id, cents: decoded.cents, tags: decoded.tags }).toEqual({ id, cents: cents.toString(), tags });
        },
      ),
    );
  });

  it('parses imports from the schemas it references', () => {
    const money = 'syntax = "proto3"; package shop.common; message Money { int64 cents = 1; }';
    const payment = 'syntax = "proto3"; package shop.v1; import "money.proto"; message Payment { shop.common.Money total = 1; }';
    const withRef = compileSchema(
      schema({ format: 'protobuf', definition: payment, references: [{ name: 'money.proto', definition: money }] }),
      'confluent',
    );
    const root = protobuf.parse(money, { keepCase: true }).root;
    protobuf.parse(payment, root, { keepCase: true });
    const Payment = root.lookupType('shop.v1.Payment');
    const bytes = Buffer.concat([Buffer.from([0]), Payment.encode(Payment.fromObject({ total: { cents: 5 } })).finish()]);
    expect(withRef.decode(bytes)).toEqual({ value: { total: { cents: '5' } }, message: 'shop.v1.Payment' });
    expect(() => compileSchema(schema({ format: 'protobuf', definition: payment }), 'confluent')).toThrow(
      /its protobuf schema cannot be read \(imports "money.proto", which the registry gave no reference for\)/,
    );
  });
});

describe('Protobuf, Glue framing (one index into all message types by full name)', () => {
  it("orders message types as Glue's MessageIndexFinder does: level by level, then sorted by full name", () => {
    // The example in Glue's MessageIndexFinder: B = 0, B.A = 1, B.A.D = 2, B.C = 3.
    const root = protobuf.parse('syntax = "proto3"; message B { message C {} message A { message D {} } }').root;
    expect(glueMessageOrder([root.lookupType('B')]).map((e) => e.name)).toEqual(['B', 'B.A', 'B.A.D', 'B.C']);
  });

  it("counts the entry type of each map field, as the serializer's descriptors do", () => {
    const root = protobuf.parse(
      'syntax = "proto3"; package p; message M { map<string, int32> my_tags = 1; map<string, int32> Zeta = 2; message N {} }',
    ).root;
    expect(glueMessageOrder([root.lookupType('p.M')]).map((e) => e.name)).toEqual(['p.M', 'p.M.MyTagsEntry', 'p.M.N', 'p.M.ZetaEntry']);
    expect(['tags', 'my_tags', 'my_URL_map', 'myMap'].map(mapEntryName)).toEqual([
      'TagsEntry',
      'MyTagsEntry',
      'MyUrlMapEntry',
      'MyMapEntry',
    ]);
  });

  it('decodes each message type by its position in that order', () => {
    const compiled = compileSchema(schema({ format: 'protobuf', definition: SHOP_PROTO }), 'glue');
    const t = shopTypes();
    // shop.v1.Order = 0, shop.v1.Order.Line = 1, shop.v1.Order.TagsEntry = 2, shop.v1.Refund = 3.
    const refund = Buffer.concat([glueMessageIndex(3), t.Refund.encode(t.Refund.fromObject({ order_id: 'o-9' })).finish()]);
    expect(compiled.decode(refund)).toEqual({ value: { order_id: 'o-9', proof: Buffer.alloc(0) }, message: 'shop.v1.Refund' });
    const line = Buffer.concat([glueMessageIndex(1), t.Line.encode(t.Line.fromObject({ sku: 'z', qty: 1 })).finish()]);
    expect(compiled.decode(line)).toEqual({ value: { sku: 'z', qty: 1 }, message: 'shop.v1.Order.Line' });
    expect(() => compiled.decode(Buffer.concat([glueMessageIndex(2), Buffer.alloc(0)]))).toThrow(
      'message index 2 names the map entry type shop.v1.Order.TagsEntry, not a message',
    );
    expect(() => compiled.decode(glueMessageIndex(4))).toThrow('message index 4 names no message type of the schema (4 types)');
  });
});

describe('Protobuf maps spelled out as entry messages', () => {
  // How a schema derived from compiled descriptors writes `map<string, Line> lines = 2` (Glue's serializer registers such text).
  const SPELLED = `syntax = "proto3";
package p;
message Order {
  string id = 1;
  repeated LinesEntry lines = 2;
  message LinesEntry { option map_entry = true; string key = 1; Line value = 2; }
  message Line { string sku = 1; repeated TagsEntry tags = 2; message TagsEntry { option map_entry = true; string key = 1; int64 value = 2; } }
}`;

  it('gives them as objects, as map<..> fields are, at any depth', () => {
    const root = protobuf.parse(
      'syntax = "proto3"; package p; message Order { string id = 1; map<string, Line> lines = 2; message Line { string sku = 1; map<string, int64> tags = 2; } }',
      { keepCase: true },
    ).root;
    const Order = root.lookupType('p.Order');
    const bytes = Order.encode(Order.fromObject({ id: 'o', lines: { a: { sku: 'x', tags: { t: 7 } } } })).finish();
    const compiled = compileSchema(schema({ format: 'protobuf', definition: SPELLED }), 'glue');
    // Both spellings give the same bytes and the same value; Glue's order counts the entry messages either way.
    expect(compiled.decode(Buffer.concat([glueMessageIndex(0), bytes])).value).toEqual({
      id: 'o',
      lines: { a: { sku: 'x', tags: { t: '7' } } },
    });
  });
});
