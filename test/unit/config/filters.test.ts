/** `streams[i].filters`: Lambda FilterCriteria patterns, checked when the config loads, named by path. */
import { ValidationError } from '../../../lib/errors';
import { parseDeploymentConfig } from '../../../lib/config/schema';

const stream = (id: string, filters?: unknown) => ({ id, kafka: { brokers: ['localhost:9092'] }, topics: ['orders'], filters });

function errorOf(input: unknown): string {
  try {
    parseDeploymentConfig(input, 'streams.json');
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as ValidationError).message;
  }
  throw new Error('expected the config to be rejected');
}

describe('stream filters in the config', () => {
  it('keeps valid patterns as written, and leaves filters unset by default', () => {
    const filters = [{ value: { device_ID: [{ prefix: 'AB' }] } }, { value: [{ 'anything-but': ['error'] }] }];
    const config = parseDeploymentConfig({ ledgerTable: 'ledger', streams: [stream('a', filters), stream('b')] }, 'streams.json');
    expect(config.streams[0]!.filters).toEqual(filters);
    expect(config.streams[1]!.filters).toBeUndefined();
  });

  it('names the stream, the pattern and the place in it, for every problem at once', () => {
    const input = {
      ledgerTable: 'ledger',
      streams: [
        stream('a', [{ value: { ok: ['x'] } }]),
        stream('b', [{ value: { ok: ['x'] } }, { value: { type: 'order', ip: [{ cidr: '10.0.0.0/8' }] } }]),
      ],
    };
    expect(errorOf(input)).toBe(
      'invalid config (streams.json): ' +
        'streams[1].filters[1].value.type: must be a list of values or an object of fields, got a string ("order"): write ["order"]; ' +
        'streams[1].filters[1].value.ip[0].cidr: "cidr" is not supported: Lambda event filtering does not support IP address matching (EventBridge rules only)',
    );
  });

  it("refuses more than Lambda's 5 patterns", () => {
    const six = Array.from({ length: 6 }, (_, i) => ({ value: { n: [i] } }));
    expect(errorOf({ ledgerTable: 'ledger', streams: [stream('a', six)] })).toBe(
      "invalid config (streams.json): streams[0].filters: at most 5 patterns (Lambda's FilterCriteria quota)",
    );
  });

  it('refuses a pattern that is not an object, and a bare pattern instead of a list', () => {
    expect(errorOf({ ledgerTable: 'ledger', streams: [stream('a', ['{"value": ["x"]}'])] })).toBe(
      'invalid config (streams.json): streams[0].filters[0]: expected an object, got a string',
    );
    expect(errorOf({ ledgerTable: 'ledger', streams: [stream('a', { value: ['x'] })] })).toBe(
      'invalid config (streams.json): streams[0].filters: expected a list, got an object',
    );
  });
});
