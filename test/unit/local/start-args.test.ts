/** `npm start -- [options]`: defaults, the bounded mode, and wrong arguments refused before anything starts. */
import { ValidationError } from '../../../lib/errors';
import { DEMO_DEFAULTS } from '../../../lib/local/demo';
import { parseStartArgs } from '../../../lib/local/demo-args';

const parse = (argv: string[], isTTY = true) => {
  const res = parseStartArgs(argv, { isTTY });
  if (!('options' in res)) throw new Error('not the demo');
  return res.options;
};

const parseRun = (argv: string[], isTTY = true) => {
  const res = parseStartArgs(argv, { isTTY });
  if (!('run' in res)) throw new Error('not a config run');
  return res.run;
};

describe('npm start -- --config <file>', () => {
  it("runs the file's streams, bounded with --until-caught-up, with a 300 s no-progress timeout by default", () => {
    expect(parseRun(['--config', 'streams.json'])).toEqual({
      configFile: 'streams.json',
      untilCaughtUp: false,
      json: false,
      timeoutMs: 300_000,
      maxConcurrency: 16,
      progress: 'tty',
      verbose: false,
    });
    expect(
      parseRun(['--config', 'streams.json', '--until-caught-up', '--json', '--timeout', '30', '--concurrency', '4', '--verbose'], true),
    ).toEqual({
      configFile: 'streams.json',
      untilCaughtUp: true,
      json: true,
      timeoutMs: 30_000,
      maxConcurrency: 4,
      progress: 'lines',
      verbose: true,
    });
  });

  it('refuses the demo options with --config, naming the option', () => {
    expect(() => parseStartArgs(['--config', 's.json', '--rate', '10'], { isTTY: false })).toThrow(
      '--rate is an option of the demo; with --config the streams come from the file',
    );
    expect(() => parseStartArgs(['--config', 's.json', '--add-partition-after', 'never'], { isTTY: false })).toThrow(
      '--add-partition-after is an option of the demo',
    );
    // A config run's topics and tables are the user's: nothing of them is deleted, so nothing to keep.
    expect(() => parseStartArgs(['--config', 's.json', '--keep'], { isTTY: false })).toThrow('--keep is an option of the demo');
  });
});

describe('npm start arguments', () => {
  it('runs until Ctrl-C by default, with the live table on a terminal and a partition added after 30 s', () => {
    expect(parse([])).toMatchObject({
      untilCaughtUp: false,
      json: false,
      durationMs: undefined,
      ratePerSec: DEMO_DEFAULTS.ratePerSec,
      partitions: 3,
      addPartitionAfterMs: 30_000,
      progress: 'tty',
      triggerIntervalMs: 1000,
      keep: false,
    });
    expect(parse([], false).progress).toBe('lines');
  });

  it("keeps the run's topic and sink table at exit with --keep", () => {
    expect(parse(['--keep']).keep).toBe(true);
    expect(parseStartArgs(['--help'], { isTTY: false })).toEqual({
      help: expect.stringMatching(/--keep +keep the run's topic and sink table/),
    });
  });

  it('bounds the run with --until-caught-up, adding the partition half way; --json never draws the table', () => {
    expect(parse(['--until-caught-up', '--json'])).toMatchObject({
      untilCaughtUp: true,
      json: true,
      durationMs: DEMO_DEFAULTS.boundedDurationMs,
      addPartitionAfterMs: DEMO_DEFAULTS.boundedDurationMs / 2,
      progress: 'lines',
    });
    expect(
      parse(['--until-caught-up', '--duration', '8', '--rate', '100', '--add-partition-after', 'never', '--no-progress']),
    ).toMatchObject({
      durationMs: 8000,
      ratePerSec: 100,
      addPartitionAfterMs: undefined,
      progress: 'off',
    });
  });

  it.each([[['--rate', '0']], [['--rate', 'fast']], [['--duration', '-3']], [['--partitions', '0']], [['--bogus']], [['extra']]])(
    'refuses %j with the usage text',
    (argv) => {
      expect(() => parseStartArgs(argv, { isTTY: false })).toThrow(ValidationError);
      expect(() => parseStartArgs(argv, { isTTY: false })).toThrow(/Usage: npm start/);
    },
  );

  it('answers --help with the usage text', () => {
    expect(parseStartArgs(['--help'], { isTTY: false })).toEqual({ help: expect.stringMatching(/--until-caught-up/) });
  });
});
