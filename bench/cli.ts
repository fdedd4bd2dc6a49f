/**
 * What every benchmark's command line shares: its commander program (`npm run bench:<name> --`, with
 * `--keep`, read by lib/cli/args.ts), its log lines on stderr (stdout's last line is the result
 * object tools read), and how a failed, interrupted or `--help` run ends.
 */
import { Command, type OptionValues } from 'commander';
import { HelpRequestedError, parseArgv } from '../lib/cli/args';
import { ValidationError } from '../lib/errors';
import { cleanUpOnSignals, exitCleanups } from '../lib/local/exit-cleanup';

/** A logger writing `[bench:<name>] line` to stderr. */
export function benchLog(name: string): (line: string) => void {
  return (line) => {
    process.stderr.write(`[bench:${name}] ${line}\n`);
  };
}

const KEEP_HELP = 'leave the topics and tables the run created on a shared stack';

/** A benchmark's program, with `--keep`: the benchmark adds its own options (`wholeNumberOption` for counts). */
export function benchProgram(name: string, description: string): Command {
  return new Command(`npm run bench:${name} --`).description(description).option('--keep', KEEP_HELP, false);
}

/** The options of a benchmark's command line; `--help` and a bad flag end the run through `runBench`. */
export function benchArgs<O extends OptionValues>(program: Command, argv: readonly string[] = process.argv.slice(2)): O {
  return parseArgv<O>(program, argv).opts;
}

/**
 * Runs a benchmark's `main`; a failure goes to stderr and sets exit code 1: a bad flag as its one
 * line, anything else with its stack. `--help` prints the help on stdout. Ctrl-C or SIGTERM runs
 * the run's clean-up (`withStack`), then exits 130.
 */
export function runBench(name: string, main: () => Promise<void>): void {
  const signals = cleanUpOnSignals(exitCleanups, process, benchLog(name), (code) => process.exit(code));
  main().catch((err: unknown) => {
    // What an interrupted run throws while its clean-up runs is the interruption, not a failure.
    if (signals.interrupted()) return;
    if (err instanceof HelpRequestedError) {
      process.stdout.write(err.help);
      return;
    }
    const text = err instanceof ValidationError ? err.message : ((err as Error)?.stack ?? String(err));
    process.stderr.write(`[bench:${name}] failed: ${text}\n`);
    process.exitCode = 1;
  });
}
