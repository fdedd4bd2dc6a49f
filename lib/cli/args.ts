/**
 * How every command line of the project is read: a commander program declares the options (the
 * library `kafka-direct` and `npm start` are built on), and `parseArgv` reads the arguments with it
 * strictly. The scripts, the benchmarks and the one-shot project commands (`init`, `deploy`,
 * `remove`, `local:*`) declare only their options and refuse the same way: a wrong argument is one
 * line naming it, `--help` is the program's help on stdout with exit code 0.
 */
import { Command, CommanderError, Option, type OptionValues } from 'commander';
import { AppError, ValidationError } from '../errors';

/**
 * `--help` was asked for: not a failure, but it ends the command the way one does (thrown from the
 * parser), and the command is done once `help` is printed (stdout, exit code 0).
 */
export class HelpRequestedError extends AppError {
  constructor(readonly help: string) {
    super('HELP_REQUESTED', '--help');
  }
}

/** What `parseArgv` read: the options by attribute name (`--run-ms` is `runMs`) and the operands. */
export type ParsedArgv<O extends OptionValues> = { opts: O; operands: string[] };

/**
 * Parses `argv` (the arguments alone) with a fresh `program` (commander keeps what it parsed). Throws
 * HelpRequestedError on `--help`, and `refuse(reason)` on an unknown option, a missing or bad value or an
 * operand too many, `reason` being one line that names the argument (default: a ValidationError).
 */
export function parseArgv<O extends OptionValues>(
  program: Command,
  argv: readonly string[],
  refuse: (reason: string) => Error = (reason) => new ValidationError(reason),
): ParsedArgv<O> {
  // The caller says what went wrong and where help goes: commander neither prints nor exits.
  program.exitOverride().configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  try {
    program.parse(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError && err.exitCode === 0) throw new HelpRequestedError(program.helpInformation());
    if (err instanceof CommanderError) throw refuse(reasonOf(program, err));
    // A value an option's parser refused (wholeNumberOption): its message names the option.
    if (err instanceof ValidationError) throw refuse(err.message);
    throw err;
  }
  return { opts: program.opts<O>(), operands: program.args };
}

/** commander's refusal on one line, without its `error: ` (the caller prefixes its own); an operand too many by name. */
function reasonOf(program: Command, err: CommanderError): string {
  // commander counts extra operands without naming one; the first beyond those declared is the one at fault.
  if (err.code === 'commander.excessArguments') return `unexpected argument '${program.args[program.registeredArguments.length]}'`;
  // A suggestion ("Did you mean --runs?") comes on a line of its own.
  return err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
}

/** `text` as a whole number >= `min`, else a ValidationError naming `flag`. */
export function wholeNumber(flag: string, text: string, min = 1): number {
  const n = text.trim() === '' ? NaN : Number(text);
  if (!Number.isInteger(n) || n < min) throw new ValidationError(`${flag} must be a whole number >= ${min}, not ${text}`);
  return n;
}

/** An option taking a whole number >= `min` (`--runs <n>`), read as a number; `fallback` is its default. */
export function wholeNumberOption(flags: string, description: string, fallback?: number, min = 1): Option {
  const option = new Option(flags, description);
  option.argParser((text: string) => wholeNumber(option.long ?? flags, text, min));
  return fallback === undefined ? option : option.default(fallback);
}

/** The program's usage on one line: `usage: <name> <arg> [--option <value>]...`, a mandatory option unbracketed. */
export function usageLine(program: Command): string {
  const args = program.registeredArguments.map((a) => {
    const name = `${a.name()}${a.variadic ? '...' : ''}`;
    return a.required ? `<${name}>` : `[${name}]`;
  });
  const options = program.options.filter((o) => !o.hidden).map((o) => (o.mandatory ? o.flags : `[${o.flags}]`));
  return ['usage:', program.name(), ...args, ...options].join(' ');
}

/** A refusal for `parseArgv` on one line that ends with the program's usage: `<reason>; usage: ...`. */
export function refuseWithUsage(program: Command): (reason: string) => ValidationError {
  return (reason) => new ValidationError(`${reason}; ${usageLine(program)}`);
}
