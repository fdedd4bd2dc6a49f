/** Loading the deployment config from STREAMS_CONFIG (inline JSON or a file) and LEDGER_TABLE. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '../../../lib/errors';
import fc from 'fast-check';
import { loadDeploymentConfig, locateJsonError, parseJson } from '../../../lib/config/load';

const config = {
  ledgerTable: 'ledger',
  streams: [{ id: 'orders', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'] }],
};

function tempFile(name: string, content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'config-')), name);
  writeFileSync(path, content);
  return path;
}

function errorOf(load: () => unknown): ValidationError {
  try {
    load();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

describe('loadDeploymentConfig', () => {
  it('reads inline JSON', () => {
    const loaded = loadDeploymentConfig({ STREAMS_CONFIG: `  ${JSON.stringify(config)}\n` });
    expect(loaded.ledgerTable).toBe('ledger');
    expect(loaded.streams[0]?.triggerIntervalMs).toBe(60000);
  });

  it('reads a JSON file and names it in validation errors', () => {
    const good = tempFile('streams.json', JSON.stringify(config, null, 2));
    expect(loadDeploymentConfig({ STREAMS_CONFIG: good }).streams[0]?.id).toBe('orders');

    const bad = tempFile('bad.json', JSON.stringify({ ...config, streams: [{ ...config.streams[0], maxAttempts: 0 }] }));
    expect(errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: bad })).message).toBe(
      `invalid config (${bad}): streams[0].maxAttempts: must be >= 1`,
    );
  });

  it('ignores a byte-order mark at the start of a file', () => {
    const path = tempFile('bom.json', `\uFEFF${JSON.stringify(config)}`);
    expect(loadDeploymentConfig({ STREAMS_CONFIG: path }).ledgerTable).toBe('ledger');
  });

  it('names inline JSON as the variable in validation errors', () => {
    expect(errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: '{"streams": []}' })).message).toBe(
      'invalid config (STREAMS_CONFIG): ledgerTable: is required; streams: must list at least one stream',
    );
  });

  it('lets LEDGER_TABLE override the ledger table', () => {
    const loaded = loadDeploymentConfig({ STREAMS_CONFIG: JSON.stringify(config), LEDGER_TABLE: 'stack-ledger' });
    expect(loaded.ledgerTable).toBe('stack-ledger');
    const withoutTable = JSON.stringify({ streams: config.streams });
    expect(loadDeploymentConfig({ STREAMS_CONFIG: withoutTable, LEDGER_TABLE: 'stack-ledger' }).ledgerTable).toBe('stack-ledger');
    expect(loadDeploymentConfig({ STREAMS_CONFIG: JSON.stringify(config), LEDGER_TABLE: '' }).ledgerTable).toBe('ledger');
  });

  it('reports a missing variable', () => {
    expect(errorOf(() => loadDeploymentConfig({})).message).toMatch(/^STREAMS_CONFIG is not set: .*inline JSON.*path of a JSON file/);
    expect(errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: '  ' })).message).toMatch(/^STREAMS_CONFIG is not set/);
  });

  it('reports a missing file, naming it and the variable', () => {
    const missing = join(tmpdir(), 'no-such-dir-xyz', 'streams.json');
    expect(errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: missing })).message).toBe(
      `cannot read config file "${missing}" (from STREAMS_CONFIG): no such file; STREAMS_CONFIG must be inline JSON starting with "{" or the path of a JSON file`,
    );
  });

  it('names the option a file path came from, without the variable hint', () => {
    const missing = join(tmpdir(), 'no-such-dir-xyz', 'streams.json');
    expect(errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: missing }, { from: '--config' })).message).toBe(
      `cannot read config file "${missing}" (from --config): no such file`,
    );
  });

  it('reports a directory given as the file', () => {
    expect(errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: tmpdir() })).message).toContain('it is a directory');
  });

  it('locates bad JSON in a file by line and column', () => {
    const path = tempFile('broken.json', '{\n  "ledgerTable": "ledger",\n  "streams": [,]\n}\n');
    const error = errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: path }));
    expect(error.message).toContain(`invalid JSON in ${path} at line 3, column 15 (position 43): unexpected ","`);
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it('locates bad inline JSON', () => {
    expect(errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: '{"ledgerTable": }' })).message).toMatch(
      /^invalid JSON in STREAMS_CONFIG at line 1, column 17 \(position 16\): unexpected "}"$/,
    );
  });

  it('locates truncated JSON at its end', () => {
    expect(errorOf(() => parseJson('{"a": [1,\n', 'x.json')).message).toMatch(
      /^invalid JSON in x\.json at line 2, column 1 \(position 10\): unexpected end of input$/,
    );
  });

  it('rejects JSON that is not an object', () => {
    const path = tempFile('list.json', '[]');
    expect(errorOf(() => loadDeploymentConfig({ STREAMS_CONFIG: path })).message).toBe(
      `invalid config (${path}): expected an object, got a list`,
    );
  });
});

describe('locateJsonError', () => {
  it('does not echo the text around the error', () => {
    expect(errorOf(() => parseJson('{"password": hunter2}', 'x')).message).not.toContain('hunter2');
  });

  it('agrees with JSON.parse on what is valid', () => {
    const valid = (text: string) => {
      try {
        JSON.parse(text);
        return true;
      } catch {
        return false;
      }
    };
    const mutated = fc
      .tuple(fc.json(), fc.nat(), fc.constantFrom('', ',', '}', ']', '"', ':', '\\', '\n', '{', '1', 'x', '\u0001'))
      .map(([json, at, insert]) => {
        const cut = at % (json.length + 1);
        return json.slice(0, cut) + insert + json.slice(cut + (insert === '' ? 1 : 0));
      });
    fc.assert(
      fc.property(fc.oneof(fc.json(), mutated), (text) => {
        const located = locateJsonError(text);
        expect(located.reason === 'no syntax error found').toBe(valid(text));
        expect(located.position).toBeLessThanOrEqual(text.length);
      }),
      { numRuns: 2000 },
    );
  });
});
