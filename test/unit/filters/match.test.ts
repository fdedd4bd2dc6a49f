/**
 * Filter matching, row by row from Lambda's filter rule syntax table, its Kafka filtering page and
 * aws/event-ruler's documented examples (each row: pattern, record document, whether it matches).
 */
import { compileFilters, matchesPattern, type FilterDocument } from '../../../lib/filters/match';
import { compilePattern } from '../../../lib/filters/pattern';

type Row = [name: string, pattern: Record<string, unknown>, doc: FilterDocument, expected: boolean];

function matches(pattern: Record<string, unknown>, doc: FilterDocument): boolean {
  const { compiled, problems } = compilePattern(pattern);
  if (!compiled) throw new Error(`pattern does not compile: ${JSON.stringify(problems)}`);
  return matchesPattern(compiled, doc);
}

/** A pattern over fields of a JSON value, and a record whose value is `value`. */
const v = (fields: Record<string, unknown>): Record<string, unknown> => ({ value: fields });
const rec = (value: unknown): FilterDocument => ({ value });

// Lambda's "Filter rule syntax" table, one or more rows per operator.
const LAMBDA_TABLE: Row[] = [
  ['null: UserID is null', v({ UserID: [null] }), rec({ UserID: null }), true],
  ['null: a string is not null', v({ UserID: [null] }), rec({ UserID: 'u1' }), false],
  ['null: a missing field is not null', v({ UserID: [null] }), rec({}), false],
  ['empty: LastName is empty', v({ LastName: [''] }), rec({ LastName: '' }), true],
  ['empty: a non-empty string', v({ LastName: [''] }), rec({ LastName: 'Doe' }), false],
  ['equals: Name is "Alice"', v({ Name: ['Alice'] }), rec({ Name: 'Alice' }), true],
  ['equals: no case folding', v({ Name: ['Alice'] }), rec({ Name: 'alice' }), false],
  ['equals (ignore case)', v({ Name: [{ 'equals-ignore-case': 'alice' }] }), rec({ Name: 'ALICE' }), true],
  ['equals (ignore case): another name', v({ Name: [{ 'equals-ignore-case': 'alice' }] }), rec({ Name: 'Alicia' }), false],
  ['and: both', v({ Location: ['New York'], Day: ['Monday'] }), rec({ Location: 'New York', Day: 'Monday' }), true],
  ['and: one of two', v({ Location: ['New York'], Day: ['Monday'] }), rec({ Location: 'New York', Day: 'Sunday' }), false],
  ['or: PaymentType is Credit or Debit', v({ PaymentType: ['Credit', 'Debit'] }), rec({ PaymentType: 'Debit' }), true],
  ['or: neither', v({ PaymentType: ['Credit', 'Debit'] }), rec({ PaymentType: 'Cash' }), false],
  [
    'or (multiple fields): the second',
    v({ $or: [{ Location: ['New York'] }, { Day: ['Monday'] }] }),
    rec({ Location: 'Paris', Day: 'Monday' }),
    true,
  ],
  [
    'or (multiple fields): none',
    v({ $or: [{ Location: ['New York'] }, { Day: ['Monday'] }] }),
    rec({ Location: 'Paris', Day: 'Sunday' }),
    false,
  ],
  ['not: anything but Raining', v({ Weather: [{ 'anything-but': ['Raining'] }] }), rec({ Weather: 'Sunny' }), true],
  ['not: Raining', v({ Weather: [{ 'anything-but': ['Raining'] }] }), rec({ Weather: 'Raining' }), false],
  ['not: a missing field is not "anything"', v({ Weather: [{ 'anything-but': ['Raining'] }] }), rec({}), false],
  ['numeric (equals): Price is 100', v({ Price: [{ numeric: ['=', 100] }] }), rec({ Price: 100 }), true],
  ['numeric (equals): a string is not a number', v({ Price: [{ numeric: ['=', 100] }] }), rec({ Price: '100' }), false],
  ['numeric (range): 20 is in (10, 20]', v({ Price: [{ numeric: ['>', 10, '<=', 20] }] }), rec({ Price: 20 }), true],
  ['numeric (range): 10 is not', v({ Price: [{ numeric: ['>', 10, '<=', 20] }] }), rec({ Price: 10 }), false],
  ['numeric (range): 20.5 is not', v({ Price: [{ numeric: ['>', 10, '<=', 20] }] }), rec({ Price: 20.5 }), false],
  ['exists', v({ ProductName: [{ exists: true }] }), rec({ ProductName: 'p' }), true],
  ['exists: missing', v({ ProductName: [{ exists: true }] }), rec({}), false],
  ['does not exist', v({ ProductName: [{ exists: false }] }), rec({ Other: 1 }), true],
  ['does not exist: present', v({ ProductName: [{ exists: false }] }), rec({ ProductName: 'p' }), false],
  ['begins with', v({ Region: [{ prefix: 'us-' }] }), rec({ Region: 'us-east-1' }), true],
  ['begins with: another region', v({ Region: [{ prefix: 'us-' }] }), rec({ Region: 'eu-west-1' }), false],
  ['begins with (ignore case)', v({ service: [{ prefix: { 'equals-ignore-case': 'eventb' } }] }), rec({ service: 'EventBridge' }), true],
  ['ends with', v({ FileName: [{ suffix: '.png' }] }), rec({ FileName: 'photo.png' }), true],
  ['ends with: another extension', v({ FileName: [{ suffix: '.png' }] }), rec({ FileName: 'photo.PNG' }), false],
  ['ends with (ignore case)', v({ service: [{ suffix: { 'equals-ignore-case': 'tBridge' } }] }), rec({ service: 'EVENTBRIDGE' }), true],
];

