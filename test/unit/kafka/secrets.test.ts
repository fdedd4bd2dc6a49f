/** SecretRef resolution: sources, JSON fields, per-process caching with expiry; no AWS calls. */
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { GetParameterCommand } from '@aws-sdk/client-ssm';
import { SecretUnavailableError, ValidationError } from '../../../lib/errors';
import { createSecretResolver, regionOfArn, secretField } from '../../../lib/kafka/secrets';
import { readSecretsManager, readSsmParameter } from '../../../lib/kafka/secrets.aws';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka-AbCdEf';

function fakeSources() {
  const calls: string[] = [];
  const secrets: Record<string, string> = { [ARN]: JSON.stringify({ username: 'svc', password: 'from-sm' }), plain: 'whole-secret' };
  const parameters: Record<string, string> = { '/kafka/password': 'from-ssm' };
  return {
    calls,
    secrets,
    readSecretsManager: async (id: string) => {
      calls.push(`sm:${id}`);
      const value = secrets[id];
      if (value === undefined) throw new SecretUnavailableError(`no secret ${id}`);
      return value;
    },
    readSsmParameter: async (name: string) => {
      calls.push(`ssm:${name}`);
      const value = parameters[name];
      if (value === undefined) throw new SecretUnavailableError(`no parameter ${name}`);
      return value;
    },
  };
}

describe('createSecretResolver', () => {
  it('reads each kind of reference', async () => {
    const resolve = createSecretResolver({ ...fakeSources(), env: { KAFKA_PASSWORD: 'from-env' } });
    expect(await resolve({ secretArn: ARN, field: 'password' })).toBe('from-sm');
    expect(await resolve({ secretArn: 'plain' })).toBe('whole-secret');
    expect(await resolve({ ssmParameter: '/kafka/password' })).toBe('from-ssm');
    expect(await resolve({ env: 'KAFKA_PASSWORD' })).toBe('from-env');
  });

  it('reads a secret once per process, across fields and concurrent uses', async () => {
    const sources = fakeSources();
    const resolve = createSecretResolver(sources);
    await Promise.all([resolve({ secretArn: ARN, field: 'password' }), resolve({ secretArn: ARN, field: 'username' })]);
    await resolve({ secretArn: ARN });
    await resolve({ ssmParameter: '/kafka/password' });
    await resolve({ ssmParameter: '/kafka/password' });
    expect(sources.calls).toEqual([`sm:${ARN}`, 'ssm:/kafka/password']);
  });

  it('reads the secret again after the cache expires (rotation)', async () => {
    const sources = fakeSources();
    let nowMs = 0;
    const resolve = createSecretResolver({ ...sources, ttlMs: 1000, nowMs: () => nowMs });
    expect(await resolve({ secretArn: 'plain' })).toBe('whole-secret');
    sources.secrets.plain = 'rotated';
    nowMs = 999;
    expect(await resolve({ secretArn: 'plain' })).toBe('whole-secret');
    nowMs = 1000;
    expect(await resolve({ secretArn: 'plain' })).toBe('rotated');
  });

  it('does not cache a failure', async () => {
    const sources = fakeSources();
    const resolve = createSecretResolver(sources);
    await expect(resolve({ secretArn: 'later' })).rejects.toThrow(SecretUnavailableError);
    sources.secrets.later = 'now-there';
    expect(await resolve({ secretArn: 'later' })).toBe('now-there');
  });

  it('names a missing environment variable', async () => {
    const resolve = createSecretResolver({ ...fakeSources(), env: { EMPTY: '' } });
    await expect(resolve({ env: 'MISSING' })).rejects.toThrow(/environment variable MISSING .* is not set/);
    await expect(resolve({ env: 'EMPTY' })).rejects.toThrow(ValidationError);
  });
});

describe('secretField', () => {
  it('extracts a string field and never quotes the secret on failure', () => {
    expect(secretField('{"password":"p"}', 'id', 'password')).toBe('p');
    expect(() => secretField('{"password":"p"}', 'id', 'pass')).toThrow('secret id has no string field "pass"');
    expect(() => secretField('{"password":7}', 'id', 'password')).toThrow(ValidationError);
    expect(() => secretField('not-json-hunter2', 'id', 'password')).toThrow(/secret id is not JSON/);
    expect(() => secretField('not-json-hunter2', 'id', 'password')).not.toThrow(/hunter2/);
  });
});

describe('AWS readers', () => {
  it('asks Secrets Manager for the secret and reads string or binary values', async () => {
    const sent: unknown[] = [];
    const client = (output: object) => ({
      send: async (command: GetSecretValueCommand) => {
        sent.push(command.input);
        return output;
      },
    });
    expect(await readSecretsManager(client({ SecretString: 'text' }), ARN)).toBe('text');
    expect(await readSecretsManager(client({ SecretBinary: new TextEncoder().encode('bytes') }), ARN)).toBe('bytes');
    await expect(readSecretsManager(client({}), ARN)).rejects.toThrow(SecretUnavailableError);
    expect(sent).toEqual([{ SecretId: ARN }, { SecretId: ARN }, { SecretId: ARN }]);
  });

  it('asks SSM for the decrypted parameter', async () => {
    const sent: unknown[] = [];
    const client = {
      send: async (command: GetParameterCommand) => {
        sent.push(command.input);
        return { Parameter: { Value: 'decrypted' } };
      },
    };
    expect(await readSsmParameter(client, '/kafka/password')).toBe('decrypted');
    expect(sent).toEqual([{ Name: '/kafka/password', WithDecryption: true }]);
  });

  it('wraps store errors, naming the secret and the AWS error', async () => {
    const denied = Object.assign(new Error('User is not authorized'), { name: 'AccessDeniedException' });
    const client = { send: async () => Promise.reject(denied) };
    const error = await readSsmParameter(client, '/kafka/password').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretUnavailableError);
    expect((error as Error).message).toBe('cannot read SSM parameter /kafka/password: AccessDeniedException: User is not authorized');
    expect((error as Error).cause).toBe(denied);
    await expect(readSecretsManager(client, ARN)).rejects.toThrow(/cannot read Secrets Manager secret .*AccessDeniedException/);
  });

  it('reads the region of an ARN, so a secret in another region is found', () => {
    expect(regionOfArn(ARN)).toBe('eu-west-1');
    expect(regionOfArn('arn:aws-us-gov:ssm:us-gov-west-1:123456789012:parameter/kafka')).toBe('us-gov-west-1');
    expect(regionOfArn('/kafka/password')).toBeUndefined();
    expect(regionOfArn('my-secret')).toBeUndefined();
  });
});
