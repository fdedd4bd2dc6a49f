/**
 * User handler modules named by path: loaded relative to the config file, default export or
 * `handler`, and every bad module refused at load with a message naming the stream and the file.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join, resolve as resolvePath } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { parseStreamConfig, type StreamConfig } from '../../../lib/config/schema';
import { isHandlerPath, loadHandlerModule, resolveHandler } from '../../../lib/handlers';
import { ValidationError } from '../../../lib/errors';

const ROOT = resolvePath(__dirname, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'handler-modules-'));
const dynamo = new DynamoDBClient({ region: 'us-east-1' });
afterAll(() => {
  dynamo.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const COUNTS = `export default {
  mode: 'dynamodb-exactly-once' as const,
  handle(records: { key: Buffer | null }[]) {
    return records.map((r) => ({ update: { key: { pk: String(r.key) }, expression: 'ADD n :one', values: { ':one': 1 } } }));
  },
};
`;

function write(name: string, text: string): void {
  mkdirSync(join(dir, 'handlers'), { recursive: true });
  writeFileSync(join(dir, 'handlers', name), text);
}

function stream(module: string, mode: 'dynamodb-exactly-once' | 'at-least-once' = 'dynamodb-exactly-once'): StreamConfig {
  return parseStreamConfig(
    {
      id: 'clicks',
      kafka: { brokers: ['127.0.0.1:9092'] },
      topics: ['clicks'],
      handler: { module, mode, ...(mode === 'dynamodb-exactly-once' ? { sinkTable: 'click-counts' } : {}) },
    },
    'test',
  );
}

/** The environment without jest's marker, as a process jest did not start has it. */
function withoutJest(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { JEST_WORKER_ID: _worker, ...rest } = env;
  return rest;
}

const resolve = (s: StreamConfig) => resolveHandler(s, { dynamo, env: {}, configDir: dir });
const failure = (s: StreamConfig): string => {
  try {
    resolve(s);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as Error).message;
  }
  throw new Error('resolved');
};

