/**
 * What every benchmark's command line shares: its log lines on stderr (stdout's last line is the
 * result object tools read), its whole-number flags and `--keep`, and how a failed or interrupted
 * run ends.
 */
import { ValidationError } from '../lib/errors';
import { cleanUpOnSignals, exitCleanups } from '../lib/local/exit-cleanup';

/** A logger writing `[bench:<name>] line` to stderr. */
export function benchLog(name: string): (line: string) => void {
  return (line) => {
    process.stderr.write(`[bench:${name}] ${line}\n`);
  };
}

/**
 * The flags `names` of parseArgs's `values` as whole numbers >= 1, checked in the order given;
 * throws a one-line error naming the first flag that is not one.
 */
export function wholeNumberFlags<K extends string>(
  values: Partial<Record<K, string | boolean | undefined>>,
  names: readonly K[],
): Record<K, number> {
  const out = {} as Record<K, number>;
  for (const name of names) {
    const v = Number(values[name]);
    if (!Number.isInteger(v) || v < 1) throw new ValidationError(`--${name} must be a whole number >= 1, not ${values[name]}`);
    out[name] = v;
  }
  return out;
}

/** `--keep`, for parseArgs: leave the topics and tables the run created on a shared stack. */
export const KEEP_OPTION = { keep: { type: 'boolean', default: false } } as const;

/**
 * Runs a benchmark's `main`; a failure goes to stderr and sets exit code 1: a bad flag as its one
 * line, anything else with its stack. Ctrl-C or SIGTERM runs the run's clean-up (`withStack`), then
 * exits 130.
 */
export function runBench(name: string, main: () => Promise<void>): void {
  const signals = cleanUpOnSignals(exitCleanups, process, benchLog(name), (code) => process.exit(code));
  main().catch((err: unknown) => {
    // What an interrupted run throws while its clean-up runs is the interruption, not a failure.
    if (signals.interrupted()) return;
    const text = err instanceof ValidationError ? err.message : ((err as Error)?.stack ?? String(err));
    process.stderr.write(`[bench:${name}] failed: ${text}\n`);
    process.exitCode = 1;
  });
}
