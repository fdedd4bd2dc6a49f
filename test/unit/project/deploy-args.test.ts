/** `kafka-direct deploy|remove`: options checked before osls starts, defaults from the stream project. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDeployArgs } from '../../../infra/serverless/deploy';
import { ValidationError } from '../../../lib/errors';

const project = mkdtempSync(join(tmpdir(), 'deploy-args-'));
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: '@team/click-stream', kafkaDirect: { config: 'streams.json' } }));
writeFileSync(join(project, 'streams.json'), '{}');
mkdirSync(join(project, 'handlers'));

describe('deploy options', () => {
  it("default to the project's config, name and directory, wherever in the project it runs", () => {
    const o = parseDeployArgs(['--stage', 'dev'], join(project, 'handlers'), { AWS_REGION: 'eu-west-1' });
    expect(o).toEqual({
      stage: 'dev',
      configFile: join(project, 'streams.json'),
      region: 'eu-west-1',
      packageOnly: false,
      emulate: false,
      service: 'click-stream',
      params: [],
      projectDir: project,
    });
  });

  it('take --config, --service, --region, --package-only and repeated --param', () => {
    writeFileSync(join(project, 'other.json'), '{}');
    const o = parseDeployArgs(
      [
        '--stage',
        'ci',
        '--config',
        'other.json',
        '--service',
        'clicks-2',
        '--region',
        'us-west-2',
        '--package-only',
        '--param',
        'alarmEmail=a@b.c',
        '--param',
        'x=y=z',
      ],
      project,
      {},
    );
    expect(o).toMatchObject({ configFile: join(project, 'other.json'), service: 'clicks-2', region: 'us-west-2', packageOnly: true });
    expect(o.params).toEqual([
      ['alarmEmail', 'a@b.c'],
      ['x', 'y=z'],
    ]);
  });

  it('take --emulate (the packaged stack run locally), not beside --package-only', () => {
    expect(parseDeployArgs(['--stage', 'dev', '--emulate'], project, {})).toMatchObject({ emulate: true, packageOnly: false });
    expect(() => parseDeployArgs(['--stage', 'dev', '--emulate', '--package-only'], project, {})).toThrow(
      '--emulate and --package-only: choose one',
    );
  });

  it.each([
    [[], "required option '--stage <stage>' not specified"],
    [['--stage', 'a b'], '--stage <stage> is required'],
    [['--stage', 'dev', '--config', 'missing.json'], 'missing.json does not exist'],
    [['--stage', 'dev', '--service', '9lives'], '--service "9lives" must match'],
    [['--stage', 'dev', '--param', 'novalue'], '--param "novalue": expected name=value'],
    [['--stage', 'dev', '--param', 'streamsConfig=x.json'], '--param streamsConfig: use --config <file>'],
    [['--stage', 'dev', '--bogus'], "unknown option '--bogus'"],
  ])('refuse %j', (argv, message) => {
    expect(() => parseDeployArgs(argv, project, {})).toThrow(ValidationError);
    expect(() => parseDeployArgs(argv, project, {})).toThrow(message);
  });

  it('outside a project need --config', () => {
    expect(() => parseDeployArgs(['--stage', 'dev'], tmpdir(), {})).toThrow('no streams config: pass --config <file>');
  });

  it('for remove have no --package-only', () => {
    expect(() => parseDeployArgs(['--stage', 'dev', '--package-only'], project, {}, 'remove')).toThrow("unknown option '--package-only'");
  });
});
