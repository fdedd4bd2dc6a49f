/** What a pattern sees of a record: value and key as JSON or text (or decoded), headers by name. */
import { filterDocument, fromBytes } from '../../../lib/filters/record-document';
import type { HandlerRecord } from '../../../lib/processor/handler-api';

const ALL = new Set(['value', 'key', 'headers'] as const);

function record(over: Partial<HandlerRecord>): HandlerRecord {
  return {
    topic: 't',
    partition: 0,
    offset: 0,
    timestampMs: 0,
    timestampType: 'CreateTime',
    key: null,
    value: null,
    headers: [],
    idempotencyKey: 't/0/0',
    ...over,
  };
}

describe('filter document of a record', () => {
  it.each<[string, Buffer | null, unknown]>([
    ['a JSON object', Buffer.from('{"a":1,"b":[true,null]}'), { a: 1, b: [true, null] }],
    ['a JSON number', Buffer.from('42'), 42],
    ['a JSON string', Buffer.from('"hi"'), 'hi'],
    ['plain text', Buffer.from('hello, world'), 'hello, world'],
    ['an empty value: the empty string', Buffer.alloc(0), ''],
    ['a null value (tombstone): absent', null, undefined],
    ['bytes that are not UTF-8: absent', Buffer.from([0xff, 0xfe, 0x00]), undefined],
  ])('reads %s', (_name, bytes, expected) => {
    expect(fromBytes(bytes)).toEqual(expected);
    const doc = filterDocument(record({ value: bytes }), ALL);
    expect('value' in doc).toBe(expected !== undefined);
    expect(doc.value).toEqual(expected);
  });

  it('uses the decoded value and key when the stream decoded them', () => {
    const doc = filterDocument(
      record({ value: Buffer.from([0, 0, 0, 0, 1, 2]), key: Buffer.from('k'), decoded: { value: { id: 7 }, key: 'K-7' } }),
      ALL,
    );
    expect(doc).toMatchObject({ value: { id: 7 }, key: 'K-7' });
  });

  it('reads the raw key when only the value was decoded', () => {
    expect(filterDocument(record({ key: Buffer.from('acct-1'), decoded: { value: { id: 7 } } }), ALL).key).toBe('acct-1');
  });

  it('gives headers by name: values as text in write order, a null value as null, non-UTF-8 values left out', () => {
    const doc = filterDocument(
      record({
        headers: [
          { key: 'type', value: Buffer.from('order') },
          { key: 'trace', value: null },
          { key: 'type', value: Buffer.from('{"v":1}') },
          { key: 'bin', value: Buffer.from([0xc3]) },
          { key: '__proto__', value: Buffer.from('x') },
        ],
      }),
      ALL,
    );
    expect({ ...(doc.headers as object) }).toEqual({ type: ['order', '{"v":1}'], trace: [null], ['__proto__']: ['x'] });
  });

  it('decodes only the fields the patterns look into', () => {
    expect(filterDocument(record({ value: Buffer.from('{"a":1}'), key: Buffer.from('k') }), new Set(['key'] as const))).toEqual({
      key: 'k',
    });
  });
});