// Lambda's filtering examples and its Kafka page.
const LAMBDA_EXAMPLES: Row[] = [
  ['temperature in (50, 60]', v({ Temperature: [{ numeric: ['>', 50, '<=', 60] }] }), rec({ Temperature: 55 }), true],
  ['temperature outside', v({ Temperature: [{ numeric: ['>', 50, '<=', 60] }] }), rec({ Temperature: 61 }), false],
  ['multi-level: Keys.Id.N is "101"', v({ Keys: { Id: { N: ['101'] } } }), rec({ Keys: { Id: { N: '101' } }, SizeBytes: 26 }), true],
  ['multi-level: another id', v({ Keys: { Id: { N: ['101'] } } }), rec({ Keys: { Id: { N: '102' } } }), false],
  [
    'kafka: device_ID begins with AB',
    v({ device_ID: [{ prefix: 'AB' }] }),
    rec({ device_ID: 'AB1234', session: { start_time: 'yyyy-mm-ddThh:mm:ss', duration: 162 } }),
    true,
  ],
  ['kafka: device_ID CD1234', v({ device_ID: [{ prefix: 'AB' }] }), rec({ device_ID: 'CD1234' }), false],
  ['kafka: a plain string value that is not "error"', { value: [{ 'anything-but': ['error'] }] }, rec('all good'), true],
  ['kafka: the plain string "error"', { value: [{ 'anything-but': ['error'] }] }, rec('error'), false],
  ['kafka: a plain string has no fields', v({ device_ID: [{ prefix: 'AB' }] }), rec('AB1234'), false],
  ['kafka: a JSON object is not a plain string', { value: ['AB1234'] }, rec({ device_ID: 'AB1234' }), false],
  ['kafka: an absent value (tombstone) matches only exists false', { value: [{ exists: false }] }, {}, true],
  ['kafka: an absent value does not match anything-but', { value: [{ 'anything-but': ['error'] }] }, {}, false],
];

