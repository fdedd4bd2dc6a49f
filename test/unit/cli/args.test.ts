/**
 * The one way the scripts, benchmarks and project commands read their command lines
 * (lib/cli/args.ts, bench/cli.ts): declared options, one-line refusals naming the argument at
 * fault, `--help` as the program's help.
 */
import { Command } from 'commander';
import { benchArgs, benchProgram } from '../../../bench/cli';
import { HelpRequestedError, parseArgv, refuseWithUsage, usageLine, wholeNumberOption } from '../../../lib/cli/args';
import { PrerequisiteError, ValidationError } from '../../../lib/errors';

/** A script of the usual shape: a whole-number option with a default, a string, a boolean, no operands. */
const script = () =>
  new Command('npm run some-script --')
    .description('does something')
    .addOption(wholeNumberOption('--runs <n>', 'how many', 3))
    .addOption(wholeNumberOption('--pad <n>', 'zero or more', undefined, 0))
    .option('--name <name>', 'a name')
    .option('--dry-run', 'only say what it would do');

/** What `fn` threw (it must throw). */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('did not throw');
}

describe('parseArgv', () => {
  it('reads the options by attribute name, whole numbers as numbers, defaults for the rest', () => {
    expect(parseArgv(script(), []).opts).toEqual({ runs: 3 });
    expect(parseArgv(script(), ['--runs', '7', '--pad=0', '--name', 'x', '--dry-run'])).toEqual({
      opts: { runs: 7, pad: 0, name: 'x', dryRun: true },
      operands: [],
    });
  });

  it('refuses an unknown option in one line naming it (a suggestion on the same line)', () => {
    const err = thrown(() => parseArgv(script(), ['--bogus']));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.message).toBe("unknown option '--bogus'");
    expect(thrown(() => parseArgv(script(), ['--rnus', '2'])).message).toBe("unknown option '--rnus' (Did you mean --runs?)");
  });

  it.each([
    [['--runs', '0'], '--runs must be a whole number >= 1, not 0'],
    [['--runs', '2.5'], '--runs must be a whole number >= 1, not 2.5'],
    [['--runs', 'x'], '--runs must be a whole number >= 1, not x'],
    [['--runs', ''], '--runs must be a whole number >= 1, not '],
    [['--pad', '-1'], '--pad must be a whole number >= 0, not -1'],
    [['--runs'], "option '--runs <n>' argument missing"],
    [['extra'], "unexpected argument 'extra'"],
  ])('refuses %j in one line: %s', (argv, message) => {
    const err = thrown(() => parseArgv(script(), argv));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.message).toBe(message);
  });

  it('names the first operand beyond those the program takes', () => {
    const program = new Command('x').argument('<topic>');
    expect(parseArgv(program, ['t']).operands).toEqual(['t']);
    expect(thrown(() => parseArgv(new Command('x').argument('<topic>'), ['t', 'u', 'v'])).message).toBe("unexpected argument 'u'");
    expect(thrown(() => parseArgv(new Command('x').argument('<topic>'), [])).message).toBe("missing required argument 'topic'");
  });

  it("hands every refusal to the caller's `refuse`, which says it its own way", () => {
    const program = script();
    expect(thrown(() => parseArgv(program, ['--bogus'], refuseWithUsage(program))).message).toBe(
      "unknown option '--bogus'; usage: npm run some-script -- [--runs <n>] [--pad <n>] [--name <name>] [--dry-run]",
    );
    const err = thrown(() => parseArgv(script(), ['--runs', '0'], (reason) => new PrerequisiteError(`up: ${reason}`)));
    expect(err).toBeInstanceOf(PrerequisiteError);
    expect(err.message).toBe('up: --runs must be a whole number >= 1, not 0');
  });

  it.each([['--help'], ['-h'], ['--runs', '2', '--help'], ['--nope', '--help']])(
    'answers %j with the help (options, defaults), before any other check',
    (...argv) => {
      const err = thrown(() => parseArgv(script(), argv));
      expect(err).toBeInstanceOf(HelpRequestedError);
      const { help } = err as HelpRequestedError;
      expect(help).toMatch(/^Usage: npm run some-script -- \[options\]\n/);
      expect(help).toContain('does something');
      expect(help).toMatch(/--runs <n> +how many \(default: 3\)/);
      expect(help).toContain('--dry-run');
    },
  );

  it('leaves any other error alone', () => {
    const program = new Command('x').option('--f <v>', 'f', () => {
      throw new RangeError('a bug');
    });
    expect(thrown(() => parseArgv(program, ['--f', '1']))).toBeInstanceOf(RangeError);
  });
});

describe('usageLine', () => {
  it('says the operands, then each option, a mandatory one unbracketed', () => {
    const program = new Command('kafka-direct thing')
      .argument('<dir>')
      .argument('[more...]')
      .requiredOption('--stage <stage>', 's')
      .option('--force', 'f');
    expect(usageLine(program)).toBe('usage: kafka-direct thing <dir> [more...] --stage <stage> [--force]');
  });
});

describe('benchmarks (bench/cli.ts)', () => {
  const program = () => benchProgram('demo', 'a benchmark').addOption(wholeNumberOption('--runs <n>', 'runs', 1));

  it('take --keep (default false) beside their own options', () => {
    expect(benchArgs(program(), [])).toEqual({ keep: false, runs: 1 });
    expect(benchArgs(program(), ['--keep', '--runs', '4'])).toEqual({ keep: true, runs: 4 });
  });

  it('refuse a bad flag in one line, and answer --help with their usage', () => {
    expect(thrown(() => benchArgs(program(), ['--runs', 'none'])).message).toBe('--runs must be a whole number >= 1, not none');
    expect(thrown(() => benchArgs(program(), ['--kep'])).message).toBe("unknown option '--kep' (Did you mean --keep?)");
    expect((thrown(() => benchArgs(program(), ['--help'])) as HelpRequestedError).help).toMatch(
      /^Usage: npm run bench:demo -- \[options\]/,
    );
  });
});