describe('user handler modules', () => {
  it('tells paths from built-in names', () => {
    expect(['./h.ts', '../x/h.js', '/abs/h.mjs', 'handlers/h.ts'].map(isHandlerPath)).toEqual([true, true, true, true]);
    expect(['running-totals', 'audit-log', 'noop'].map(isHandlerPath)).toEqual([false, false, false]);
  });

  it('loads the default export of a TypeScript file relative to the config directory', async () => {
    write('counts.ts', COUNTS);
    const h = resolve(stream('./handlers/counts.ts'));
    expect(h.mode).toBe('dynamodb-exactly-once');
    const writes = await h.handle([{ key: Buffer.from('u1') } as never], {
      stream: 'clicks',
      signal: new AbortController().signal,
      secrets: {},
    });
    expect(writes).toEqual([{ update: { key: { pk: 'u1' }, expression: 'ADD n :one', values: { ':one': 1 } } }]);
  });

  it('takes an export named handler, and a handler with fold instead of handle', () => {
    write('named.js', `exports.handler = { mode: 'at-least-once', handle() {} };\n`);
    expect(resolve(stream('./handlers/named.js', 'at-least-once')).mode).toBe('at-least-once');
    write('fold.js', `module.exports.default = { mode: 'dynamodb-exactly-once', fold: { map() {}, combine() {}, write() {} } };\n`);
    expect(resolve(stream('./handlers/fold.js')).mode).toBe('dynamodb-exactly-once');
  });

  it('gives a fold handler without handle the handle derived from its fold', async () => {
    write(
      'sum.js',
      `module.exports.default = { mode: 'dynamodb-exactly-once', fold: {
        map: (r) => ({ key: { pk: r.key.toString() }, value: 1 }),
        combine: (a, b) => a + b,
        write: (item, n) => ({ update: { ...item, expression: 'ADD n :n', values: { ':n': n } } }),
      } };\n`,
    );
    const h = resolve(stream('./handlers/sum.js'));
    const ctx = { stream: 'clicks', signal: new AbortController().signal, secrets: {} };
    const writes = await h.handle([{ key: Buffer.from('u1') }, { key: Buffer.from('u1') }, { key: Buffer.from('u2') }] as never, ctx);
    expect(writes).toEqual([
      { update: { key: { pk: 'u1' }, expression: 'ADD n :n', values: { ':n': 2 } } },
      { update: { key: { pk: 'u2' }, expression: 'ADD n :n', values: { ':n': 1 } } },
    ]);
  });

  it('refuses a fold without map, combine or write, and a fold in at-least-once mode', () => {
    write('halffold.js', `module.exports.default = { mode: 'dynamodb-exactly-once', fold: { map() {} } };\n`);
    expect(failure(stream('./handlers/halffold.js'))).toContain("the handler's fold has no combine, write function");
    write('alofold.js', `module.exports.default = { mode: 'at-least-once', fold: { map() {}, combine() {}, write() {} } };\n`);
    expect(failure(stream('./handlers/alofold.js', 'at-least-once'))).toContain("a fold handler's mode must be dynamodb-exactly-once");
  });

  it('refuses a missing file, naming the stream, the module and the file', () => {
    expect(failure(stream('./handlers/missing.ts'))).toBe(
      `stream clicks: handler.module "./handlers/missing.ts" (${join(dir, 'handlers', 'missing.ts')}): no such file`,
    );
  });

  it('refuses a module without a handler export', () => {
    write('none.js', `exports.somethingElse = 1;\n`);
    expect(failure(stream('./handlers/none.js'))).toBe(
      `stream clicks: handler.module "./handlers/none.js" (${join(dir, 'handlers', 'none.js')}): no handler export (export default { mode, handle }, or export const handler = { mode, handle })`,
    );
  });

  it('refuses a handler of another mode than handler.mode, and an unknown mode', () => {
    write('alo.js', `exports.handler = { mode: 'at-least-once', handle() {} };\n`);
    expect(failure(stream('./handlers/alo.js'))).toBe(
      `stream clicks: handler module "./handlers/alo.js" (${join(dir, 'handlers', 'alo.js')}) is at-least-once, but handler.mode says dynamodb-exactly-once`,
    );
    write('odd.js', `exports.handler = { mode: 'exactly-once', handle() {} };\n`);
    expect(failure(stream('./handlers/odd.js'))).toContain(
      `(${join(dir, 'handlers', 'odd.js')}): the handler's mode is "exactly-once"; it must be one of dynamodb-exactly-once, at-least-once`,
    );
    write('nohandle.js', `exports.handler = { mode: 'at-least-once' };\n`);
    expect(failure(stream('./handlers/nohandle.js', 'at-least-once'))).toContain('neither a handle(records, ctx) function nor a fold');
  });

  it('refuses a module with a syntax error, naming the file', () => {
    write('broken.ts', `export default { mode: 'at-least-once', handle( {\n`);
    const message = failure(stream('./handlers/broken.ts', 'at-least-once'));
    expect(message).toMatch(
      new RegExp(
        `^stream clicks: handler\\.module "\\./handlers/broken\\.ts" \\(${join(dir, 'handlers', 'broken.ts').replace(/[.]/g, '\\.')}\\): cannot be built \\(`,
      ),
    );
    expect(message).toContain('broken.ts:2:0: Expected identifier but found end of file');
  });

  it('refuses a module that throws while it loads, with its error', () => {
    write('throws.ts', `throw new RangeError('no config for region');\nexport default {};\n`);
    expect(failure(stream('./handlers/throws.ts', 'at-least-once'))).toContain(
      'throws.ts): cannot be loaded (RangeError: no config for region)',
    );
  });

  it('names each package a handler imports that is not installed, before running any of it', () => {
    write(
      'needs.ts',
      `import pad from 'left-pad-not-installed';\nimport { x } from '@nowhere/sub/path';\nglobalThis.needsRan = true;\nexport default { mode: 'at-least-once', handle() { pad(x); } };\n`,
    );
    const message = failure(stream('./handlers/needs.ts', 'at-least-once'));
    expect(message).toMatch(
      /needs\.ts\): imports "left-pad-not-installed", "@nowhere\/sub", which are not installed \(npm install left-pad-not-installed @nowhere\/sub in /,
    );
    expect((globalThis as { needsRan?: boolean }).needsRan).toBeUndefined();
  });

  it("resolves a handler's packages from its own node_modules, and the engine's name to the engine itself", () => {
    const pkg = join(dir, 'node_modules', 'shout');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'shout', version: '1.0.0', main: 'index.js' }));
    writeFileSync(join(pkg, 'index.js'), `exports.shout = (s) => s.toUpperCase() + '!';\n`);
    write('helpers.ts', `import { shout } from 'shout';\nexport const key = (k: string): string => shout(k);\n`);
    write(
      'own-deps.ts',
      `import { foldHandler, lastHeader } from 'kafka-lambda-direct';\nimport { key } from './helpers';\n` +
        `export default foldHandler<number>({ map: (r) => ({ key: { pk: key(String(r.key)) }, value: lastHeader(r.headers, 'n') !== undefined ? 2 : 1 }), combine: (a, b) => a + b, write: (item, n) => ({ update: { ...item, expression: 'ADD n :n', values: { ':n': n } } }) });\n`,
    );
    const h = resolve(stream('./handlers/own-deps.ts'));
    if (h.mode !== 'dynamodb-exactly-once' || !h.fold) throw new Error('not a fold');
    const record = { key: Buffer.from('ann'), headers: [{ key: 'n', value: null }] } as never;
    expect(h.fold.map(record, { stream: 'clicks', signal: new AbortController().signal, secrets: {} })).toEqual({
      key: { pk: 'ANN!' },
      value: 2,
    });
  });

  it('outside jest (the local runtime, the CLI) runs the compiled module with the same resolution', () => {
    // own-deps.ts from the test above, loaded by a plain Node process (tsx for the engine's own sources).
    const script = `const { loadHandlerModule } = require(${JSON.stringify(join(ROOT, 'lib', 'handlers', 'modules.ts'))});
      const h = loadHandlerModule('clicks', './handlers/own-deps.ts', ${JSON.stringify(dir)});
      const r = h.fold.map({ key: Buffer.from('bob'), headers: [] }, {});
      const engine = require(${JSON.stringify(join(ROOT, 'lib', 'index.ts'))});
      process.stdout.write(JSON.stringify({ r, sameEngine: typeof engine.foldHandler === 'function' }));`;
    const run = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsx'), ['-e', script], {
      encoding: 'utf8',
      env: withoutJest(process.env),
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ r: { key: { pk: 'BOB!' }, value: 1 }, sameEngine: true });
  });

  it('in a Lambda bundle takes the bundled module and never reads the disk', () => {
    const bundled = { mode: 'at-least-once', handle() {} };
    expect(
      loadHandlerModule('clicks', './handlers/gone.ts', '/nowhere', {
        bundled: true,
        modules: { './handlers/gone.ts': { default: bundled } },
      }),
    ).toBe(bundled);
    expect(() => loadHandlerModule('clicks', './handlers/other.ts', '/nowhere', { bundled: true, modules: {} })).toThrow(
      'stream clicks: handler.module "./handlers/other.ts" (/nowhere/handlers/other.ts): not in this package',
    );
  });
});
