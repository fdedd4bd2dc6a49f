/** The schema registry's start-up settings and credentials header (pure parts of infra/local/registry.ts). */
import { PrerequisiteError } from '../../../../lib/errors';
import { basicAuthHeader, registryProperties } from '../../../../infra/local/registry';

const parse = (text: string): Record<string, string> =>
  Object.fromEntries(text.split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));

describe('local schema registry settings', () => {
  const limits = { fileBytes: 5 * 1024 * 1024, keptFiles: 3 };

  it('listens on loopback, defaults to BACKWARD compatibility and logs to one rotated file', () => {
    const props = parse(registryProperties(18081, '/tmp/r/registry.log', limits));
    expect(props).toMatchObject({
      'quarkus.http.host': '127.0.0.1',
      'quarkus.http.port': '18081',
      'registry.rules.global.compatibility': 'BACKWARD',
      'quarkus.log.file.path': '/tmp/r/registry.log',
      'quarkus.log.file.rotation.max-file-size': '5120K',
      'quarkus.log.file.rotation.max-backup-index': '3',
    });
    // Open: nothing asks for credentials.
    expect(props['local.registry.basic-auth']).toBeUndefined();
    expect(Object.keys(props).filter((k) => k.startsWith('quarkus.security.users'))).toEqual([]);
  });

  it('asks for the one user given, its password escaped for a properties file', () => {
    const props = parse(registryProperties(18081, '/tmp/r.log', limits, { username: 'app', password: 'a\\b=c:d' }));
    expect(props).toMatchObject({
      'local.registry.basic-auth': 'true',
      'quarkus.security.users.embedded.plain-text': 'true',
      'quarkus.security.users.embedded.users.app': 'a\\\\b=c:d',
    });
  });

  it('refuses a user name that a properties key cannot hold, naming it', () => {
    expect(() => registryProperties(1, '/tmp/r.log', limits, { username: 'a b', password: 'x' })).toThrow(PrerequisiteError);
    expect(() => registryProperties(1, '/tmp/r.log', limits, { username: 'a b', password: 'x' })).toThrow(/schema registry user "a b"/);
  });

  it('sends the credentials as an HTTP basic Authorization header', () => {
    expect(basicAuthHeader({ username: 'app', password: 'p:w' })).toBe(`Basic ${Buffer.from('app:p:w').toString('base64')}`);
  });
});
