/** The `value` / `key` decoding settings: what parses, and one line naming the setting for each mistake. */
import { ValidationError } from '../../../lib/errors';
import { parseDeploymentConfig } from '../../../lib/config/schema';

const minimalStream = { id: 'orders', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'] };

function parseStream(patch: Record<string, unknown>) {
  return parseDeploymentConfig({ ledgerTable: 'ledger', streams: [{ ...minimalStream, ...patch }] }, 'streams.json').streams[0]!;
}

function errorOf(patch: Record<string, unknown>): string {
  try {
    parseStream(patch);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as ValidationError).message.replace('invalid config (streams.json): ', '');
  }
  throw new Error('expected the config to be rejected');
}

const GLUE = { glue: { registryName: 'orders', region: 'eu-west-1' } };
const CONFLUENT = {
  confluent: { url: 'https://sr.example:8081', username: 'app', password: { secretArn: 'arn:aws:secretsmanager:eu-west-1:1:secret:sr' } },
};

describe('value and key decoding settings', () => {
  it('parses registry formats with a Glue or Confluent registry, and json / raw without one', () => {
    expect(parseStream({ value: { format: 'avro', registry: GLUE }, key: { format: 'json' } })).toMatchObject({
      value: { format: 'avro', registry: GLUE },
      key: { format: 'json' },
    });
    expect(parseStream({ value: { format: 'protobuf', registry: CONFLUENT } }).value).toEqual({ format: 'protobuf', registry: CONFLUENT });
    expect(
      parseStream({ value: { format: 'json-schema', registry: { confluent: { url: 'http://localhost:8081' } } } }).value,
    ).toMatchObject({
      format: 'json-schema',
    });
    expect(parseStream({ value: { format: 'raw' } }).value).toEqual({ format: 'raw' });
    expect(parseStream({}).value).toBeUndefined();
  });

  it('requires a registry for avro, protobuf and json-schema, and refuses one for json and raw', () => {
    expect(errorOf({ value: { format: 'avro' } })).toBe(
      'streams[0].value.registry: is required with format "avro" (its records name their schema by id)',
    );
    expect(errorOf({ key: { format: 'json', registry: GLUE } })).toBe(
      'streams[0].key.registry: is only used with avro, protobuf or json-schema; format "json" takes none',
    );
    expect(errorOf({ value: { format: 'thrift' } })).toMatch(
      /^streams\[0\]\.value\.format: must be one of "avro", "protobuf", "json-schema", "json", "raw"/,
    );
  });

  it('names the wrong field of a registry', () => {
    expect(errorOf({ value: { format: 'avro', registry: { glue: { registryName: 'orders', region: 'Ireland' } } } })).toBe(
      'streams[0].value.registry.glue.region: must be an AWS region, e.g. "us-east-1"',
    );
    expect(errorOf({ value: { format: 'avro', registry: { glue: { registryName: 'my registry', region: 'eu-west-1' } } } })).toMatch(
      /^streams\[0\]\.value\.registry\.glue\.registryName: must be a Glue registry name/,
    );
    expect(errorOf({ value: { format: 'avro', registry: { confluent: { url: 'sr.example:8081' } } } })).toBe(
      'streams[0].value.registry.confluent.url: must be an http(s) URL, e.g. "https://schema-registry.example:8081"',
    );
    expect(errorOf({ value: { format: 'avro', registry: { confluent: { url: 'https://u:p@sr.example' } } } })).toBe(
      'streams[0].value.registry.confluent.url: must not hold credentials: use username and password (a secret reference)',
    );
    expect(errorOf({ value: { format: 'avro', registry: { confluent: { url: 'https://sr.example', urll: 'x' } } } })).toBe(
      'streams[0].value.registry.confluent.urll: unknown key (did you mean "url"?)',
    );
  });

  it('takes the password as a secret reference only, and username and password together', () => {
    expect(
      errorOf({ value: { format: 'avro', registry: { confluent: { url: 'https://sr.example', username: 'app', password: 'hunter2' } } } }),
    ).toMatch(/^streams\[0\]\.value\.registry\.confluent\.password: plain-text secrets are not accepted: use a secret reference/);
    expect(errorOf({ value: { format: 'avro', registry: { confluent: { url: 'https://sr.example', username: 'app' } } } })).toBe(
      'streams[0].value.registry.confluent.password: basic auth needs both username and password (password is missing)',
    );
  });

  it('says which registry shapes exist when neither is given', () => {
    expect(errorOf({ value: { format: 'avro', registry: { apicurio: {} } } })).toBe(
      'streams[0].value.registry: must be { "glue": { "registryName", "region" } } or { "confluent": { "url", "username"?, "password"? } }',
    );
  });
});
