/** `kafka-direct init`: what it writes, what it refuses (writing nothing), and the engine dependency it names. */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseDeploymentConfig } from '../../../lib/config/schema';
import { ValidationError } from '../../../lib/errors';
import { engineSpec, initProject, parseInitArgs } from '../../../lib/project/init';
import { findStreamProject, serviceNameOf } from '../../../lib/project/project';

const ROOT = resolve(__dirname, '..', '..', '..');
const base = mkdtempSync(join(tmpdir(), 'init-'));

describe('kafka-direct init', () => {
  it('scaffolds a stream project whose config parses and names its handler file', () => {
    const dir = join(base, 'Click Stream');
    const r = initProject(parseInitArgs([dir], base), {}, base);
    expect(r.files).toEqual([
      '.gitignore',
      'README.md',
      'data/clicks.jsonl',
      'handlers/click-counts.test.ts',
      'handlers/click-counts.ts',
      'jest.config.js',
      'package.json',
      'streams.json',
      'tsconfig.json',
    ]);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    expect(pkg.name).toBe('click-stream');
    expect(pkg.scripts).toMatchObject({ start: 'kafka-direct start', test: 'tsc --noEmit && jest', deploy: 'kafka-direct deploy' });
    // From a clone, the engine is the clone itself.
    expect(pkg.dependencies).toEqual({ 'kafka-lambda-direct': `file:${relative(dir, ROOT)}` });
    const config = parseDeploymentConfig(JSON.parse(readFileSync(join(dir, 'streams.json'), 'utf8')), 'scaffold');
    expect(config.streams[0]!.handler).toMatchObject({ module: './handlers/click-counts.ts', sinkTable: 'click-stream-click-counts' });
    expect(existsSync(join(dir, config.streams[0]!.handler!.module))).toBe(true);
    expect(
      readFileSync(join(dir, 'data', 'clicks.jsonl'), 'utf8')
        .trim()
        .split('\n'),
    ).toHaveLength(1000);
    const project = findStreamProject(join(dir, 'handlers'));
    expect(project).toMatchObject({ dir, configFile: join(dir, 'streams.json') });
    expect(serviceNameOf(project!)).toBe('click-stream');
  });

  it('refuses a non-empty directory and writes nothing; --force writes into it, saying what it replaced', () => {
    const dir = join(base, 'busy');
    mkdirSync(dir);
    writeFileSync(join(dir, 'streams.json'), '{"mine": true}');
    expect(() => initProject(parseInitArgs([dir], base))).toThrow(ValidationError);
    expect(() => initProject(parseInitArgs([dir], base))).toThrow(
      `${dir} is not empty (streams.json): choose a new directory, or pass --force`,
    );
    expect(readdirSync(dir)).toEqual(['streams.json']);
    const r = initProject(parseInitArgs([dir, '--force'], base));
    expect(r.replaced).toEqual(['streams.json']);
    expect(readFileSync(join(dir, 'streams.json'), 'utf8')).toContain('"ledgerTable": "busy-ledger"');
  });

  it('takes a directory holding only .git as empty', () => {
    const dir = join(base, 'repo');
    mkdirSync(join(dir, '.git'), { recursive: true });
    expect(initProject(parseInitArgs([dir], base)).replaced).toEqual([]);
  });

  it.each([
    [[], "missing required argument 'dir'"],
    [['a', 'b'], "unexpected argument 'b'"],
    [['a', '--nope'], "unknown option '--nope'"],
    [['a', '--name', 'Not A Name'], '"Not A Name" is not an npm package name'],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInitArgs(argv, base)).toThrow(message);
  });

  it('names the tarball npx ran it from, relative to the project', () => {
    const tgz = join(base, 'dl', 'kafka-lambda-direct-9.9.9.tgz');
    mkdirSync(join(base, 'dl'));
    writeFileSync(tgz, '');
    expect(engineSpec(join(base, 'p'), { npm_config_package: './dl/kafka-lambda-direct-9.9.9.tgz' }, base)).toBe(
      'file:../dl/kafka-lambda-direct-9.9.9.tgz',
    );
    expect(engineSpec(join(base, 'p'), { npm_config_package: 'kafka-lambda-direct' }, base)).toMatch(/^file:/); // a clone: itself
  });
});