// aws/event-ruler's README: its sample event, arrays, exists on leaves, anything-but, numbers.
const RULER_EVENT = {
  'detail-type': 'EC2 Instance State-change Notification',
  resources: ['arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000'],
  detail: { 'c-count': 5, 'd-count': 3, 'x-limit': 301.8, 'source-ip': '10.0.0.33', state: 'running' },
};
const EMPLOYEES = {
  employees: [
    { firstName: 'John', lastName: 'Doe' },
    { firstName: 'Anna', lastName: 'Smith' },
    { firstName: 'Peter', lastName: 'Jones' },
  ],
};
const RULER_EXAMPLES: Row[] = [
  [
    'simple: detail-type, resources (an array in the event) and state',
    v({
      'detail-type': ['EC2 Instance State-change Notification'],
      resources: ['arn:aws:ec2:us-east-1:123456789012:instance/i-000000aaaaaa00000'],
      detail: { state: ['initializing', 'running'] },
    }),
    rec(RULER_EVENT),
    true,
  ],
  [
    'complex: prefix, anything-but, numeric ranges, anything-but numbers',
    v({
      detail: {
        state: [{ 'anything-but': 'initializing' }],
        'c-count': [{ numeric: ['>', 0, '<=', 5] }],
        'd-count': [{ numeric: ['<', 10] }],
        'x-limit': [{ 'anything-but': [100, 200, 300] }],
      },
    }),
    rec(RULER_EVENT),
    true,
  ],
  ['numeric equals 3.018e2', v({ detail: { 'x-limit': [{ numeric: ['=', 3.018e2] }] } }), rec(RULER_EVENT), true],
  ['an array matches if any element does', v({ employees: { firstName: ['Anna'] } }), rec(EMPLOYEES), true],
  ['array consistency: two fields of two elements', v({ employees: { firstName: ['Anna'], lastName: ['Jones'] } }), rec(EMPLOYEES), false],
  ['array consistency: two fields of one element', v({ employees: { firstName: ['Anna'], lastName: ['Smith'] } }), rec(EMPLOYEES), true],
  [
    'nested arrays are flattened',
    v({ employees: { firstName: ['Peter'] } }),
    rec({ employees: [[EMPLOYEES.employees[0]], [EMPLOYEES.employees[2]]] }),
    true,
  ],
  [
    'exists false on a non-leaf (an object) matches',
    v({ detail: { 'c-count': [{ exists: false }] } }),
    rec({ detail: { 'c-count': { c1: 100 } } }),
    true,
  ],
  [
    'exists true on a non-leaf does not',
    v({ detail: { 'c-count': [{ exists: true }] } }),
    rec({ detail: { 'c-count': { c1: 100 } } }),
    false,
  ],
  ['a value where an object is expected has no fields', v({ detail: { state: ['running'] } }), rec({ detail: 'running' }), false],
  ['anything-but numbers: 200 is excluded', v({ x: [{ 'anything-but': [100, 200, 300] }] }), rec({ x: 200 }), false],
  ['anything-but numbers: the string "200" is not a number', v({ x: [{ 'anything-but': [100, 200, 300] }] }), rec({ x: '200' }), true],
  ['anything-but a string: a number is anything but it', v({ x: [{ 'anything-but': 'initializing' }] }), rec({ x: 5 }), true],
  ['anything-but on an array: any element outside', v({ x: [{ 'anything-but': ['a'] }] }), rec({ x: ['a', 'b'] }), true],
  ['anything-but on an array: every element inside', v({ x: [{ 'anything-but': ['a'] }] }), rec({ x: ['a', 'a'] }), false],
  ['a number literal matches numerically', v({ x: [300] }), rec({ x: 300.0 }), true],
  ['a number literal is not the string', v({ x: [300] }), rec({ x: '300' }), false],
  ['a string literal is not the number', v({ x: ['300'] }), rec({ x: 300 }), false],
  ['numbers beyond 5e9 match by their text', v({ account: [123456789012] }), rec({ account: 123456789012 }), true],
  ['numeric ignores numbers beyond 5e9', v({ x: [{ numeric: ['>', 0] }] }), rec({ x: 6e9 }), false],
  ['numeric compares 6 digits after the point', v({ x: [{ numeric: ['=', 1.0000001] }] }), rec({ x: 1.0000002 }), true],
  ['booleans are literals', v({ ok: [true] }), rec({ ok: true }), true],
  ['true is not the string "true"', v({ ok: [true] }), rec({ ok: 'true' }), false],
  ['prefix does not match a number', v({ x: [{ prefix: '12' }] }), rec({ x: 123 }), false],
  ['exists true matches a null value', v({ x: [{ exists: true }] }), rec({ x: null }), true],
  ['exists false matches an empty array', v({ x: [{ exists: false }] }), rec({ x: [] }), true],
  ['exists false or a value', v({ x: ['a', { exists: false }] }), rec({ x: 'a' }), true],
  ['$or inside a field', v({ a: { $or: [{ b: [1] }, { c: [2] }] } }), rec({ a: { c: 2 } }), true],
  ['$or nested in $or', v({ $or: [{ a: [1] }, { b: [2], $or: [{ c: [3] }, { d: [4] }] }] }), rec({ b: 2, d: 4 }), true],
  ['$or nested in $or: the inner fails', v({ $or: [{ a: [1] }, { b: [2], $or: [{ c: [3] }, { d: [4] }] }] }), rec({ b: 2, d: 5 }), false],
];

