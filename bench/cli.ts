/**
 * What every benchmark's command line shares: its log lines on stderr (stdout's last line is the
 * result object tools read), its whole-number flags, and how a failed run ends.
 */
import { ValidationError } from '../lib/errors';

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

/**
 * Runs a benchmark's `main`; a failure goes to stderr and sets exit code 1: a bad flag as its one
 * line, anything else with its stack.
 */
export function runBench(name: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    const text = err instanceof ValidationError ? err.message : ((err as Error)?.stack ?? String(err));
    process.stderr.write(`[bench:${name}] failed: ${text}\n`);
    process.exitCode = 1;
  });
}
