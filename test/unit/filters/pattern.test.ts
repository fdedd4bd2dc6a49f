/**
 * Pattern validation: what Lambda's Kafka filters accept compiles; what they refuse is named with its
 * path inside the pattern and the operator at fault.
 */
import { compilePattern, MAX_PATTERN_CHARS } from '../../../lib/filters/pattern';

const problems = (pattern: unknown) => compilePattern(pattern).problems.map((p) => ({ path: p.path.join('.'), message: p.message }));

describe('filter pattern validation', () => {
  it.each<[string, unknown]>([
    ['values of every JSON kind', { value: { a: ['x', 1, -2.5, true, false, null, ''] } }],
    [
      'prefix, suffix, and their ignore-case forms',
      { value: { a: [{ prefix: 'x' }, { suffix: 'y' }, { prefix: { 'equals-ignore-case': 'X' } }] } },
    ],
    ['equals-ignore-case', { value: { a: [{ 'equals-ignore-case': 'x' }] } }],
    [
      'anything-but: a string, a number, lists of either',
      { value: { a: [{ 'anything-but': 'x' }, { 'anything-but': 1 }, { 'anything-but': ['x', 'y'] }] } },
    ],
    [
      'numeric: every form',
      { value: { a: [{ numeric: ['=', 3] }, { numeric: ['>', 0, '<=', 5] }, { numeric: ['>=', 1] }, { numeric: ['<', 9] }] } },
    ],
    ['exists true and false', { value: { a: [{ exists: true }], b: [{ exists: false }] } }],
    ['$or at the top and inside value', { $or: [{ value: { $or: [{ a: [1] }, { b: [2] }] } }, { key: ['k'] }] }],
    ['a plain-string value pattern', { value: [{ 'anything-but': ['error'] }] }],
    ['headers by name', { headers: { 'content-type': [{ prefix: 'application/' }] } }],
  ])('accepts %s', (_name, pattern) => {
    expect(problems(pattern)).toEqual([]);
    expect(compilePattern(pattern).compiled).toBeDefined();
  });

  it.each<[string, unknown, string, string]>([
    ['a list instead of an object', [{ value: ['x'] }], '', 'a pattern is a JSON object'],
    ['a bare value (Lambda refuses it too)', { value: { type: 'order' } }, 'value.type', 'write ["order"]'],
    ['a bare number', { value: { n: 5 } }, 'value.n', 'write [5]'],
    ['an empty pattern', {}, '', 'must not be an empty object'],
    ['an empty list', { value: { a: [] } }, 'value.a', 'must not be an empty list'],
    ['a field Lambda has no such thing as', { topic: ['orders'] }, 'topic', 'unknown field'],
    ['headers as a list', { headers: ['x'] }, 'headers', 'headers is an object of header names'],
    ['wildcard', { value: { a: [{ wildcard: 'a*' }] } }, 'value.a.0.wildcard', '"wildcard" is not supported'],
    ['cidr', { value: { ip: [{ cidr: '10.0.0.0/24' }] } }, 'value.ip.0.cidr', '"cidr" is not supported'],
    [
      'anything-but prefix',
      { value: { a: [{ 'anything-but': { prefix: 'x' } }] } },
      'value.a.0.anything-but',
      'anything-but with prefix is not supported',
    ],
    [
      'anything-but suffix',
      { value: { a: [{ 'anything-but': { suffix: 'x' } }] } },
      'value.a.0.anything-but',
      'anything-but with suffix is not supported',
    ],
    [
      'anything-but equals-ignore-case',
      { value: { a: [{ 'anything-but': { 'equals-ignore-case': 'x' } }] } },
      'value.a.0.anything-but',
      'anything-but with equals-ignore-case is not supported',
    ],
    [
      'anything-but mixed types',
      { value: { a: [{ 'anything-but': ['x', 1] }] } },
      'value.a.0.anything-but',
      'only strings or only numbers',
    ],
    ['anything-but null', { value: { a: [{ 'anything-but': [null] }] } }, 'value.a.0.anything-but', 'only strings or only numbers'],
    ['anything-but empty', { value: { a: [{ 'anything-but': [] }] } }, 'value.a.0.anything-but', 'non-empty list'],
    ['an unknown operator', { value: { a: [{ contains: 'x' }] } }, 'value.a.0.contains', 'unknown operator "contains"'],
    ['two operators in one object', { value: { a: [{ prefix: 'x', suffix: 'y' }] } }, 'value.a.0', 'exactly one operator'],
    ['numeric in the wrong order', { value: { a: [{ numeric: ['<', 5, '>', 1] }] } }, 'value.a.0.numeric', 'must be ["=", n]'],
    ['numeric with a string bound', { value: { a: [{ numeric: ['>', '5'] }] } }, 'value.a.0.numeric', 'must be ["=", n]'],
    ['numeric with an empty range', { value: { a: [{ numeric: ['>', 5, '<', 5] }] } }, 'value.a.0.numeric', 'must be below the high end'],
    ['numeric beyond 5e9', { value: { a: [{ numeric: ['>', 6e9] }] } }, 'value.a.0.numeric', 'between -5000000000 and 5000000000'],
    ['exists not a boolean', { value: { a: [{ exists: 'yes' }] } }, 'value.a.0.exists', 'must be true or false'],
    ['prefix not a string', { value: { a: [{ prefix: 5 }] } }, 'value.a.0.prefix', 'must be a string'],
    ['$or with one object', { value: { $or: [{ a: [1] }] } }, 'value.$or', 'at least two objects'],
    [
      'an operator name as a field inside $or',
      { value: { $or: [{ prefix: ['x'] }, { b: [1] }] } },
      'value.$or.0.prefix',
      'is an operator, not a field',
    ],
    ['a nested list element', { value: { a: [['x']] } }, 'value.a.0', 'must be a string, number, true, false, null or an operator object'],
  ])('refuses %s', (_name, pattern, path, message) => {
    const found = problems(pattern);
    expect(found).toEqual(expect.arrayContaining([{ path, message: expect.stringContaining(message) }]));
    expect(compilePattern(pattern).compiled).toBeUndefined();
  });

  it(`refuses a pattern longer than Lambda's ${MAX_PATTERN_CHARS} characters`, () => {
    const pattern = { value: { a: Array.from({ length: 500 }, (_, i) => `value-${i}`) } };
    expect(problems(pattern)).toEqual([
      { path: '', message: expect.stringMatching(/^is \d+ characters as JSON, more than Lambda's 4096/) },
    ]);
  });

  it('reports every problem of a pattern at once', () => {
    expect(problems({ value: { a: 'x', b: [{ wildcard: '*' }] }, topic: [1] }).map((p) => p.path)).toEqual([
      'topic',
      'value.a',
      'value.b.0.wildcard',
    ]);
  });
});