// key and headers (beyond Lambda, which filters on value only).
const KEY_AND_HEADERS: Row[] = [
  ['key as text', { key: [{ prefix: 'acct-' }] }, { key: 'acct-7' }, true],
  ['key as JSON', { key: { region: ['eu'] } }, { key: { region: 'eu', id: 1 } }, true],
  ['a keyless record: exists false', { key: [{ exists: false }] }, {}, true],
  ['header equals', { headers: { type: ['order'] } }, { headers: { type: ['order'] } }, true],
  ['a repeated header: any value', { headers: { type: ['refund'] } }, { headers: { type: ['order', 'refund'] } }, true],
  ['a header the record does not have', { headers: { type: [{ exists: false }] } }, { headers: {} }, true],
  ['value and header together', { value: { a: [1] }, headers: { type: ['x'] } }, { value: { a: 1 }, headers: { type: ['y'] } }, false],
  ['top-level $or over value and key', { $or: [{ value: { a: [1] } }, { key: ['k'] }] }, { value: { a: 2 }, key: 'k' }, true],
];

describe('filter matching', () => {
  it.each(LAMBDA_TABLE)("Lambda's syntax table: %s", (_name, pattern, doc, expected) => {
    expect(matches(pattern, doc)).toBe(expected);
  });
  it.each(LAMBDA_EXAMPLES)("Lambda's examples: %s", (_name, pattern, doc, expected) => {
    expect(matches(pattern, doc)).toBe(expected);
  });
  it.each(RULER_EXAMPLES)('event-ruler: %s', (_name, pattern, doc, expected) => {
    expect(matches(pattern, doc)).toBe(expected);
  });
  it.each(KEY_AND_HEADERS)('key and headers: %s', (_name, pattern, doc, expected) => {
    expect(matches(pattern, doc)).toBe(expected);
  });

  it('OR-s the patterns of a stream and says which record fields they look into', () => {
    const filter = compileFilters([{ value: { type: ['order'] } }, { headers: { source: ['web'] } }]);
    expect([...filter.fields].sort()).toEqual(['headers', 'value']);
    expect(filter.matches({ value: { type: 'order' }, headers: {} })).toBe(true);
    expect(filter.matches({ value: { type: 'refund' }, headers: { source: ['web'] } })).toBe(true);
    expect(filter.matches({ value: { type: 'refund' }, headers: {} })).toBe(false);
  });

  it('refuses to compile a pattern the config would have refused', () => {
    expect(() => compileFilters([{ value: { a: 'x' } }])).toThrow('filters[0]: must be a list of values or an object of fields');
  });
});
